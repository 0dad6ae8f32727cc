from django.contrib import admin

from apps.accounts.audited_admin import ReadOnlyAdmin
from apps.classification.models import ClassificationChange, Variable


@admin.register(Variable)
class VariableAdmin(ReadOnlyAdmin):
    """Roles change only in Step 2, with a reason, recorded with who and when."""

    list_display = ("name", "dataset", "suggested_role", "role", "confirmed_by")
    list_filter = ("role", "suggested_role")


@admin.register(ClassificationChange)
class ClassificationChangeAdmin(ReadOnlyAdmin):
    """The history of roles is append-only."""

    list_display = ("variable", "from_role", "to_role", "changed_by", "created_at")
