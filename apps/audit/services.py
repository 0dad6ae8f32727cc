"""Recording audit events and verifying the chains they form.

Call ``audit_record`` from the service that does the action, inside its transaction: if the
action rolls back, so does its event, and an event is never recorded for something that did
not happen. Actions are ``noun.verb`` codes (``dataset.upload``, ``review.decision``,
``download.release`` …; see ``models.KNOWN_ACTIONS``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, models, transaction

from apps.accounts.models import Organization
from apps.audit.models import GENESIS_HASH, AuditEvent, canonical_dumps

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


def audit_record(
    *,
    organization: Organization,
    actor: User | AnonymousUser | None,
    action: str,
    obj: models.Model | None = None,
    details: dict[str, Any] | None = None,
    object_type: str = "",
    object_id: str = "",
) -> AuditEvent:
    """Append one event to the organization's chain and return it.

    ``obj`` fills ``object_type`` (``app_label.model``), ``object_id`` (its primary key) and
    ``object_repr`` (``str(obj)``); pass ``object_type``/``object_id`` instead for something
    that is not a model instance (they win over ``obj`` when both are given). ``actor`` is
    ``None`` for the system (a task with no user).

    Appends are serialized per organization by locking its row, so sequences stay contiguous
    under concurrency; the lock is held until the surrounding transaction ends.
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
        if obj_org is not None and obj_org != organization.pk:
            raise ValueError("The audited object belongs to another organization.")
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or str(obj.pk)
        object_repr = str(obj)[:200]
    user = actor if actor is not None and actor.is_authenticated else None
    # Normalize through JSON so the event hashed here is the event read back later.
    safe_details = json.loads(canonical_dumps(json_safe(details or {})))

    no_key = connection.features.has_select_for_no_key_update
    with transaction.atomic():
        # FOR NO KEY UPDATE: two appends exclude each other, but inserts of other rows that
        # reference the organization (which take KEY SHARE) are not blocked.
        Organization.objects.select_for_update(no_key=no_key).only("pk").get(pk=organization.pk)
        last = (
            AuditEvent.objects.filter(organization_id=organization.pk)
            .order_by("-sequence")
            .values("sequence", "hash")
            .first()
        )
        event = AuditEvent(
            organization=organization,
            sequence=(last["sequence"] + 1) if last else 1,
            actor=user,
            actor_name=user.get_username()[:150] if user else "",
            action=action,
            object_type=object_type[:100],
            object_id=str(object_id)[:64],
            object_repr=object_repr,
            details=safe_details,
            prev_hash=last["hash"] if last else GENESIS_HASH,
        )
        event.hash = event.compute_hash()
        event.save(force_insert=True)
    return event


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int  # events
    organizations: int
    problems: list[str]

    @property
    def summary(self) -> str:
        if self.ok:
            return f"OK: {self.checked} events in {self.organizations} organizations, chain intact"
        return f"{len(self.problems)} problems in {self.checked} events"


def audit_verify(*, organization: Organization | None = None) -> VerifyResult:
    """Walk each organization's chain in sequence order and report what does not hold.

    Per event: the sequence follows the previous one (a gap means events were deleted);
    ``prev_hash`` is the previous event's ``hash`` (otherwise events were deleted or
    reordered); ``hash`` is the SHA-256 of the event's canonical JSON (otherwise it was
    edited). Removing the newest events leaves a shorter chain that is still intact — to
    detect that, keep the latest hash somewhere else (a signed report, a ticket).

    Reads every event of the organizations checked: linear in the size of the trail.
    """
    organizations: Iterable[Organization]
    if organization is not None:
        organizations = [organization]
    else:
        organizations = Organization.objects.filter(
            id__in=AuditEvent.objects.values("organization_id")
        ).order_by("slug")
    checked = 0
    count = 0
    problems: list[str] = []
    for org in organizations:
        count += 1
        expected_sequence, prev_hash = 1, GENESIS_HASH
        events = AuditEvent.objects.filter(organization=org).order_by("sequence")
        for event in events.iterator(chunk_size=2000):
            checked += 1
            where = f"{org.slug} #{event.sequence}"
            if event.sequence != expected_sequence:
                if event.sequence > expected_sequence:
                    missing = (
                        f"#{expected_sequence}"
                        if event.sequence == expected_sequence + 1
                        else f"#{expected_sequence}–#{event.sequence - 1}"
                    )
                    problems.append(f"{where}: sequence gap, {missing} missing (deleted)")
                else:
                    problems.append(
                        f"{where}: sequence out of order, expected #{expected_sequence}"
                    )
            if event.prev_hash != prev_hash:
                problems.append(
                    f"{where}: prev_hash mismatch, the event before it is not the one it was "
                    "chained to (deleted or reordered)"
                )
            if event.compute_hash() != event.hash:
                problems.append(f"{where}: hash mismatch, the event was edited after recording")
            expected_sequence, prev_hash = event.sequence + 1, event.hash
    return VerifyResult(ok=not problems, checked=checked, organizations=count, problems=problems)
