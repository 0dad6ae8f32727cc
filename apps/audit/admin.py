from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    """Read-only: the trail is written only by apps.audit.services.audit_record()."""

    list_display = ("sequence", "organization", "created_at", "actor_name", "action", "object_repr")
    list_filter = ("action", "organization")
    search_fields = ("action", "actor_name", "object_id", "object_repr")
    ordering = ("organization", "-sequence")
    list_select_related = ("organization",)
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
