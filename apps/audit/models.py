"""An append-only, hash-chained record of what was done to each organization's data.

Every event carries the SHA-256 of its own canonical JSON, and that JSON includes the hash
of the organization's previous event, so the events of one organization form a chain:
editing any hashed field of any event, deleting an event or reordering events breaks it,
and ``audit_verify`` (``apps.audit.services``) says where.

Canonical JSON (what ``hash`` is the SHA-256 of, hex, over the UTF-8 bytes)::

    json.dumps(
        {
            "action": "dataset.upload",
            "actor_name": "alice",                 # "" when no one (a system task)
            "created_at": "2025-01-02T03:04:05.000006+00:00",   # UTC, always microseconds
            "details": {...},                      # as stored (JSON-safe, see services)
            "id": "5c0f…",                         # str(UUID)
            "object_id": "…", "object_repr": "…", "object_type": "datasets.dataset",
            "organization": "8e1a…",               # str(UUID) of the organization
            "prev_hash": "000…000",                # 64 zeros for an organization's first event
            "sequence": 1,
        },
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )

Every field except ``hash`` and ``seal`` is covered, with one exception: the ``actor`` link.
It is a convenience that Django sets to NULL when the user is deleted (``SET_NULL``), so it
cannot be hashed; ``actor_name``, which is hashed and never cleared, is the attribution of
record. ``organization`` is "" for the platform's own chain (sign-ins of unknown users).

The SHA-256 chain alone can be re-computed by anyone who edits the table. Two keyed parts
make that detectable (``services.audit_verify``): each event's ``seal`` is an HMAC-SHA-256 of
its hash under a server secret (``DEIDWEB_AUDIT_KEY``), so a re-chained event fails its seal;
and each chain's ``AuditHead`` keeps the newest sequence and hash, sealed, so deleting the
newest events is seen. Each signed Step 9 report also prints the chain head at its decision.

Three guards keep history unchanged: ``save()`` refuses to update a stored event and
``delete()`` refuses; the queryset refuses ``update()`` (except the ``SET_NULL`` of the actor
link) and ``delete()``; and on PostgreSQL a trigger (migration 0002) raises on any UPDATE or
DELETE of the table from any client, again except clearing ``actor_id``. What none of them
can stop — someone with the rights to disable the trigger — the chain makes visible.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

GENESIS_HASH = "0" * 64

# The actions the product records (``noun.verb``). Others are allowed if they follow the
# pattern (see ``services.ACTION_RE``); these get a label on the audit page.
KNOWN_ACTIONS: dict[str, str] = {
    "auth.login": "Signed in",
    "auth.login_failed": "Failed sign-in",
    "auth.logout": "Signed out",
    "auth.lockout": "Sign-in locked after repeated failures",
    "auth.login_failed_repeated": "Failed API authentications repeated (aggregated count)",
    "auth.throttled": "API authentication throttled after repeated failures",
    "auth.password_change": "Password changed",
    "auth.token_create": "API key created",
    "auth.token_revoke": "API key revoked",
    "admin.add": "Added in the administration site",
    "admin.change": "Changed in the administration site",
    "admin.delete": "Deleted in the administration site",
    "dataset.upload": "Data set uploaded",
    "dataset.release_model": "Intended release model changed",
    "dataset.identifier_values_read": "Values of direct identifiers shown",
    "download.refused": "Release download refused (file differs from the approved one)",
    "dataset.delete": "Data set deleted",
    "classification.change": "Classification changed",
    "assessment.threshold": "Threshold set",
    "assessment.submit": "Assessment submitted for review",
    "job.run": "Job run",
    "review.decision": "Review decision",
    "report.generate": "Report generated",
    "download.release": "Release downloaded",
    "download.report": "Report downloaded",
    "download.report_refused": "Report download refused (file differs from the signed one)",
    "download.secrets": "Secrets downloaded",
}


class AppendOnlyError(Exception):
    """Audit events are never changed or deleted once recorded."""


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        # The one update allowed: Django's ON DELETE SET NULL of the actor link when a user
        # is deleted (the hashed actor_name keeps the attribution).
        if (
            kwargs
            and set(kwargs) <= {"actor", "actor_id"}
            and all(v is None for v in kwargs.values())
        ):
            return super().update(**kwargs)
        raise AppendOnlyError("Audit events cannot be changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit events cannot be deleted.")

    def bulk_create(self, *args: Any, **kwargs: Any) -> list[AuditEvent]:
        raise AppendOnlyError("Record audit events with apps.audit.services.audit_record().")

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AppendOnlyError("Audit events cannot be changed.")


class AuditEvent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "accounts.Organization",
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
        db_index=False,  # the (organization, sequence) unique index serves
        help_text="Empty for the platform's own chain (sign-ins of unknown user names).",
    )
    sequence = models.PositiveBigIntegerField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=100, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    seal = models.CharField(
        max_length=64, blank=True, help_text="HMAC-SHA-256 of the hash under the server's key."
    )

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "sequence"], name="audit_event_sequence_unique"
            ),
            models.UniqueConstraint(
                fields=["sequence"],
                condition=models.Q(organization__isnull=True),
                name="audit_platform_sequence_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "created_at"], name="audit_org_created_idx"),
            models.Index(fields=["organization", "action"], name="audit_org_action_idx"),
            models.Index(fields=["organization", "object_id"], name="audit_org_object_idx"),
            models.Index(fields=["object_type", "object_id"], name="audit_object_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.action} by {self.actor_name or '—'}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Audit events cannot be changed.")
        if not self.hash or self.hash != self.compute_hash():
            raise AppendOnlyError("Record audit events with apps.audit.services.audit_record().")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit events cannot be deleted.")

    # --- the chain ---------------------------------------------------------------------

    def canonical_payload(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "actor_name": self.actor_name,
            "created_at": self.created_at.astimezone(UTC).isoformat(timespec="microseconds"),
            "details": self.details,
            "id": str(self.id),
            "object_id": self.object_id,
            "object_repr": self.object_repr,
            "object_type": self.object_type,
            "organization": str(self.organization_id) if self.organization_id else "",
            "prev_hash": self.prev_hash,
            "sequence": self.sequence,
        }

    def canonical_json(self) -> str:
        return canonical_dumps(self.canonical_payload())

    def compute_hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    # --- display -----------------------------------------------------------------------

    @property
    def details_compact(self) -> str:
        return canonical_dumps(self.details) if self.details else ""

    @property
    def action_label(self) -> str:
        return KNOWN_ACTIONS.get(self.action, self.action)


class AuditHead(models.Model):
    """The newest event of one chain, sealed: what the trail must end with.

    Updated in the same transaction as every append; its row lock serializes appends to the
    chain. ``chain`` is the organization's id, or "platform"."""

    chain = models.CharField(primary_key=True, max_length=64)
    organization = models.OneToOneField(
        "accounts.Organization",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    sequence = models.PositiveBigIntegerField(default=0)
    hash = models.CharField(max_length=64, default=GENESIS_HASH)
    seal = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"head of {self.chain}: #{self.sequence}"


PLATFORM_CHAIN = "platform"


def chain_of(organization_id: Any) -> str:
    return str(organization_id) if organization_id else PLATFORM_CHAIN


def canonical_dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
