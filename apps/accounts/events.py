"""Events about a user, in the audit trail of each organization they belong to.

A sign-in, a password change or an API key is about a person, not about one organization:
the event goes into the chain of every organization the user is a member of (their
administrators and reviewers see it there), or the platform's own chain when there is none
or the user is unknown. Written through ``apps.core.recording`` (the audit trail is a higher
layer, which provides the writer).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from apps.accounts.lockout import client_address
from apps.accounts.models import Organization
from apps.core.recording import audit_record


def where_from(request: HttpRequest | None) -> dict[str, str]:
    if request is None:
        return {}
    return {
        "ip": client_address(request),
        "path": request.path[:200],
        "user_agent": request.META.get("HTTP_USER_AGENT", "")[:200],
    }


def _organizations(user: Any) -> list[Organization | None]:
    if user is None:
        return [None]
    organizations: list[Organization | None] = list(
        Organization.objects.filter(memberships__user=user).order_by("slug")
    )
    return organizations or [None]


def record_for_user(action: str, user: Any, actor: Any, details: dict[str, Any]) -> None:
    """One event about ``user`` in the chain of each organization they belong to (the
    platform's if none, or if the user is unknown)."""
    for organization in _organizations(user):
        audit_record(
            organization=organization,
            actor=actor,
            action=action,
            details=details,
            object_type="auth.user" if user is not None else "",
            object_id=str(user.pk) if user is not None else "",
        )
