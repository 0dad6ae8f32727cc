"""Reads for reviews: the versions of an assessment and their comments."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.assessments.models import Assessment, AssessmentStatus
from apps.reviews.models import MotivatedIntruderTest, ReviewDecision, StepComment, Submission


def version_chain(assessment: Assessment) -> list[Any]:
    """The ids of this version and every earlier version it was revised from, newest first."""
    ids: list[Any] = []
    current_id: Any = assessment.id
    previous_id = assessment.previous_id
    ids.append(current_id)
    while previous_id is not None and previous_id not in ids:
        ids.append(previous_id)
        previous_id = (
            Assessment.objects.filter(id=previous_id).values_list("previous_id", flat=True).first()
        )
    return ids


def comments_of_versions(assessment: Assessment) -> QuerySet[StepComment]:
    """Reviewers' comments on this version and on the versions before it (a revision answers
    the comments of the version it revises)."""
    return (
        StepComment.objects.filter(assessment_id__in=version_chain(assessment))
        .select_related("author", "assessment")
        .order_by("created_at")
    )


def review_queue_for(*, organization: Any, user: Any) -> dict[str, Any]:
    """A reviewer's queue: versions waiting for their decision (submitted, not by them, not
    yet decided by them), oldest first, with how long each has waited; and their own
    recent decisions."""
    from django.utils import timezone

    submitted = (
        Assessment.objects.filter(organization=organization, status=AssessmentStatus.SUBMITTED)
        .select_related("dataset")
        .order_by("submitted_at")
    )
    now = timezone.now()
    waiting: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for assessment in submitted:
        submission = assessment.submissions.order_by("-created_at").first()
        mine_to_decide = (
            submission is not None
            and submission.submitted_by_id != user.pk
            and not submission.decisions.filter(reviewer=user).exists()
        )
        entry = {
            "assessment": assessment,
            "submitted_by": submission.submitted_by if submission else None,
            "waiting_days": (now - assessment.submitted_at).days if assessment.submitted_at else 0,
        }
        (waiting if mine_to_decide else others).append(entry)
    decided_by_me = (
        ReviewDecision.objects.filter(organization=organization, reviewer=user)
        .select_related("assessment")
        .order_by("-created_at")[:20]
    )
    return {"waiting_for_me": waiting, "waiting_for_others": others, "decided_by_me": decided_by_me}


INTRUDER_TESTED_MODELS = ("public", "semi_public")


def intruder_test_status(assessment: Assessment, *, until: Any = None) -> dict[str, Any]:
    """Whether the release's motivated-intruder test was done (public and semi-public
    releases: El Emam's open-data protocol; UK ICO 2025), with the submitter's written
    reason when a public release went without one."""
    tests = MotivatedIntruderTest.objects.filter(assessment_id=assessment.id)
    submissions = Submission.objects.filter(assessment_id=assessment.id)
    if until is not None:
        tests = tests.filter(created_at__lte=until)
        submissions = submissions.filter(created_at__lte=until)
    submission = submissions.order_by("-created_at").first()
    model = assessment.effective_release_model
    count = tests.count()
    return {
        "expected": model in INTRUDER_TESTED_MODELS,
        "required": model == "public",
        "done": count > 0,
        "tests": count,
        "re_identified": sum(t.re_identified for t in tests),
        "waiver": submission.intruder_test_waiver if submission else "",
    }
