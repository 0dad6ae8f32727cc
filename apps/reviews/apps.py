from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.apps import AppConfig


def decision_anchors(organization: Any) -> Iterable[tuple[str, int, str]]:
    """Where each decision recorded the audit chain's head (printed in its signed report)."""
    # lazy: apps.py is imported before the models are loaded
    from apps.reviews.models import ReviewDecision

    if organization is None:
        return []
    rows: Iterable[tuple[Any, int, int, str]] = ReviewDecision.objects.filter(  # type: ignore[assignment]
        organization=organization, audit_sequence__isnull=False
    ).values_list("id", "version", "audit_sequence", "audit_hash")
    return [
        (f"the decision {decision_id} on version {version}", sequence, anchored)
        for decision_id, version, sequence, anchored in rows
    ]


class ReviewsConfig(AppConfig):
    name = "apps.reviews"
    label = "reviews"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.assessments import hooks as assessment_hooks
        from apps.audit.services import ANCHOR_PROVIDERS
        from apps.reviews.release import release_file_open
        from apps.reviews.submissions import submission_blockers

        # The assessments' pages and API: the overview's blockers, the approved download.
        assessment_hooks.submission_blockers.provide(submission_blockers)
        assessment_hooks.release_file_open.provide(release_file_open)

        if decision_anchors not in ANCHOR_PROVIDERS:
            ANCHOR_PROVIDERS.append(decision_anchors)
