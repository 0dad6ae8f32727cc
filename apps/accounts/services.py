"""Writes for organizations and memberships."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from apps.accounts.models import Membership, Organization, Role
from apps.core.errors import ApplicationError


@transaction.atomic
def organization_create(*, name: str, slug: str | None = None, **options: object) -> Organization:
    slug = slug or slugify(name)[:60]
    if not slug:
        raise ApplicationError("An organization needs a name made of letters or digits.")
    if Organization.objects.filter(slug=slug).exists():
        raise ApplicationError(f"An organization with the short name '{slug}' already exists.")
    return Organization.objects.create(name=name, slug=slug, **options)


def membership_set(*, organization: Organization, user: User, role: str) -> Membership:
    if role not in Role.values:
        raise ApplicationError(f"Unknown role '{role}'.", {"roles": list(Role.values)})
    membership, _ = Membership.objects.update_or_create(
        organization=organization, user=user, defaults={"role": role}
    )
    return membership


def user_create(*, username: str, password: str, email: str = "", **fields: object) -> User:
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ApplicationError(f"The user name '{username}' is taken.")
    return user_model.objects.create_user(
        username=username, password=password, email=email, **fields
    )
