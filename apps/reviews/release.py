"""The one way an approved release leaves deidweb: the bytes served are the bytes approved.

The file is copied out of storage into a temporary file while its SHA-256 is computed; only
when that digest equals the one the approving decision recorded is the copy served. Checking
and serving the same bytes leaves no gap for the stored file to change in between. A
mismatch is refused and recorded in the audit trail.
"""

from __future__ import annotations

import hashlib
import tempfile
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.files.storage import default_storage

from apps.assessments.hooks import ReleaseFile
from apps.assessments.models import Assessment, AssessmentStatus
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.reviews.models import Decision, ReviewDecision

FORMATS = {"parquet": "release_parquet", "csv": "release_csv"}


def approving_decision(assessment: Assessment) -> ReviewDecision | None:
    return (
        ReviewDecision.objects.filter(
            assessment_id=assessment.id, decision=Decision.APPROVE, final=True
        )
        .order_by("-created_at")
        .first()
    )


def release_file_open(
    *, assessment: Assessment, fmt: str, user: User | AnonymousUser | None
) -> ReleaseFile:
    """The approved release file, checked against the decision's digest, ready to serve."""
    if assessment.status != AssessmentStatus.APPROVED:
        raise ApplicationError(
            "The de-identified file is released only after a reviewer approves it.", status=403
        )
    key = FORMATS.get(fmt)
    if key is None:
        raise ApplicationError(f"'{fmt}' is not a release format (csv or parquet).", status=404)
    decision = approving_decision(assessment)
    snapshot = getattr(assessment, "snapshot", None)
    expected = (decision.digests or {}).get(key, "") if decision is not None else ""
    stored = ((snapshot.content.get("files") or {}).get(key) or {}) if snapshot else {}
    name = stored.get("path", "")
    if not (decision and expected and name):
        raise ApplicationError("This release has no approved file in that format.", status=404)
    digest = hashlib.sha256()
    size = 0
    spool = tempfile.TemporaryFile()  # noqa: SIM115  # handed to the response, which closes it
    try:
        with default_storage.open(name, "rb") as source:
            for chunk in iter(lambda: source.read(1024 * 1024), b""):
                digest.update(chunk)
                spool.write(chunk)
                size += len(chunk)
    except OSError:
        spool.close()
        _refuse(assessment, user, fmt, expected, "", "the approved file is missing from storage")
    actual = digest.hexdigest()
    if actual != expected:
        spool.close()
        _refuse(
            assessment, user, fmt, expected, actual, "the stored file differs from the approved one"
        )
    spool.seek(0)
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="download.release",
        obj=assessment,
        details={
            "format": fmt,
            "version": assessment.version,
            "sha256": actual,
            "decision": str(decision.id),
        },
    )
    return ReleaseFile(
        handle=spool,
        filename=f"{assessment.dataset.name}-deidentified.{fmt}",
        sha256=actual,
        size=size,
    )


def _refuse(
    assessment: Assessment,
    user: User | AnonymousUser | None,
    fmt: str,
    expected: str,
    actual: str,
    why: str,
) -> Any:
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="download.refused",
        obj=assessment,
        details={
            "format": fmt,
            "version": assessment.version,
            "approved_sha256": expected,
            "stored_sha256": actual,
            "reason": why,
        },
    )
    raise ApplicationError(
        f"The release cannot be downloaded: {why} (the approved SHA-256 is {expected}). "
        "The refusal is recorded in the audit trail; an administrator must investigate.",
        {"approved_sha256": expected, "stored_sha256": actual},
        status=409,
    )
