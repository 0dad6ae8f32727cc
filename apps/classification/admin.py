from django.contrib import admin
from django.http import HttpRequest

from apps.classification.models import ClassificationChange, Variable


@admin.register(Variable)
class VariableAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    list_display = ("name", "dataset", "suggested_role", "role", "confirmed_by")
    list_filter = ("role", "suggested_role")


@admin.register(ClassificationChange)
class ClassificationChangeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    list_display = ("variable", "from_role", "to_role", "changed_by", "created_at")

    def has_change_permission(
        self, request: HttpRequest, obj: ClassificationChange | None = None
    ) -> bool:
        return False  # the history is append-only

    def has_delete_permission(
        self, request: HttpRequest, obj: ClassificationChange | None = None
    ) -> bool:
        return False
