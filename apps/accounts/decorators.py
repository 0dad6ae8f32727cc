"""Page access by organization: the URL names the organization; non-members get a 404."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase

from apps.accounts.models import Membership
from apps.accounts.selectors import membership_get

if TYPE_CHECKING:
    from rest_framework.request import Request


class OrgRequest(HttpRequest):
    """A request that went through ``org_view``: for typing only, never instantiated."""

    membership: Membership


def membership_of(request: HttpRequest) -> Membership:
    """The membership ``org_view`` resolved for this request."""
    return cast(OrgRequest, request).membership


def user_of(request: HttpRequest | Request) -> User:
    """The signed-in user, for views behind ``login_required`` / ``org_view`` or DRF's
    ``IsAuthenticated`` (the default permission), where ``request.user`` cannot be anonymous."""
    return cast(User, request.user)


View = Callable[..., HttpResponseBase]


def org_view(*, edit: bool = False, review: bool = False) -> Callable[[View], View]:
    """Resolve ``org`` from the URL into ``request.membership``.

    A member without the needed role gets 403 (they know the organization exists); anyone
    else gets 404.
    """

    def decorator(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, org: str, *args: Any, **kwargs: Any) -> HttpResponseBase:
            membership = membership_get(user=request.user, slug=org)
            if edit and not membership.can_edit:
                raise PermissionDenied("Only analysts and administrators can do this.")
            if review and not membership.can_review:
                raise PermissionDenied("Only reviewers and administrators can do this.")
            cast(OrgRequest, request).membership = membership
            return view(request, membership.organization, *args, **kwargs)

        return wrapped

    return decorator
