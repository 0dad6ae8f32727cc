"""An approved release on a cluster (issue #27): checked against what was approved.

A release of an uploaded data set leaves deidweb as a file whose SHA-256 must equal the
one the approving decision recorded (`apps.reviews.release`). A cluster release never
leaves the cluster; what the decision records is its manifest's digest (files, rows,
SHA-256 of each file). The check here is that release's download check: the manifest the
version froze must have that digest, and the files on the cluster must still be the
manifest's — a file changed, missing or added after the approval is refused and recorded
in the audit trail, as a changed file's download is.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from apps.assessments.models import Assessment, AssessmentStatus
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets.cluster_connection import cluster_engine
from apps.engine.errors import EngineError
from apps.engine.rows import ReleaseManifest
from apps.reviews.release import approving_decision
from apps.reviews.snapshot import assessment_record


def cluster_release_verify(
    *, assessment: Assessment, user: User | AnonymousUser | None
) -> dict[str, Any]:
    """Hash the approved cluster release's files again and compare them with the approved
    manifest; the result, or a refusal (409) naming what differs."""
    if assessment.status != AssessmentStatus.APPROVED:
        raise ApplicationError(
            "A cluster release is checked once a reviewer has approved it.", status=403
        )
    decision = approving_decision(assessment)
    expected = (decision.digests or {}).get("release_manifest", "") if decision else ""
    frozen = assessment_record(assessment).assessment.apply_result or {}
    cluster = frozen.get("cluster_release")
    if not (decision and expected and cluster):
        raise ApplicationError("This release was not written on a cluster.", status=404)
    manifest = ReleaseManifest.from_dict(cluster["manifest"])
    if manifest.digest != expected:
        _refuse(assessment, user, expected, manifest.digest, "the stored manifest differs")
    try:
        with cluster_engine(assessment.organization_id) as engine:
            check = engine.verify_release(manifest)
    except EngineError as exc:
        raise ApplicationError(f"The cluster could not be checked: {exc}", status=503) from None
    if not check.ok:
        _refuse(
            assessment,
            user,
            expected,
            "",
            check.message(),
            changed=list(check.changed),
            missing=list(check.missing),
            added=list(check.added),
        )
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="release.cluster_verified",
        obj=assessment,
        details={
            "version": assessment.version,
            "manifest_sha256": expected,
            "decision": str(decision.id),
            "files": len(manifest.files),
        },
    )
    return {
        "ok": True,
        "manifest_sha256": expected,
        "location": manifest.location,
        "rows": manifest.rows,
        "files": len(manifest.files),
    }


def _refuse(
    assessment: Assessment,
    user: User | AnonymousUser | None,
    expected: str,
    actual: str,
    why: str,
    **found: list[str],
) -> None:
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="release.cluster_refused",
        obj=assessment,
        details={
            "version": assessment.version,
            "approved_manifest_sha256": expected,
            "stored_manifest_sha256": actual,
            "reason": why,
            **found,
        },
    )
    raise ApplicationError(
        f"The cluster release is not the approved one: {why} (the approved manifest's "
        f"SHA-256 is {expected}). The refusal is recorded in the audit trail; an "
        "administrator must investigate.",
        {"approved_manifest_sha256": expected, **found},
        status=409,
    )
