"""The report jobs: a final decision queues its report, the job renders it from the frozen
record, signs it with the organization's certificate and stores it; a missing one is
prepared again on request.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from apps.accounts.selectors import membership_get
from apps.assessments.models import Assessment
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets.storage import delete_quietly
from apps.jobs.context import JobContext
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.reports.content import report_render
from apps.reports.identity import organization_sign, organization_signing_ensure, signing_identity
from apps.reports.models import Report
from apps.reports.summary_jobs import summary_generate, summary_missing
from apps.reports.verification import report_intact, sha256_hex
from apps.reviews.models import ReviewDecision

SIGNING_REASON = "Step 9 de-identification report (IPC 2016, step 9)"


def report_path(*, assessment: Assessment, decision: ReviewDecision) -> str:
    return (
        f"organizations/{assessment.organization_id}/assessments/{assessment.id}/"
        f"v{assessment.version}/report-{decision.id}.pdf"
    )


def report_job_guard(job: Job, action: str) -> None:
    """A report is made by deidweb from a decision's frozen record: never cancelled or
    re-run by hand (``report_request`` prepares a missing one again)."""
    if action in {"cancel", "retry"}:
        raise ApplicationError(
            "The signed report of a decision is prepared by deidweb from the decision's frozen "
            "record; it cannot be cancelled or re-run by hand. If it is missing, a reviewer or "
            "an administrator can ask for it again on the review page.",
            status=409,
        )


def report_request(*, decision: ReviewDecision, user: User | None) -> Job | None:
    """Queue the report of a final decision unless it exists or is being prepared.

    Safe to call again: rendering from the frozen record gives the same content, and an
    intact stored report is returned as it is rather than signed a second time."""
    if not decision.final:
        raise ApplicationError("Only a final decision has a signed report.")
    report = Report.objects.filter(decision=decision).first()
    if report is not None and report_intact(report) and not summary_missing(decision):
        return None
    pending = Job.objects.filter(
        organization_id=decision.organization_id,
        kind="report",
        params__decision_id=str(decision.id),
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
    ).first()
    if pending is not None:
        return pending
    return job_create(
        organization=decision.organization,
        kind="report",
        subject=f"assessments.assessment:{decision.assessment_id}",
        params={"decision_id": str(decision.id)},
        created_by=user,
    )


def report_again(*, assessment: Assessment, user: User) -> list[Any]:
    """Prepare again the signed report of each final decision whose report is missing (its
    job failed, or the file was lost). Rendering reads the frozen record, so the content is
    the one decided on."""
    if not membership_get(user=user, organization=assessment.organization).can_review:
        raise ApplicationError(
            "Only reviewers and administrators ask for a report to be prepared again.", status=403
        )
    jobs = []
    for decision in ReviewDecision.objects.filter(assessment=assessment, final=True):
        job = report_request(decision=decision, user=user)
        if job is not None:
            jobs.append(job)
    if not jobs:
        raise ApplicationError(
            "Every decision of this version has its signed report (and an approved one its "
            "recipient summary).",
            status=409,
        )
    return jobs


def report_generate_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job kind "report", params {"decision_id"}: render, sign, store, record the digest.

    A decision has one report: when it already exists and its file is intact, the job
    returns it rather than signing a second, different copy."""
    decision = (
        ReviewDecision.objects.select_related(
            "assessment", "assessment__dataset", "assessment__organization", "reviewer"
        )
        .filter(id=job.params.get("decision_id"), organization=job.organization)
        .first()
    )
    if decision is None:
        raise ApplicationError("The review decision of this report no longer exists.")
    assessment = decision.assessment
    organization = assessment.organization
    if not decision.final:
        raise ApplicationError("Only a final decision has a signed report.")
    context.progress(5, "Preparing the signing certificate", force=True)
    organization_signing_ensure(organization=organization)
    identity = signing_identity(organization)
    if identity is None:
        raise ApplicationError("The organization's signing certificate could not be read.")
    existing = Report.objects.filter(decision=decision).first()
    if existing is not None and report_intact(existing):
        # an approved release's recipient summary, if it is the part missing
        summary_generate(job=job, decision=decision, identity=identity)
        return _job_result(existing)
    context.progress(15, "Rendering the report", force=True)
    pdf = report_render(assessment=assessment, decision=decision)
    context.progress(75, "Signing the report", force=True)
    signed = organization_sign(pdf, identity, organization, reason=SIGNING_REASON, what="report")
    digest = sha256_hex(signed)
    context.progress(90, "Storing the signed report", force=True)
    name = default_storage.save(
        report_path(assessment=assessment, decision=decision), ContentFile(signed)
    )
    try:
        with transaction.atomic():
            old_path = existing.pdf_path if existing is not None else ""
            report, _created = Report.objects.update_or_create(
                decision=decision,
                defaults={
                    "organization": organization,
                    "assessment": assessment,
                    "pdf_path": name,
                    "sha256": digest,
                    "size_bytes": len(signed),
                    "signer": organization.name,
                    "job": job,
                },
            )
            ReviewDecision.objects.filter(id=decision.id).update(report_sha256=digest)
            audit_record(
                organization=organization,
                actor=job.created_by,
                action="report.generate",
                obj=report,
                details={
                    "assessment": str(assessment.id),
                    "decision": str(decision.id),
                    "sha256": digest,
                    "version": assessment.version,
                },
            )
            if old_path and old_path != name:
                transaction.on_commit(lambda: delete_quietly(old_path))
    except Exception:
        delete_quietly(name)
        raise
    context.progress(95, "Signing the recipient summary", force=True)
    summary_generate(job=job, decision=decision, identity=identity)
    return _job_result(report)


def _job_result(report: Report) -> dict[str, Any]:
    return {
        "report_id": str(report.id),
        "sha256": report.sha256,
        "size_bytes": report.size_bytes,
        "decision_id": str(report.decision_id),
    }
