"""The one way an approved release leaves deidweb: the bytes served are the bytes approved.

The file is copied out of storage into a temporary file while its SHA-256 is computed; only
when that digest equals the one the approving decision recorded is the copy served. Checking
and serving the same bytes leaves no gap for the stored file to change in between. A
mismatch is refused and recorded in the audit trail.

A release is every file ``apps.assessments.release_files.release_manifest`` lists (one
table's Parquet and CSV; a linked-tables release's tables besides): the submission froze
each one's digest under its key, the decision recorded it, and each download, one file or
the ZIP bundle of all of them, goes through the same check (:func:`_checked_copy`).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from typing import IO, Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.files.storage import default_storage

from apps.assessments.hooks import ReleaseFile
from apps.assessments.models import Assessment, AssessmentStatus
from apps.assessments.release_files import FILE_PREFIX, file_key
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
    *, assessment: Assessment, fmt: str, user: User | AnonymousUser | None, file: str = ""
) -> ReleaseFile:
    """The approved release file, checked against the decision's digest, ready to serve:
    one table's Parquet or CSV (``fmt``), a file the release lists by name (``file``: a
    linked-tables release's tables), or ``fmt="zip"``: every released file of the version,
    each checked, in one archive."""
    if assessment.status != AssessmentStatus.APPROVED:
        raise ApplicationError(
            "The de-identified file is released only after a reviewer approves it.", status=403
        )
    if fmt == "zip" and not file:
        return _bundle(assessment, user)
    key = file_key(file) if file else FORMATS.get(fmt)
    if key is None:
        raise ApplicationError(
            f"'{fmt}' is not a release format (csv, parquet or zip).", status=404
        )
    decision, files = _approved(assessment)
    expected = (decision.digests or {}).get(key, "") if decision is not None else ""
    name = (files.get(key) or {}).get("path", "")
    if not (decision and expected and name):
        what = f"file named '{file}'" if file else "file in that format"
        raise ApplicationError(f"This release has no approved {what}.", status=404)
    label = file or fmt
    spool, actual, size = _checked_copy(assessment, user, label, name, expected)
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="download.release",
        obj=assessment,
        details={
            "format": label,
            "version": assessment.version,
            "sha256": actual,
            "decision": str(decision.id),
        },
    )
    filename = f"{assessment.dataset.name}-{file}" if file else None
    return ReleaseFile(
        handle=spool,
        filename=filename or f"{assessment.dataset.name}-deidentified.{fmt}",
        sha256=actual,
        size=size,
    )


def _approved(assessment: Assessment) -> tuple[ReviewDecision | None, dict[str, Any]]:
    """The approving decision and the frozen record's files."""
    snapshot = getattr(assessment, "snapshot", None)
    files = (snapshot.content.get("files") or {}) if snapshot else {}
    return approving_decision(assessment), files


def _checked_copy(
    assessment: Assessment,
    user: User | AnonymousUser | None,
    label: str,
    name: str,
    expected: str,
) -> tuple[IO[bytes], str, int]:
    """The stored file copied into a temporary file while it is hashed; refused (409,
    recorded) unless its SHA-256 is the approved one."""
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
        _refuse(assessment, user, label, expected, "", "the approved file is missing from storage")
    actual = digest.hexdigest()
    if actual != expected:
        spool.close()
        _refuse(
            assessment,
            user,
            label,
            expected,
            actual,
            "the stored file differs from the approved one",
        )
    spool.seek(0)
    return spool, actual, size


def _bundle(assessment: Assessment, user: User | AnonymousUser | None) -> ReleaseFile:
    """Every released file of the version in one ZIP archive, each copied through the same
    check as its own download (one changed byte refuses the whole archive), with a
    ``SHA256SUMS`` file of the approved digests."""
    decision, files = _approved(assessment)
    digests = (decision.digests or {}) if decision is not None else {}
    members: list[tuple[str, str, str]] = []  # (name in the archive, path, approved digest)
    for key, frozen in files.items():
        if key in FORMATS.values():
            member = f"{assessment.dataset.name}-deidentified.{frozen['path'].rsplit('.', 1)[-1]}"
        elif key.startswith(FILE_PREFIX):
            member = str(frozen.get("name") or key[len(FILE_PREFIX) :])
        else:
            continue
        if digests.get(key) and frozen.get("path"):
            members.append((member, frozen["path"], digests[key]))
    if decision is None or not members:
        raise ApplicationError("This release has no approved file.", status=404)
    bundle = tempfile.TemporaryFile()  # noqa: SIM115  # handed to the response, which closes it
    sums = []
    with zipfile.ZipFile(bundle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, path, expected in members:
            spool, actual, _ = _checked_copy(assessment, user, member, path, expected)
            with spool, archive.open(member, "w") as target:
                shutil.copyfileobj(spool, target, 1024 * 1024)
            sums.append(f"{actual}  {member}\n")
        archive.writestr("SHA256SUMS", "".join(sums))
    size = bundle.tell()
    bundle.seek(0)
    digest = hashlib.sha256()
    for chunk in iter(lambda: bundle.read(1024 * 1024), b""):
        digest.update(chunk)
    bundle.seek(0)
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="download.release",
        obj=assessment,
        details={
            "format": "zip",
            "version": assessment.version,
            "sha256": digest.hexdigest(),
            "files": {member: expected for member, _, expected in members},
            "decision": str(decision.id),
        },
    )
    return ReleaseFile(
        handle=bundle,
        filename=f"{assessment.dataset.name}-release.zip",
        sha256=digest.hexdigest(),
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
