"""The administration site changes nothing unrecorded.

``AuditedAdmin`` records every add, change and delete made through the Django admin in the
audit trail of the object's organization — what changed, from what to what — except the
values of secret fields, which the admin never shows either. Models whose changes carry
rules (roles with reasons, decided assessments, jobs) are read-only there instead.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.forms import BaseFormSet, ModelForm
from django.http import HttpRequest

from apps.accounts.models import Organization
from apps.core.recording import audit_record

SECRET_FIELDS = {
    "password",
    "signing_passphrase_sealed",
    "signing_certificate_path",
    "secrets_wrapped_key",
}


def _organization_of(obj: models.Model) -> Any:
    if isinstance(obj, Organization):
        return obj
    return getattr(obj, "organization", None)


def _shown(value: Any) -> Any:
    if isinstance(value, models.Model):
        return str(value.pk)
    if isinstance(value, QuerySet):
        return [str(v.pk) for v in value]
    return value


def _changes(form: ModelForm[Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for name in form.changed_data:
        if name in SECRET_FIELDS:
            changes[name] = "(secret changed)"
            continue
        changes[name] = {
            "from": _shown(form.initial.get(name)),
            "to": _shown(form.cleaned_data.get(name)),
        }
    return changes


def audit_admin(
    request: HttpRequest,
    obj: models.Model,
    action: str,
    changes: dict[str, Any] | None = None,
    *,
    organization: Any = None,
) -> None:
    audit_record(
        organization=organization if organization is not None else _organization_of(obj),
        actor=request.user,
        action=action,
        obj=obj,
        details={"model": obj._meta.label_lower, "changes": changes or {}, "via": "admin site"},
    )


class AuditedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        changes = _changes(form)
        super().save_model(request, obj, form, change)
        audit_admin(request, obj, "admin.change" if change else "admin.add", changes)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        organization = _organization_of(obj)
        audit_admin(request, obj, "admin.delete", organization=organization)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            audit_admin(request, obj, "admin.delete")
        super().delete_queryset(request, queryset)

    def save_formset(
        self, request: HttpRequest, form: Any, formset: BaseFormSet[Any], change: bool
    ) -> None:
        """Inline rows (an organization's memberships): each add, change and delete."""
        deleted = list(getattr(formset, "deleted_forms", []))
        pending: list[tuple[Any, str, dict[str, Any]]] = []
        for inline in formset.forms:
            if inline in deleted:
                if not inline.instance._state.adding:
                    pending.append((inline.instance, "admin.delete", {}))
            elif inline.has_changed():
                action = "admin.add" if inline.instance._state.adding else "admin.change"
                pending.append((inline.instance, action, _changes(inline)))
        organization = _organization_of(form.instance)
        # Deletions are recorded first, while the rows still have their ids; the admin's
        # transaction rolls the events back with the change if the save fails.
        for instance, action, changes in pending:
            if action == "admin.delete":
                audit_admin(request, instance, action, changes, organization=organization)
        super().save_formset(request, form, formset, change)
        for instance, action, changes in pending:
            if action != "admin.delete":
                audit_admin(request, instance, action, changes, organization=organization)


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    """Listed for reading; changed only through the product's own pages and services."""

    actions = None

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
