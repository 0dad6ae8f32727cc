"""Reads for reviews: the versions of an assessment and their comments."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.assessments.models import Assessment
from apps.reviews.models import StepComment


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
