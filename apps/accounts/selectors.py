"""Reads that decide who sees what. Anything outside a user's organizations is a 404."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from apps.accounts.models import ApiToken, Membership, Organization
from apps.accounts.services import api_key_digest


def organizations_for(*, user: User | AnonymousUser) -> QuerySet[Organization]:
    if not user.is_authenticated:
        return Organization.objects.none()
    return Organization.objects.filter(memberships__user=user).order_by("name")


def membership_get(
    *,
    user: User | AnonymousUser,
    organization: Organization | None = None,
    slug: str | None = None,
) -> Membership:
    """The user's membership in an organization, or 404 — never 403, which would confirm
    that the organization exists to someone outside it."""
    if not user.is_authenticated:
        raise Http404("No such organization.")
    memberships = Membership.objects.select_related("organization").filter(user=user)
    if organization is not None:
        memberships = memberships.filter(organization=organization)
    elif slug is not None:
        memberships = memberships.filter(organization__slug=slug)
    else:
        raise ValueError("membership_get needs an organization or a slug")
    membership = memberships.first()
    if membership is None:
        raise Http404("No such organization.")
    return membership


def api_tokens_of(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")


def api_token_for_key(*, key: str) -> ApiToken | None:
    """The active key ``key`` names, of an active user, or None."""
    return (
        ApiToken.objects.select_related("user")
        .filter(digest=api_key_digest(key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
