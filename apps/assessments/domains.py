"""Named pseudonymisation domains (EDPB Guidelines 01/2025 on pseudonymisation, §3).

A *pseudonymisation domain* is the circle within which pseudonyms can be attributed to one
another or back to a person. deidweb's default keeps every release in a domain of its
own: each release's keyed pseudonyms (HMAC-SHA-256) and encrypted identifiers use keys
drawn fresh for that release, so two releases cannot be linked through them. An
organization administrator can define a *named* domain — e.g. one research programme
whose successive extracts must be linked by the recipient — and a release that chooses it
in Step 1 uses the domain's one key instead: the same identifier value then gets the same
pseudonym in every release of that domain, and in no release outside it.

The domain key is sealed like every other secret (``apps.core.crypto``: its own data key,
wrapped by the master key, bound to the domain's id; ``rotate_master_key`` re-wraps it).
It is never shown: like a release's keys, it reaches an administrator only inside the
sealed keys file of a release that used it.

:func:`release_pseudonym_keys` is the one place a release's keys are chosen: Step 7's
apply and the longitudinal release (person-key pseudonyms) both call it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment, PseudonymDomain
from apps.assessments.services import _save, assessment_set_release
from apps.audit.services import audit_record
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.engine.masking import KEY_BYTES, new_key

MAX_NAME = 200
MAX_DESCRIPTION = 500
#: Masking methods whose output is computed under a key (the domain's key when chosen).
KEYED_METHODS = ("hmac", "encrypt")


def domain_key_purpose(domain_id: object) -> str:
    """What a domain's sealed key is bound to: it opens for this domain only."""
    return f"pseudonymisation domain key:{domain_id}"


# --------------------------------------------------------------------------- domains


@transaction.atomic
def pseudonym_domain_create(
    *, organization: Organization, user: User, name: str, description: str = ""
) -> PseudonymDomain:
    """An administrator defines a named domain; its key is drawn now, sealed, and never
    changes (changing it would break the linkage the domain exists for)."""
    membership = membership_get(user=user, organization=organization)
    if not membership.is_admin:
        raise ApplicationError(
            "Only an administrator of the organization can define a pseudonymisation domain: "
            "its releases can be linked to one another.",
            status=403,
        )
    name = name.strip()
    description = description.strip()
    if not name:
        raise ApplicationError("Name the pseudonymisation domain.", {"field": "name"})
    if len(name) > MAX_NAME:
        raise ApplicationError(
            f"A domain's name is at most {MAX_NAME} characters.", {"field": "name"}
        )
    if len(description) > MAX_DESCRIPTION:
        raise ApplicationError(
            f"Keep the description to {MAX_DESCRIPTION} characters.", {"field": "description"}
        )
    if PseudonymDomain.objects.filter(organization=organization, name__iexact=name).exists():
        raise ApplicationError(
            f"This organization already has a pseudonymisation domain named '{name}'.",
            {"field": "name"},
            status=409,
        )
    domain = PseudonymDomain(
        organization=organization, name=name, description=description, created_by=user
    )
    domain.key_sealed = crypto.seal_text(
        base64.b64encode(new_key()).decode("ascii"), purpose=domain_key_purpose(domain.id)
    )
    try:
        with transaction.atomic():
            domain.save()
    except IntegrityError:
        raise ApplicationError(
            f"This organization already has a pseudonymisation domain named '{name}'.",
            {"field": "name"},
            status=409,
        ) from None
    audit_record(
        organization=organization,
        actor=user,
        action="pseudonym_domain.create",
        obj=domain,
        details={"name": name, "description": description},
    )
    return domain


def pseudonym_domains(organization: Organization) -> list[PseudonymDomain]:
    return list(PseudonymDomain.objects.filter(organization=organization).order_by("name"))


def pseudonym_domain_get(*, organization: Organization, domain_id: object) -> PseudonymDomain:
    """A domain of ``organization``: another organization's domain is refused as if it did
    not exist (its name is not confirmed)."""
    try:
        domain = PseudonymDomain.objects.filter(id=str(domain_id)).first()
    except (ValueError, ValidationError):
        domain = None
    if domain is None or domain.organization_id != organization.id:
        raise ApplicationError(
            "No such pseudonymisation domain in this organization: a release can only use a "
            "domain its own organization defined.",
            {"field": "pseudonym_domain"},
            status=404,
        )
    return domain


def _domain_key(domain: PseudonymDomain) -> bytes:
    try:
        key = base64.b64decode(
            crypto.open_text(domain.key_sealed, purpose=domain_key_purpose(domain.id))
        )
    except crypto.SecretUnreadable as exc:
        raise ApplicationError(
            f"The key of pseudonymisation domain '{domain.name}' cannot be opened ({exc}): "
            "was it sealed with a master key this server does not have?"
        ) from None
    if len(key) != KEY_BYTES:
        raise ApplicationError(f"The key of pseudonymisation domain '{domain.name}' is damaged.")
    return key


# --------------------------------------------------------------------------- Step 1


@transaction.atomic
def assessment_set_pseudonym_domain(
    *, assessment: Assessment, user: User | None = None, domain_id: object | None
) -> list[str]:
    """Step 1: the release's pseudonymisation domain (None: its own, with new keys).

    The domain must belong to the assessment's organization. A change makes an applied
    release stale: its pseudonyms were made under the other key."""
    assessment_editable(assessment)
    domain = (
        None
        if domain_id in (None, "")
        else pseudonym_domain_get(organization=assessment.organization, domain_id=domain_id)
    )
    if (domain.id if domain else None) == assessment.pseudonym_domain_id:
        return []
    assessment.pseudonym_domain = domain
    return _save(
        assessment,
        "release",
        ["pseudonym_domain"],
        user,
        extra={
            "pseudonym_domain": None
            if domain is None
            else {"id": str(domain.id), "name": domain.name}
        },
    )


@transaction.atomic
def release_and_domain_save(
    *, assessment: Assessment, user: User | None, domain_id: object | None, **release: Any
) -> list[str]:
    """Step 1's page: the release fields and the domain, saved together or not at all."""
    stale = assessment_set_release(assessment=assessment, user=user, **release)
    more = assessment_set_pseudonym_domain(assessment=assessment, user=user, domain_id=domain_id)
    return [*stale, *(s for s in more if s not in stale)]


def domain_summary(assessment: Any) -> dict[str, Any] | None:
    """What the threat model, the decision and the report say of the domain (no key)."""
    domain = getattr(assessment, "pseudonym_domain", None)
    if domain is None:
        return None
    return {"id": str(domain.id), "name": domain.name, "description": domain.description}


# --------------------------------------------------------------------------- the keys


def release_pseudonym_keys(assessment: Assessment, columns: Iterable[str]) -> dict[str, bytes]:
    """The key of each keyed-pseudonym (or encrypted) column of a release of
    ``assessment``: the named domain's one key for every column when Step 1 chose a
    domain, else a new random key per column (unlinkable to any other release).

    The domain must be the assessment's organization's (checked again here, the one
    place every release's keys come from)."""
    columns = list(dict.fromkeys(columns))
    domain_id = assessment.pseudonym_domain_id
    if domain_id is None:
        return {column: new_key() for column in columns}
    domain = pseudonym_domain_get(organization=assessment.organization, domain_id=domain_id)
    key = _domain_key(domain)
    return dict.fromkeys(columns, key)
