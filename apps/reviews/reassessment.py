"""Re-assessment of released data (issue 28): the interval of each release, the triggers
recorded against it, and which releases are due.

ISO/IEC 27559:2022 asks that a release be re-evaluated and monitored after it is made
(§8.3.4, §9.3.2), and the UK ICO's anonymisation guidance (2025) that the assessment be
reviewed regularly and whenever circumstances change. Neither fixes a period, so the
defaults below are deidweb's own, chosen by release model: data that anyone can obtain
(public) or that goes out under conditions the custodian does not enforce (semi-public)
cannot be recalled, and the public data an intruder could link to it keeps growing, so it is
reviewed every year; a non-public release is held under a data sharing agreement whose
controls the custodian audits, so every two years. Each release's interval can be changed
(audited).

A release is due when its interval has passed since approval, or when a trigger is open
against it: new public data that could be linked, a new recipient, an incident, or a
scheduled review. A trigger stays open until someone records what was done about it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import User
from django.db import models, transaction
from django.utils import timezone

from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.reviews.models import ReassessmentTrigger, ReleaseRecord

# Months between approval and re-assessment, by release model (module docstring).
REASSESSMENT_MONTHS = {"public": 12, "semi_public": 12, "non_public": 24}
DEFAULT_MONTHS = 12
MAX_MONTHS = 60
FILTERS = ("all", "due", "not_due")


def default_interval(release_model: str) -> int:
    return REASSESSMENT_MONTHS.get(release_model, DEFAULT_MONTHS)


def add_months(day: dt.date, months: int) -> dt.date:
    month = day.month - 1 + months
    year = day.year + month // 12
    month = month % 12 + 1
    for last in (31, 30, 29, 28):
        try:
            return dt.date(year, month, min(day.day, last))
        except ValueError:
            continue
    raise ValueError(day)  # pragma: no cover


def reassess_on(decided_at: dt.datetime, months: int) -> dt.date:
    return add_months(timezone.localdate(decided_at), months)


def _can_record(user: User, organization: Organization) -> None:
    membership = membership_get(user=user, organization=organization)
    if not (membership.can_edit or membership.can_review):
        raise ApplicationError(
            "Only analysts, reviewers and administrators record re-assessment.", status=403
        )


@transaction.atomic
def release_interval_set(*, record: ReleaseRecord, user: User, months: int) -> ReleaseRecord:
    """Change a release's re-assessment interval; its due date follows. Audited."""
    _can_record(user, record.organization)
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_MONTHS:
        raise ApplicationError(
            f"The re-assessment interval is a whole number of months from 1 to {MAX_MONTHS}, "
            f"not {months!r}.",
            {"field": "months"},
        )
    locked = ReleaseRecord.objects.select_for_update().get(id=record.id)
    before = (locked.reassess_months, locked.reassess_on.isoformat())
    locked.reassess_months = months
    locked.reassess_on = reassess_on(locked.decided_at, months)
    locked.reminder_sent_at = None
    locked.save(update_fields=["reassess_months", "reassess_on", "reminder_sent_at", "updated_at"])
    audit_record(
        organization=locked.organization,
        actor=user,
        action="release.interval",
        obj=locked.assessment,
        details={
            "release": str(locked.id),
            "from_months": before[0],
            "to_months": months,
            "from_reassess_on": before[1],
            "reassess_on": locked.reassess_on.isoformat(),
        },
    )
    return locked


@transaction.atomic
def trigger_record(
    *, record: ReleaseRecord, user: User, kind: str, occurred_on: dt.date, note: str
) -> ReassessmentTrigger:
    """Record why a release must be re-assessed now. Audited."""
    _can_record(user, record.organization)
    if kind not in ReassessmentTrigger.Kind.values:
        raise ApplicationError(
            f"'{kind}' is not a re-assessment trigger (one of "
            f"{', '.join(ReassessmentTrigger.Kind.values)}).",
            {"field": "kind"},
        )
    if occurred_on > timezone.localdate():
        raise ApplicationError(
            f"The trigger's date {occurred_on.isoformat()} is in the future.",
            {"field": "occurred_on"},
        )
    if not note.strip():
        raise ApplicationError("Say what happened (which data, recipient or incident).")
    trigger = ReassessmentTrigger.objects.create(
        organization=record.organization,
        release=record,
        kind=kind,
        occurred_on=occurred_on,
        note=note.strip(),
        recorded_by=user,
    )
    audit_record(
        organization=record.organization,
        actor=user,
        action="release.trigger",
        obj=record.assessment,
        details={
            "release": str(record.id),
            "trigger": str(trigger.id),
            "kind": kind,
            "occurred_on": occurred_on.isoformat(),
            "note": trigger.note,
        },
    )
    return trigger


@transaction.atomic
def trigger_resolve(*, trigger: ReassessmentTrigger, user: User, note: str) -> ReassessmentTrigger:
    """Close a trigger with what was done about it (a new version assessed, or why none is
    needed). Audited."""
    _can_record(user, trigger.organization)
    locked = ReassessmentTrigger.objects.select_for_update().get(id=trigger.id)
    if locked.resolved_at is not None:
        raise ApplicationError("This trigger is already resolved.", status=409)
    if not note.strip():
        raise ApplicationError("Say what was done about the trigger.")
    locked.resolved_at = timezone.now()
    locked.resolved_by = user
    locked.resolution = note.strip()
    locked.save(update_fields=["resolved_at", "resolved_by", "resolution", "updated_at"])
    audit_record(
        organization=locked.organization,
        actor=user,
        action="release.trigger_resolved",
        obj=locked.release.assessment,
        details={"trigger": str(locked.id), "resolution": locked.resolution},
    )
    return locked


def due_reasons(record: ReleaseRecord, today: dt.date, open_triggers: list[Any]) -> list[str]:
    reasons = []
    if record.reassess_on <= today:
        reasons.append(
            f"interval of {record.reassess_months} months passed on {record.reassess_on}"
        )
    for trigger in open_triggers:
        reasons.append(f"{trigger.get_kind_display().lower()} on {trigger.occurred_on}")
    return reasons


def registry_rows(
    *, organization: Organization, today: dt.date | None = None, show: str = "all"
) -> list[dict[str, Any]]:
    """The release registry with each release's due state: ``show`` "due" keeps the releases
    due (interval passed or a trigger open), "not_due" the others."""
    if show not in FILTERS:
        raise ApplicationError(
            f"'{show}' is not a filter of the registry ({', '.join(FILTERS)}).", {"field": "show"}
        )
    today = today or timezone.localdate()
    records = (
        ReleaseRecord.objects.filter(organization=organization)
        .select_related("assessment")
        .prefetch_related(
            models.Prefetch(
                "triggers",
                queryset=ReassessmentTrigger.objects.order_by("occurred_on"),
                to_attr="all_triggers",
            )
        )
    )
    rows = []
    for record in records:
        open_triggers = [t for t in record.all_triggers if t.resolved_at is None]
        reasons = due_reasons(record, today, open_triggers)
        due = bool(reasons)
        if (show == "due" and not due) or (show == "not_due" and due):
            continue
        rows.append(
            {
                "record": record,
                "due": due,
                "reasons": reasons,
                "open_triggers": open_triggers,
                "triggers": record.all_triggers,
            }
        )
    return rows


__all__ = [
    "REASSESSMENT_MONTHS",
    "default_interval",
    "registry_rows",
    "release_interval_set",
    "trigger_record",
    "trigger_resolve",
]
