from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from apps.accounts.audited_admin import AuditedAdmin, _changes, audit_admin
from apps.accounts.models import Membership, Organization


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]  # not generic at runtime
    model = Membership
    extra = 0


@admin.register(Organization)
class OrganizationAdmin(AuditedAdmin):
    """Settings and memberships, every change audited; the signing identity is never shown
    (it is created and kept by deidweb, its passphrase apart from the certificate)."""

    list_display = ("name", "slug", "keep_original_uploads", "require_two_approvals")
    prepopulated_fields = {"slug": ("name",)}
    exclude = (
        "signing_certificate_path",
        "signing_passphrase_sealed",
        "signing_previous_certificates",
    )
    inlines = [MembershipInline]


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(AuditedAdmin, UserAdmin):  # type: ignore[type-arg]
    """Django's user admin, with every change (roles of staff, passwords changed — never
    their values) in the audit trail of the user's organizations."""

    def _audit(self, request: HttpRequest, obj: Any, action: str, changes: dict[str, Any]) -> None:
        organizations: list[Organization | None] = [
            *Organization.objects.filter(memberships__user=obj)
        ] or [None]
        for organization in organizations:
            audit_admin(request, obj, action, changes, organization=organization)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        changes = _changes(form)
        super(AuditedAdmin, self).save_model(request, obj, form, change)
        self._audit(request, obj, "admin.change" if change else "admin.add", changes)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        # The password form saves the user itself, without save_model: catch it here.
        if "password" in str(message).lower() and request.path.rstrip("/").endswith("password"):
            self._audit(request, obj, "admin.change", {"password": "(secret changed)"})
        return super().log_change(request, obj, message)
