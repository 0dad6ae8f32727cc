"""Writes for organizations, memberships, users and their API keys."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.events import record_for_user
from apps.accounts.models import ApiToken, Membership, Organization, Role
from apps.accounts.usernames import character_problem, normalized
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


def password_check(*, password: str, user: Any) -> None:
    """The site's password validators (AUTH_PASSWORD_VALIDATORS), as an ApplicationError."""
    try:
        validate_password(password, user=user)
    except ValidationError as error:
        raise ApplicationError(" ".join(error.messages), {"password": error.messages}) from None


def user_create(*, username: str, password: str, email: str = "", **fields: object) -> User:
    user_model = get_user_model()
    problem = character_problem(username)  # before any lookup: a NUL is no query parameter
    if problem:
        raise ApplicationError(
            f"The user name {normalized(username)!a} is refused: {problem}.",
            {"field": "username"},
        )
    username = normalized(username)
    if user_model.objects.filter(username=username).exists():
        raise ApplicationError(f"The user name '{username}' is taken.")
    password_check(password=password, user=user_model(username=username, email=email, **fields))
    return user_model.objects.create_user(
        username=username, password=password, email=email, **fields
    )


@transaction.atomic
def user_set_password(*, user: Any, password: str, actor: Any = None) -> None:
    """A new password for ``user``, if the validators accept it; audited, never its value."""
    password_check(password=password, user=user)
    user.set_password(password)
    user.save(update_fields=["password"])
    record_for_user("auth.password_change", user, actor or user, {"password": "(secret changed)"})


API_KEY_PREFIX = "deid_"


def api_key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@transaction.atomic
def api_token_create(*, user: Any, name: str, actor: Any = None) -> tuple[ApiToken, str]:
    """A new API key for ``user``; returns the row and the key itself, which is never stored
    and cannot be shown again."""
    name = name.strip()
    if not name:
        raise ApplicationError("Name the key after what will use it, e.g. 'nightly export'.")
    if len(name) > 100:
        raise ApplicationError("A key's name has at most 100 characters.")
    key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[: len(API_KEY_PREFIX) + 6], digest=api_key_digest(key)
    )
    record_for_user(
        "auth.token_create",
        user,
        actor or user,
        {"token": str(token.pk), "name": name, "prefix": token.prefix},
    )
    return token, key


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: Any = None) -> bool:
    """Revoke a key at once; False if it was revoked already."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if not revoked:
        return False
    token.refresh_from_db()
    record_for_user(
        "auth.token_revoke",
        token.user,
        actor or token.user,
        {"token": str(token.pk), "name": token.name, "prefix": token.prefix},
    )
    return True
