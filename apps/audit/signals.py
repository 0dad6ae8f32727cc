"""Sign-ins, failed sign-ins and sign-outs, in the audit trail.

Lockouts (django-axes) too, once when one starts. Recorded in the chain of every organization the user belongs to (their administrators and
reviewers see them there); a failed sign-in with a user name that matches no one goes to the
platform's own chain. Passwords are never recorded.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from apps.accounts.events import record_for_user, where_from


def on_login(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    record_for_user("auth.login", user, user, where_from(request))


def on_logout(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if user is not None:
        record_for_user("auth.logout", user, user, where_from(request))


def on_login_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    username = str(credentials.get("username", ""))[:150]
    user = get_user_model().objects.filter(username=username).first() if username else None
    record_for_user("auth.login_failed", user, None, {"username": username, **where_from(request)})


def on_locked_out(
    sender: Any, request: Any, username: str | None, ip_address: str | None, **kwargs: Any
) -> None:
    """django-axes signals a lockout on the failure that reaches the limit and on every failure
    after it (each restarts the cool-off); only the first is a new event — the others are in
    the trail already as failed sign-ins."""
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is not None and failures != settings.AXES_FAILURE_LIMIT:
        return
    name = str(username or "")[:150]
    user = get_user_model().objects.filter(username=name).first() if name else None
    details = {
        "username": name,
        **where_from(request),
        "failures": settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
    }
    if ip_address:
        details["ip"] = ip_address
    record_for_user("auth.lockout", user, None, details)
