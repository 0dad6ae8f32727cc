"""What the review announces to the apps above it (subscribed in their ``ready``).

``decision_final`` — a final decision is recorded; sent inside its transaction. ``reports``
subscribes: it queues the decision's signed Step 9 report.

``report_prepare_again`` — provided by ``reports``: prepare again the signed report of each
final decision of a version whose report is missing (the review page's button).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from apps.assessments.models import Assessment
from apps.core.hooks import Hook, Provided
from apps.reviews.models import ReviewDecision


@Hook.declare
def decision_final(*, decision: ReviewDecision, user: User | None) -> None:
    """``decision`` is final (inside the transaction that records it)."""


@Provided.declare
def report_prepare_again(*, assessment: Assessment, user: User) -> list[Any]:
    """The jobs that prepare the missing reports of ``assessment``'s final decisions."""
    raise NotImplementedError
