"""Page access by organization: the URL names the organization; non-members get a 404."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from apps.accounts.selectors import membership_get


def org_view(*, edit: bool = False, review: bool = False) -> Callable[..., Any]:
    """Resolve ``org`` from the URL into ``request.membership``.

    A member without the needed role gets 403 (they know the organization exists); anyone
    else gets 404.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, org: str, *args: Any, **kwargs: Any) -> HttpResponse:
            membership = membership_get(user=request.user, slug=org)
            if edit and not membership.can_edit:
                raise PermissionDenied("Only analysts and administrators can do this.")
            if review and not membership.can_review:
                raise PermissionDenied("Only reviewers and administrators can do this.")
            request.membership = membership  # type: ignore[attr-defined]
            return view(request, membership.organization, *args, **kwargs)

        return wrapped

    return decorator
