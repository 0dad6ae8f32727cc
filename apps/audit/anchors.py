"""The audit chain's head, recorded outside the database.

Deleting the newest events is caught by the sealed head row (``AuditHead``), and a trail cut
back below a decision by the decision's own anchor — but both live in the database. Restore
an older copy of it and the trail, its head (with a genuine seal) and the decisions agree
again: the cut is invisible from inside. So the head is also written to the file storage,
which a database restore does not bring back:

- after a review decision or a report is recorded (``ANCHORED_ACTIONS``), once the
  transaction commits;
- at each run of ``manage.py audit_verify --record-anchors`` (run it daily from cron).

Each anchor is one small JSON object, never changed (``audit/anchors/<chain>/<sequence>-
<hash>.json``); ``audit_verify`` compares the trail with every one of them (registered as an
anchor provider). The anchors prove that the trail once reached an event with that digest;
someone who can also delete files from the storage can remove them, so keep the storage's
credentials apart from the database's (or copy the anchors to write-once storage).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from apps.accounts.models import Organization
from apps.audit.models import PLATFORM_CHAIN, chain_of

logger = logging.getLogger(__name__)

ANCHOR_DIR = "audit/anchors"
ANCHORED_ACTIONS = frozenset({"review.decision", "report.generate"})
ACTION_WORDS = {
    "review.decision": "the review decision",
    "report.generate": "the signed report",
}


def anchor_write(
    *, chain: str, organization: str, sequence: int, head_hash: str, action: str
) -> str | None:
    """Record that ``chain`` reached event ``sequence`` with digest ``head_hash``; the stored
    name, or None when the storage refused (logged: the action itself stands)."""
    body = {
        "chain": chain,
        "organization": organization,
        "sequence": int(sequence),
        "hash": head_hash,
        "action": action,
        "recorded_at": timezone.now().isoformat(timespec="seconds"),
    }
    name = f"{ANCHOR_DIR}/{chain}/{int(sequence):012d}-{head_hash[:16]}.json"
    try:
        if default_storage.exists(name):
            return name
        return str(default_storage.save(name, ContentFile(json.dumps(body, sort_keys=True))))
    except Exception:  # the storage is down: the event is in the trail all the same
        logger.exception("could not record the audit chain's head outside the database")
        return None


def anchors_stored(chain: str) -> list[dict[str, Any]]:
    """Every anchor recorded for ``chain``, oldest first."""
    folder = f"{ANCHOR_DIR}/{chain}"
    try:
        _dirs, files = default_storage.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for file in sorted(files):
        try:
            with default_storage.open(f"{folder}/{file}", "rb") as handle:
                found.append(json.loads(handle.read()))
        except (OSError, ValueError):
            found.append({"sequence": -1, "hash": "", "action": "unreadable", "file": file})
    return found


def stored_anchor_provider(organization: Organization | None) -> Iterable[tuple[str, int, str]]:
    """``audit_verify``'s view of the anchors in the storage (``ANCHOR_PROVIDERS``)."""
    out = []
    for anchor in anchors_stored(chain_of(organization.pk if organization else None)):
        action = str(anchor.get("action", ""))
        if action == "audit_verify":
            label = f"the check of the audit trail run at {anchor.get('recorded_at', '?')}"
        elif action == "unreadable":
            label = f"the unreadable anchor file {anchor.get('file')}"
        else:
            label = f"{ACTION_WORDS.get(action, action)} (event #{anchor.get('sequence')})"
        out.append((label, int(anchor.get("sequence", -1)), str(anchor.get("hash", ""))))
    return out


def anchor_heads(heads: Iterable[tuple[Organization | None, int, str]]) -> int:
    """Record the given chain heads (an ``audit_verify`` run); how many were written."""
    written = 0
    for organization, sequence, head_hash in heads:
        if not sequence:
            continue
        chain = chain_of(organization.pk if organization else None)
        name = anchor_write(
            chain=chain,
            organization=organization.slug if organization else PLATFORM_CHAIN,
            sequence=sequence,
            head_hash=head_hash,
            action="audit_verify",
        )
        written += name is not None
    return written


def anchors_forget_all() -> None:
    """Remove every stored anchor (tests only: anchors are otherwise never deleted)."""
    try:
        chains, _files = default_storage.listdir(ANCHOR_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return
    for chain in chains:
        _dirs, files = default_storage.listdir(f"{ANCHOR_DIR}/{chain}")
        for file in files:
            default_storage.delete(f"{ANCHOR_DIR}/{chain}/{file}")
