"""Making, storing and serving the recipient summary of an approved release and its JSON
twin. The report job makes it right after the report (``apps.reports.jobs``), from the same
frozen record and with the same certificate."""

from __future__ import annotations

import io
from functools import partial
from typing import IO, Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets.storage import delete_quietly
from apps.jobs.models import Job
from apps.reports.identity import organization_sign, read_stored
from apps.reports.models import RecipientSummary
from apps.reports.summary import sha256_hex, summary_data, summary_render
from apps.reviews.models import ReviewDecision

SIGNING_REASON = "De-identification and risk summary for the recipient (IHE handbook)"


def summary_wanted(decision: ReviewDecision) -> bool:
    return bool(decision.final and decision.decision == "approve")


def summary_intact(summary: RecipientSummary) -> bool:
    try:
        return sha256_hex(read_stored(summary.pdf_path)) == summary.sha256 and (
            sha256_hex(read_stored(summary.json_path)) == summary.json_sha256
        )
    except OSError:
        return False


def summary_missing(decision: ReviewDecision) -> bool:
    """An approved release whose summary is not stored intact."""
    if not summary_wanted(decision):
        return False
    summary = RecipientSummary.objects.filter(decision=decision).first()
    return summary is None or not summary_intact(summary)


def _path(decision: ReviewDecision, suffix: str) -> str:
    return (
        f"organizations/{decision.organization_id}/assessments/{decision.assessment_id}/"
        f"v{decision.version}/recipient-summary-{decision.id}.{suffix}"
    )


def summary_generate(
    *, job: Job, decision: ReviewDecision, identity: tuple[bytes, str]
) -> RecipientSummary | None:
    """Render, sign and store the summary of an approved decision; an intact one is kept."""
    if not summary_wanted(decision):
        return None
    existing = RecipientSummary.objects.filter(decision=decision).first()
    if existing is not None and summary_intact(existing):
        return existing
    assessment = decision.assessment
    organization = assessment.organization
    data = summary_data(assessment=assessment, decision=decision)
    pdf, twin = summary_render(organization=organization, data=data)
    signed = organization_sign(
        pdf, identity, organization, reason=SIGNING_REASON, what="recipient summary"
    )
    pdf_name = default_storage.save(_path(decision, "pdf"), ContentFile(signed))
    json_name = default_storage.save(_path(decision, "json"), ContentFile(twin))
    try:
        with transaction.atomic():
            summary, _ = RecipientSummary.objects.update_or_create(
                decision=decision,
                defaults={
                    "organization": organization,
                    "assessment": assessment,
                    "pdf_path": pdf_name,
                    "sha256": sha256_hex(signed),
                    "size_bytes": len(signed),
                    "json_path": json_name,
                    "json_sha256": sha256_hex(twin),
                    "json_size_bytes": len(twin),
                    "signer": organization.name,
                    "job": job,
                },
            )
            audit_record(
                organization=organization,
                actor=job.created_by,
                action="summary.generate",
                obj=summary,
                details={
                    "assessment": str(assessment.id),
                    "decision": str(decision.id),
                    "sha256": summary.sha256,
                    "json_sha256": summary.json_sha256,
                },
            )
            for old in (existing.pdf_path, existing.json_path) if existing else ():
                if old not in (pdf_name, json_name):
                    transaction.on_commit(partial(delete_quietly, old))
    except Exception:
        delete_quietly(pdf_name)
        delete_quietly(json_name)
        raise
    return summary


def summary_file_open(*, summary: RecipientSummary, user: Any, kind: str) -> IO[bytes]:
    """The signed PDF (``kind`` "pdf") or its JSON twin ("json"), if still the stored bytes
    whose digest was recorded; the download is recorded, a refusal too (409)."""
    path, expected = (
        (summary.pdf_path, summary.sha256)
        if kind == "pdf"
        else (summary.json_path, summary.json_sha256)
    )
    try:
        data = read_stored(path)
    except OSError:
        data = b""
    actual = sha256_hex(data) if data else ""
    if actual != expected:
        with transaction.atomic():
            audit_record(
                organization=summary.organization,
                actor=user,
                action="download.summary_refused",
                obj=summary,
                details={"kind": kind, "recorded_sha256": expected, "stored_sha256": actual},
            )
        raise ApplicationError(
            f"The recipient summary's {kind.upper()} file cannot be downloaded: the stored file "
            f"is missing or differs from the one recorded (SHA-256 {expected}). The refusal is "
            "recorded in the audit trail; an administrator must investigate.",
            status=409,
        )
    audit_record(
        organization=summary.organization,
        actor=user,
        action=f"download.summary_{kind}",
        obj=summary,
        details={"assessment": str(summary.assessment_id), "sha256": actual},
    )
    return io.BytesIO(data)


def summary_row(summary: RecipientSummary) -> dict[str, object]:
    """As the assessment's report action lists it."""
    return {
        "id": str(summary.id),
        "decision": str(summary.decision_id),
        "sha256": summary.sha256,
        "json_sha256": summary.json_sha256,
        "pdf": f"/api/v1/summaries/{summary.id}/pdf/",
        "json": f"/api/v1/summaries/{summary.id}/json/",
    }


def summary_filename(summary: RecipientSummary, kind: str) -> str:
    from django.utils.text import slugify

    title = slugify(summary.assessment.title)[:60] or "assessment"
    return f"{title}-v{summary.decision.version}-recipient-summary.{kind}"


__all__ = [
    "summary_file_open",
    "summary_filename",
    "summary_generate",
    "summary_intact",
    "summary_missing",
    "summary_row",
]
