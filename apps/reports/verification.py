"""Reading a stored signed report back (checked against the digest recorded at signing) and
matching a presented copy to the organization's certificates and its review decision.
"""

from __future__ import annotations

import hashlib
from typing import IO, Any, NoReturn

from django.core.files.storage import default_storage
from django.db import transaction

from apps.accounts.models import Organization
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.reports import signing
from apps.reports.content import person_name
from apps.reports.identity import organization_certificates, read_stored
from apps.reports.models import Report
from apps.reviews.models import ReviewDecision


def report_intact(report: Report) -> bool:
    if not default_storage.exists(report.pdf_path):
        return False
    return sha256_hex(read_stored(report.pdf_path)) == report.sha256


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def report_pdf(report: Report) -> bytes:
    return read_stored(report.pdf_path)


def report_file_open(*, report: Report, user: Any) -> IO[bytes]:
    """The stored signed report, ready to serve, if it is still the file that was signed.

    Its SHA-256 is checked against the digest recorded at signing (as release files are
    checked against the approved one): a changed or missing file is refused (409) and the
    refusal recorded in the audit trail with both digests; an intact one is served from a
    private copy, so the bytes checked are the bytes sent, and the download is recorded."""
    import tempfile

    digest = hashlib.sha256()
    spool = tempfile.TemporaryFile()  # noqa: SIM115  # handed to the response, which closes it
    try:
        with default_storage.open(report.pdf_path, "rb") as source:
            for chunk in iter(lambda: source.read(1024 * 1024), b""):
                digest.update(chunk)
                spool.write(chunk)
    except OSError:
        spool.close()
        _report_refused(report, user, "", "the signed file is missing from storage")
    actual = digest.hexdigest()
    if actual != report.sha256:
        spool.close()
        _report_refused(report, user, actual, "the stored file differs from the signed one")
    spool.seek(0)
    audit_record(
        organization=report.organization,
        actor=user,
        action="download.report",
        obj=report,
        details={"assessment": str(report.assessment_id), "sha256": actual},
    )
    return spool


def _report_refused(report: Report, user: Any, actual: str, why: str) -> NoReturn:
    with transaction.atomic():
        audit_record(
            organization=report.organization,
            actor=user,
            action="download.report_refused",
            obj=report,
            details={
                "assessment": str(report.assessment_id),
                "signed_sha256": report.sha256,
                "stored_sha256": actual,
                "reason": why,
            },
        )
    raise ApplicationError(
        f"The report cannot be downloaded: {why} (the signed report's SHA-256 is "
        f"{report.sha256}). The refusal is recorded in the audit trail; an administrator must "
        "investigate.",
        {"signed_sha256": report.sha256, "stored_sha256": actual},
        status=409,
    )


def report_verify(*, organization: Organization, pdf: bytes) -> dict[str, Any]:
    """Is this the organization's signed report, unchanged, and of which release decision?"""
    check = signing.verify_pdf(pdf, organization_certificates(organization))
    digest = sha256_hex(pdf)
    decision = (
        ReviewDecision.objects.filter(organization=organization, report_sha256=digest)
        .select_related("assessment", "reviewer")
        .first()
        if pdf
        else None
    )
    match: dict[str, Any] | None = None
    if decision is not None:
        report = Report.objects.filter(decision=decision).first()
        match = {
            "decision_id": str(decision.id),
            "assessment_id": str(decision.assessment_id),
            "assessment_title": decision.assessment.title,
            "version": decision.version,
            "decision": decision.decision,
            "decision_label": label_for("decision_outcome", decision.decision),
            "final": decision.final,
            "reviewer": person_name(decision.reviewer),
            "decided_at": decision.created_at.isoformat(),
            "report_id": str(report.id) if report else None,
        }
    if check.valid and match:
        summary = (
            f"Valid: signed by {check.signer} and unchanged; it is the report of the "
            f"{match['decision_label'].lower()} decision on '{match['assessment_title']}' "
            f"version {match['version']}."
        )
    elif check.valid:
        summary = (
            f"The signature of {check.signer} is valid, but no release decision of this "
            "organization has a report with this exact content."
        )
    else:
        summary = f"Not valid: {check.problem}"
    return {
        "valid": check.valid,
        "signed": check.signed,
        "intact": check.intact,
        "trusted": check.trusted,
        "signer": check.signer,
        "signed_at": check.signed_at.isoformat() if check.signed_at else None,
        "problem": check.problem,
        "sha256": digest,
        "size_bytes": len(pdf),
        "decision": match,
        "summary": summary,
    }
