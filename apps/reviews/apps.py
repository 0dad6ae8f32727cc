from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.apps import AppConfig


def decision_anchors(organization: Any) -> Iterable[tuple[str, int, str]]:
    """Where each decision recorded the audit chain's head (printed in its signed report)."""
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
        from apps.audit.services import ANCHOR_PROVIDERS

        if decision_anchors not in ANCHOR_PROVIDERS:
            ANCHOR_PROVIDERS.append(decision_anchors)
