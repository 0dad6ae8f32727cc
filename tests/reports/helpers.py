"""Steps 1-8 computed in-process, a decision recorded, and the report job run."""

from __future__ import annotations

from django.utils import timezone

from apps.assessments import deidentify, release_apply, services
from apps.assessments.models import AssessmentStatus
from apps.jobs import kinds as job_kinds
from apps.jobs.claiming import job_execute
from apps.jobs.queueing import job_create
from apps.reviews.models import ReviewDecision, StepComment, Submission
from tests.assessments.conftest import CONTROLS_ALL_YES, LOW_ANSWERS, MOTIVES_LOW
from tests.justify import justify_all

REASONS = "Strict average risk is under the target; utility is adequate for the asthma study."


def compute(assessment, analyst, *, release_model="non_public"):  # type: ignore[no-untyped-def]
    """Steps 1-8 in-process: a non-public release under a DSA (so T1, T2 and T3 all show)."""
    if release_model == "non_public":
        services.assessment_set_release(
            assessment=assessment,
            release_model="non_public",
            recipient_organization="University Hospital Research Unit",
            purpose="Asthma prevalence study",
            agreement_kind="dsa",
            agreement_reference="DSA-2026-014",
        )
        context = {
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 0.001,
            "prevalence_source": "Provincial asthma registry 2025",
        }
    else:
        services.assessment_set_release(assessment=assessment, release_model="public")
        context = {}
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers=context)
    for start in (
        services.assessment_start_risk,
        deidentify.assessment_start_search,
        release_apply.assessment_start_apply,
    ):
        job = start(assessment=assessment, user=analyst)
        job_execute(job_id=str(job.id))
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        assessment.refresh_from_db()
    services.assessment_accept_utility(
        assessment=assessment, note="Ten-year age bands suffice for the prevalence study."
    )
    justify_all(assessment)
    assessment.refresh_from_db()
    return assessment


def decide(assessment, analyst, reviewer, *, decision="approve"):  # type: ignore[no-untyped-def]
    """Submission and decision rows written directly (the review flow is tested elsewhere),
    with the version frozen as a submission freezes it."""
    from apps.reviews.decisions import decision_figures
    from apps.reviews.snapshot import assessment_record, snapshot_take

    submission = Submission.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        submitted_by=analyst,
        note="Ready for review.",
    )
    snapshot_take(assessment=assessment, user=analyst)
    frozen = assessment_record(assessment)
    StepComment.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        step="threshold",
        author=reviewer,
        text="Low invasion of privacy is consistent with the consent on file.",
    )
    record = ReviewDecision.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        submission=submission,
        reviewer=reviewer,
        decision=decision,
        reasons=REASONS,
        version=assessment.version,
        final=True,
        figures=decision_figures(frozen),
        digests=frozen.digests(),
        snapshot=frozen.snapshot,
    )
    assessment.status = (
        AssessmentStatus.APPROVED if decision == "approve" else AssessmentStatus.REJECTED
    )
    assessment.submitted_at = assessment.decided_at = timezone.now()
    assessment.save()
    return record


def run_report_job(monkeypatch, decision):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(
        job_kinds.JOB_HANDLERS, "report", "apps.reports.jobs.report_generate_handler"
    )
    job = job_create(
        organization=decision.organization,
        kind="report",
        subject=f"assessments.assessment:{decision.assessment_id}",
        params={"decision_id": str(decision.id)},
        enqueue=False,
    )
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return job
