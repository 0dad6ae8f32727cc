"""Submission, decisions and versions (IPC step 9 / governance)."""

import datetime as dt

import pytest
from django.core import mail

from apps.assessments import services as assessment_services
from apps.assessments.models import Assessment
from apps.core.errors import ApplicationError
from apps.jobs.models import Job
from apps.reviews.decisions import assessment_revise, review_decide, step_comment_add
from apps.reviews.intruder_tests import intruder_test_record
from apps.reviews.models import ReleaseRecord, ReviewDecision
from apps.reviews.registry import reassessment_reminders, release_overlaps
from apps.reviews.submissions import assessment_submit, submission_blockers
from tests.reviews.conftest import complete


def test_incomplete_assessment_cannot_be_submitted(assessment, analyst):
    with pytest.raises(ApplicationError, match="Step 1 \\(Release model\\) is not done"):
        assessment_submit(assessment=assessment, user=analyst, note="please")


def test_submit_freezes_and_notifies_reviewers(
    complete_assessment, analyst, reviewer, django_capture_on_commit_callbacks
):
    reviewer.email = "rev@example.org"
    reviewer.save()
    with django_capture_on_commit_callbacks(execute=True):
        assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    complete_assessment.refresh_from_db()
    assert complete_assessment.status == "submitted"
    assert [m.to for m in mail.outbox] == [["rev@example.org"]]
    assert "Review requested" in mail.outbox[0].subject
    with pytest.raises(ApplicationError, match="frozen"):
        assessment_services.assessment_set_release(
            assessment=complete_assessment, release_model="public"
        )
    with pytest.raises(ApplicationError, match="only a draft can be submitted"):
        assessment_submit(assessment=complete_assessment, user=analyst, note="again")


def test_no_self_approval(complete_assessment, admin_user):
    assessment_submit(assessment=complete_assessment, user=admin_user, note="Ready")
    with pytest.raises(ApplicationError, match="another reviewer must decide"):
        review_decide(
            assessment=complete_assessment, reviewer=admin_user, decision="approve", reasons="fine"
        )


def test_analyst_cannot_decide_and_reasons_are_required(complete_assessment, analyst, reviewer):
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    with pytest.raises(ApplicationError, match="Only reviewers"):
        review_decide(
            assessment=complete_assessment, reviewer=analyst, decision="approve", reasons="x"
        )
    with pytest.raises(ApplicationError, match="Give the reasons"):
        review_decide(
            assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons=" "
        )


def test_reject_then_revise_then_approve(
    complete_assessment, analyst, reviewer, django_capture_on_commit_callbacks
):
    analyst.email = "ana@example.org"
    analyst.save()
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    step_comment_add(
        assessment=complete_assessment,
        author=reviewer,
        step="threshold",
        text="Sensitivity is high for HIV status.",
    )
    with django_capture_on_commit_callbacks(execute=True):
        decision = review_decide(
            assessment=complete_assessment,
            reviewer=reviewer,
            decision="reject",
            reasons="Threshold too lax.",
        )
    v1 = Assessment.objects.get(id=complete_assessment.id)
    assert (v1.status, decision.final, decision.version) == ("rejected", True, 1)
    assert "rejected" in mail.outbox[-1].subject and mail.outbox[-1].to == ["ana@example.org"]
    assert Job.objects.filter(kind="report", params__decision_id=str(decision.id)).exists()
    # The figures and digests the decision rested on are frozen with it.
    assert decision.figures["threshold"] == 0.1 and decision.figures["passes"] is True
    assert (
        decision.digests["upload"] == v1.dataset.sha256
        and len(decision.digests["release_parquet"]) == 64
    )

    with pytest.raises(ApplicationError, match="frozen"):
        assessment_services.assessment_set_threshold(
            assessment=v1, profile="ontario_ipc_2016", answers={}
        )
    v2 = assessment_revise(assessment=v1, user=analyst)
    assert (v2.version, v2.status, v2.previous_id) == (2, "draft", v1.id)
    assert v2.hierarchies.count() == v1.hierarchies.count() == 2
    with pytest.raises(ApplicationError, match="already revised"):
        assessment_revise(assessment=v1, user=analyst)
    # Fix: a high invasion of privacy; the rest recomputed; v1 stays exactly as decided.
    from tests.assessments.conftest import HIGH_ANSWERS

    assessment_services.assessment_set_threshold(
        assessment=v2, profile="ontario_ipc_2016", answers=HIGH_ANSWERS
    )
    assert submission_blockers(v2)  # Step 7 and 8 are stale now
    complete(v2, analyst)
    assessment_submit(assessment=v2, user=analyst, note="Threshold raised to high.")
    approval = review_decide(
        assessment=v2, reviewer=reviewer, decision="approve", reasons="OK now."
    )
    v2.refresh_from_db()
    v1.refresh_from_db()
    assert (v2.status, approval.final, approval.version) == ("approved", True, 2)
    assert v1.status == "rejected" and v1.threshold_result["value"] == 0.1
    record = ReleaseRecord.objects.get(assessment=v2)
    assert record.recipient == "University X" and record.quasi_identifiers == ["age", "sex"]
    assert (
        record.reassess_on.year == record.decided_at.year + 1
        or record.reassess_on > dt.date.today()
    )


def test_two_approvals_setting(
    complete_assessment, analyst, reviewer, admin_user, user_factory, custodian
):
    custodian.require_two_approvals = True
    custodian.save()
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    first = review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="ok"
    )
    complete_assessment.refresh_from_db()
    assert (first.final, complete_assessment.status) == (False, "submitted")
    assert not Job.objects.filter(kind="report").exists()
    with pytest.raises(ApplicationError, match="already decided"):
        review_decide(
            assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="again"
        )
    second = review_decide(
        assessment=complete_assessment, reviewer=admin_user, decision="approve", reasons="ok too"
    )
    complete_assessment.refresh_from_db()
    assert (second.final, complete_assessment.status) == (True, "approved")
    assert (
        ReviewDecision.objects.filter(assessment=complete_assessment, decision="approve").count()
        == 2
    )


def test_overlapping_release_to_the_same_recipient_is_flagged(
    complete_assessment, analyst, reviewer, custodian, classified
):
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="ok"
    )
    second = assessment_services.assessment_create(
        organization=custodian, dataset=classified, user=analyst, title="Second release"
    )
    complete(second, analyst, recipient="university x ")
    overlaps = release_overlaps(second)
    assert overlaps and overlaps[0]["shared_quasi_identifiers"] == ["age", "sex"]


def test_reassessment_reminder_is_sent_once(complete_assessment, analyst, reviewer):
    analyst.email = "ana@example.org"
    analyst.save()
    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="ok"
    )
    record = ReleaseRecord.objects.get()
    assert reassessment_reminders(today=record.reassess_on - dt.timedelta(days=1)) == []
    assert reassessment_reminders(today=record.reassess_on) == [record]
    assert "Re-assessment due" in mail.outbox[-1].subject
    assert reassessment_reminders(today=record.reassess_on) == []


def test_intruder_test_only_for_public_releases(complete_assessment, analyst, assessment):
    with pytest.raises(ApplicationError, match="public releases"):
        intruder_test_record(
            assessment=complete_assessment,
            user=analyst,
            tester="T",
            tested_on=dt.date(2026, 11, 1),
            method="m",
            outcome="o",
        )
