"""Recording audit events and verifying the chains they form.

Call ``audit_record`` from the service that does the action, inside its transaction: if the
action rolls back, so does its event, and an event is never recorded for something that did
not happen. Actions are ``noun.verb`` codes (``dataset.upload``, ``review.decision``,
``download.release`` …; see ``models.KNOWN_ACTIONS``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import math
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, models, transaction
from django.db.models import Q

from apps.accounts.models import Organization
from apps.audit import anchors
from apps.audit.models import (
    GENESIS_HASH,
    PLATFORM_CHAIN,
    AuditEvent,
    AuditHead,
    canonical_dumps,
    chain_of,
)
from apps.core.secret_strength import KNOWN_WEAK_SECRETS, secret_weakness

ACTION_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")


def json_safe(value: Any) -> Any:
    """A value that survives a round trip through PostgreSQL ``jsonb`` unchanged.

    UUIDs, Decimals, dates and times become strings (ISO 8601), model instances their
    primary key, tuples and sets lists. Floats stay numbers only when their JSON text reads
    back as the same float from ``jsonb`` (finite, no exponent, not -0.0); others become
    strings — otherwise the stored event would no longer match its hash.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):
        return json_safe(value.value)
    if isinstance(value, str):
        return str(value).replace("\x00", "")  # jsonb refuses NUL characters
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value) or "e" in repr(value) or "E" in repr(value):
            return repr(value)
        return 0.0 if value == 0 else float(value)
    if isinstance(value, Decimal | uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return json_safe(value.total_seconds())
    if isinstance(value, models.Model):
        return str(value.pk)
    if isinstance(value, dict):
        return {str(json_safe(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((json_safe(v) for v in value), key=canonical_dumps)
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return str(value)


def audit_key() -> bytes:
    """The server secret that seals the chain (``DEIDWEB_AUDIT_KEY``; by default derived from
    ``SECRET_KEY``). Changing it makes every earlier seal fail verification."""
    from django.conf import settings

    return str(settings.DEIDWEB_AUDIT_KEY).encode("utf-8")


def event_seal(event_hash: str) -> str:
    return hmac.new(audit_key(), f"event:{event_hash}".encode(), hashlib.sha256).hexdigest()


def head_seal(chain: str, sequence: int, head_hash: str) -> str:
    message = f"head:{chain}:{sequence}:{head_hash}".encode()
    return hmac.new(audit_key(), message, hashlib.sha256).hexdigest()


def _locked_head(organization: Organization | None) -> AuditHead:
    """The chain's head row, locked until the surrounding transaction ends (it serializes
    appends). A chain without a head yet (its first event) gets one from its newest event."""
    chain = chain_of(organization.pk if organization else None)
    head = AuditHead.objects.select_for_update().filter(chain=chain).first()
    if head is not None:
        return head
    last = (
        AuditEvent.objects.filter(organization=organization)
        .order_by("-sequence")
        .values("sequence", "hash")
        .first()
    )
    try:
        with transaction.atomic():
            AuditHead.objects.create(
                chain=chain,
                organization=organization,
                sequence=last["sequence"] if last else 0,
                hash=last["hash"] if last else GENESIS_HASH,
            )
    except IntegrityError:  # created by a concurrent append: take its lock instead
        pass
    return AuditHead.objects.select_for_update().get(chain=chain)


def audit_record(
    *,
    organization: Organization | None,
    actor: User | AnonymousUser | None,
    action: str,
    obj: models.Model | None = None,
    details: dict[str, Any] | None = None,
    object_type: str = "",
    object_id: str = "",
) -> AuditEvent:
    """Append one event to the organization's chain (the platform's when ``organization``
    is None) and return it.

    ``obj`` fills ``object_type`` (``app_label.model``), ``object_id`` (its primary key) and
    ``object_repr`` (``str(obj)``); pass ``object_type``/``object_id`` instead for something
    that is not a model instance (they win over ``obj`` when both are given). ``actor`` is
    ``None`` for the system (a task with no user).

    Appends to one chain are serialized by locking its head row, so sequences stay
    contiguous under concurrency; the lock is held until the surrounding transaction ends.
    The new event chains onto the head, not onto whatever the table ends with: if newest
    events were deleted, the gap shows.
    """
    if not ACTION_RE.fullmatch(action) or len(action) > 64:
        raise ValueError(
            f"Audit actions are dotted lowercase codes like 'dataset.upload': {action!r}"
        )
    if details is not None and not isinstance(details, dict):
        raise TypeError("Audit details must be a dict.")
    object_repr = ""
    if obj is not None:
        obj_org = getattr(obj, "organization_id", None)
        if obj_org is not None and organization is not None and obj_org != organization.pk:
            raise ValueError("The audited object belongs to another organization.")
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or str(obj.pk)
        object_repr = str(obj)[:200]
    user = actor if actor is not None and actor.is_authenticated else None
    # Normalize through JSON so the event hashed here is the event read back later.
    safe_details = json.loads(canonical_dumps(json_safe(details or {})))

    with transaction.atomic():
        head = _locked_head(organization)
        event = AuditEvent(
            organization=organization,
            sequence=head.sequence + 1,
            actor=user,
            actor_name=user.get_username()[:150] if user else "",
            action=action,
            object_type=object_type[:100],
            object_id=str(object_id)[:64],
            object_repr=object_repr,
            details=safe_details,
            prev_hash=head.hash,
        )
        event.hash = event.compute_hash()
        event.seal = event_seal(event.hash)
        event.save(force_insert=True)
        head.sequence, head.hash = event.sequence, event.hash
        head.seal = head_seal(head.chain, head.sequence, head.hash)
        head.save(update_fields=["sequence", "hash", "seal", "updated_at"])
        if action in anchors.ANCHORED_ACTIONS:
            # Outside the database too, once it is committed: a restored older copy of the
            # database cannot take this event back unseen (apps.audit.anchors).
            chain, sequence, anchored_hash = head.chain, event.sequence, event.hash
            slug = organization.slug if organization else PLATFORM_CHAIN
            transaction.on_commit(
                lambda: anchors.anchor_write(
                    chain=chain,
                    organization=slug,
                    sequence=sequence,
                    head_hash=anchored_hash,
                    action=action,
                )
            )
    return event


# Other apps register where the chain's head was recorded outside the trail (a decision's
# signed report): ``provider(organization) -> [(label, sequence, hash), ...]``.
ANCHOR_PROVIDERS: list[Callable[[Organization | None], Iterable[tuple[str, int, str]]]] = []


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int  # events
    organizations: int
    problems: list[str]
    # Each chain's last event as found: (organization or None, sequence, hash).
    heads: list[tuple[Organization | None, int, str]] = field(default_factory=list)

    @property
    def summary(self) -> str:
        if self.ok:
            return f"OK: {self.checked} events in {self.organizations} organizations, chain intact"
        return f"{len(self.problems)} problems in {self.checked} events"


@dataclass(frozen=True)
class Expected:
    """A chain head known from outside the database (a printed report, an earlier check):
    the organization's slug ("platform" for the platform's chain), the event's sequence and
    its SHA-256 (at least its first 12 hex digits, as reports print it)."""

    chain: str
    sequence: int
    hash: str

    @classmethod
    def parse(cls, text: str) -> Expected:
        parts = text.strip().rstrip("…").split(":")
        if (
            len(parts) != 3
            or not parts[1].lstrip("#").isdigit()
            or not re.fullmatch(r"[0-9a-f]{12,64}", parts[2].lower())
        ):
            raise ValueError(
                f"{text!r} is not SLUG:SEQUENCE:HASH (e.g. custodian:412:9f86d081884c, the "
                "hash at least 12 hex digits)"
            )
        return cls(parts[0], int(parts[1].lstrip("#")), parts[2].lower())


def _verify_chain(
    organization: Organization | None, expected: Iterable[Expected] = ()
) -> tuple[int, list[str], tuple[int, str]]:
    """One chain: links, hashes and seals of every event, then its sealed head and the
    anchors recorded outside the trail."""
    name = organization.slug if organization is not None else PLATFORM_CHAIN
    chain = chain_of(organization.pk if organization else None)
    problems: list[str] = []
    checked = 0
    expected_sequence, prev_hash = 1, GENESIS_HASH
    hashes: dict[int, str] = {}
    events = AuditEvent.objects.filter(organization=organization).order_by("sequence")
    last_sequence, last_hash = 0, GENESIS_HASH
    for event in events.iterator(chunk_size=2000):
        checked += 1
        where = f"{name} #{event.sequence}"
        if event.sequence != expected_sequence:
            if event.sequence > expected_sequence:
                missing = (
                    f"#{expected_sequence}"
                    if event.sequence == expected_sequence + 1
                    else f"#{expected_sequence}–#{event.sequence - 1}"
                )
                problems.append(f"{where}: sequence gap, {missing} missing (deleted)")
            else:
                problems.append(f"{where}: sequence out of order, expected #{expected_sequence}")
        if event.prev_hash != prev_hash:
            problems.append(
                f"{where}: prev_hash mismatch, the event before it is not the one it was "
                "chained to (deleted or reordered)"
            )
        if event.compute_hash() != event.hash:
            problems.append(f"{where}: hash mismatch, the event was edited after recording")
        elif not event.seal:
            problems.append(f"{where}: no seal, the event was not recorded by deidweb")
        elif not hmac.compare_digest(event.seal, event_seal(event.hash)):
            problems.append(
                f"{where}: seal mismatch, the event was re-written and its hash re-computed "
                "(or the server key changed)"
            )
        hashes[event.sequence] = event.hash
        expected_sequence, prev_hash = event.sequence + 1, event.hash
        last_sequence, last_hash = event.sequence, event.hash
    head = AuditHead.objects.filter(chain=chain).first()
    if head is None:
        if checked:
            problems.append(f"{name}: the chain's head record is missing (deleted)")
    else:
        if not hmac.compare_digest(head.seal, head_seal(chain, head.sequence, head.hash)):
            problems.append(f"{name}: the chain's head record was altered (seal mismatch)")
        if head.sequence != last_sequence or head.hash != last_hash:
            if head.sequence > last_sequence:
                problems.append(
                    f"{name}: the trail ends at #{last_sequence} but its head says "
                    f"#{head.sequence}: the newest events were deleted"
                )
            else:
                problems.append(
                    f"{name}: the trail ends at #{last_sequence} ({last_hash[:12]}…) but its "
                    f"head says #{head.sequence} ({head.hash[:12]}…): events were added or "
                    "re-written outside deidweb"
                )
    given = [
        ("the head given with --expect", e.sequence, e.hash)
        for e in expected
        if e.chain == (organization.slug if organization is not None else PLATFORM_CHAIN)
    ]
    recorded = [a for provider in ANCHOR_PROVIDERS for a in provider(organization)]
    for label, sequence, anchored in [*recorded, *given]:
        actual = hashes.get(sequence)
        # A printed head gives the first hex digits of the digest; a stored one all 64.
        if len(anchored) < 12 or actual is None or not actual.startswith(anchored):
            state = "is missing" if actual is None else "differs"
            problems.append(
                f"{name}: {label} recorded the chain at #{sequence} ({anchored[:12]}…); "
                f"that event {state} now: the trail was cut or re-written"
            )
    return checked, problems, (last_sequence, last_hash)


def audit_verify(
    *,
    organization: Organization | None = None,
    platform: bool | None = None,
    expected: Iterable[Expected] = (),
) -> VerifyResult:
    """Walk each chain in sequence order and report what does not hold.

    Per event: the sequence follows the previous one (a gap means events were deleted);
    ``prev_hash`` is the previous event's ``hash`` (otherwise events were deleted or
    reordered); ``hash`` is the SHA-256 of the event's canonical JSON (otherwise it was
    edited); ``seal`` is the HMAC of the hash under the server key (otherwise the event was
    re-written and the chain re-computed). Per chain: the sealed head names the last event
    (otherwise the newest events were deleted), and every anchor recorded outside the trail
    (decisions, printed in their signed reports; the heads kept in the file storage,
    ``apps.audit.anchors``; the ``expected`` heads given from outside) still matches.

    With no organization, every organization's chain and the platform's; ``platform``
    overrides whether the platform's chain is checked. Linear in the size of the trail.
    """
    organizations: Iterable[Organization | None]
    if organization is not None:
        organizations = [organization]
        with_platform = bool(platform)
    else:
        organizations = Organization.objects.filter(
            Q(id__in=AuditEvent.objects.values("organization_id"))
            | Q(id__in=AuditHead.objects.values("organization_id"))
        ).order_by("slug")
        with_platform = platform is not False
    checked = count = 0
    problems: list[str] = []
    chains = list(organizations)
    if with_platform and (
        AuditEvent.objects.filter(organization__isnull=True).exists()
        or AuditHead.objects.filter(chain=PLATFORM_CHAIN).exists()
    ):
        chains.append(None)
    expected = list(expected)
    heads: list[tuple[Organization | None, int, str]] = []
    for org in chains:
        count += org is not None
        n, found, (last_sequence, last_hash) = _verify_chain(org, expected)
        checked += n
        problems.extend(found)
        heads.append((org, last_sequence, last_hash))
    known = {org.slug if org is not None else PLATFORM_CHAIN for org in chains}
    for e in expected:
        if e.chain not in known:
            problems.append(f"{e.chain}: the head given with --expect names no chain checked")
    return VerifyResult(
        ok=not problems, checked=checked, organizations=count, problems=problems, heads=heads
    )


def audit_key_is_public() -> bool:
    """Is the chain sealed with a key anyone can know — derived from a published
    SECRET_KEY (the development or the test default) or itself not random? Then anyone with
    the database can re-seal an edited trail; the pages, reports and start-up say so."""
    from django.conf import settings

    key = str(settings.DEIDWEB_AUDIT_KEY)
    for secret_key in {str(settings.SECRET_KEY), *KNOWN_WEAK_SECRETS}:
        derived = hmac.new(secret_key.encode(), b"deidweb audit chain", hashlib.sha256)
        if hmac.compare_digest(key, derived.hexdigest()):
            return bool(secret_weakness(secret_key))
    return bool(secret_weakness(key))
