"""The release registry: an approved release entered from its frozen record, the earlier
releases to the same recipient it overlaps with, and the e-mails for releases due for
re-assessment (the intervals and triggers are in ``apps.reviews.reassessment``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from apps.accounts.models import Membership, Role
from apps.assessments.models import Assessment
from apps.assessments.selectors import quasi_identifiers as current_quasi_identifiers
from apps.audit.services import audit_record
from apps.reviews.models import ReleaseRecord
from apps.reviews.reassessment import default_interval, reassess_on
from apps.reviews.snapshot import AssessmentRecord


def release_overlaps(
    assessment: Assessment, quasi_identifiers: list[str] | None = None
) -> list[dict[str, Any]]:
    """Earlier releases to the same recipient sharing quasi-identifiers with this one: their
    combination could be linked back by the recipient (IPC governance). The quasi-identifiers
    are the data set's current ones unless given (a frozen record's)."""
    recipient = assessment.recipient_organization.strip().lower()
    if not recipient:
        return []
    quasi = set(
        current_quasi_identifiers(assessment) if quasi_identifiers is None else quasi_identifiers
    )
    overlaps = []
    earlier = ReleaseRecord.objects.filter(organization=assessment.organization).exclude(
        assessment__dataset=assessment.dataset, assessment__title=assessment.title
    )
    for record in earlier:
        if record.recipient.strip().lower() != recipient or record.assessment_id == assessment.id:
            continue
        shared = sorted(quasi & set(record.quasi_identifiers))
        if shared:
            overlaps.append(
                {
                    "release": str(record.id),
                    "assessment": str(record.assessment_id),
                    "dataset": record.dataset_name,
                    "decided_at": record.decided_at.isoformat(),
                    "shared_quasi_identifiers": shared,
                }
            )
    return overlaps


def release_register(*, assessment: Assessment, record: AssessmentRecord) -> ReleaseRecord:
    """Enter an approved release in the registry, from its frozen record."""
    now = timezone.now()
    frozen = record.assessment
    quasi = record.quasi_identifiers
    return ReleaseRecord.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        dataset_name=assessment.dataset.name,
        recipient=frozen.recipient_organization or "Public",
        release_model=frozen.effective_release_model,
        quasi_identifiers=quasi,
        decided_at=now,
        reassess_months=default_interval(frozen.effective_release_model),
        reassess_on=reassess_on(now, default_interval(frozen.effective_release_model)),
        overlaps=release_overlaps(frozen, quasi),
    )


def reassessment_reminders(*, today: dt.date | None = None) -> list[ReleaseRecord]:
    """E-mail the organization's analysts and admins about releases due for re-assessment."""
    today = today or timezone.localdate()
    due = list(
        ReleaseRecord.objects.filter(
            reassess_on__lte=today, reminder_sent_at__isnull=True
        ).select_related("organization", "assessment")
    )
    for record in due:
        emails = [
            m.user.email
            for m in Membership.objects.filter(
                organization=record.organization, role__in=[Role.ANALYST, Role.ADMIN]
            ).select_related("user")
        ]
        send_mail(
            f"[deidweb] Re-assessment due: {record.assessment.title}",
            f"The release of '{record.dataset_name}' to {record.recipient} "
            f"(approved {record.decided_at:%Y-%m-%d}) was due for re-assessment on "
            f"{record.reassess_on:%Y-%m-%d}.",
            settings.DEFAULT_FROM_EMAIL,
            [e for e in emails if e],
            fail_silently=True,
        )
        record.reminder_sent_at = timezone.now()
        record.save(update_fields=["reminder_sent_at", "updated_at"])
        audit_record(
            organization=record.organization,
            actor=None,
            action="release.reminder",
            obj=record.assessment,
            details={"reassess_on": record.reassess_on.isoformat()},
        )
    return due
