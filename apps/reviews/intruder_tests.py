"""The motivated-intruder log of a public or semi-public release (El Emam's open-data
protocol; UK ICO 2025): who tried to re-identify people in it, with which sources, and what
came of it (whether one was done is read by ``apps.reviews.selectors.intruder_test_status``)."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.accounts.selectors import membership_get
from apps.assessments.models import Assessment
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.reviews.models import MotivatedIntruderTest
from apps.reviews.selectors import INTRUDER_TESTED_MODELS

MAX_RE_IDENTIFIED = 2**31 - 1  # PositiveIntegerField


@transaction.atomic
def intruder_test_record(
    *,
    assessment: Assessment,
    user: User,
    tester: str,
    tested_on: dt.date,
    method: str,
    outcome: str,
    re_identified: int = 0,
    sources: str = "",
) -> MotivatedIntruderTest:
    """One entry of the motivated-intruder log: who tried, which sources, what was searched
    (``method``), the outcome and the date."""
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError(
            "Only analysts and administrators record intruder tests.", status=403
        )
    if assessment.effective_release_model not in INTRUDER_TESTED_MODELS:
        raise ApplicationError(
            "A motivated-intruder test is recorded for public and semi-public releases."
        )
    if not (tester.strip() and sources.strip() and method.strip() and outcome.strip()):
        raise ApplicationError(
            "Say who tested, which sources they used, what they searched, and what came of it."
        )
    today = timezone.localdate()
    if tested_on > today:
        raise ApplicationError(
            f"The test date {tested_on.isoformat()} is in the future: record a test once it "
            f"has been done (today is {today.isoformat()}).",
            {"field": "tested_on"},
        )
    # No more people can be found than there are records (the count also fits its column).
    records = assessment.dataset.rows or MAX_RE_IDENTIFIED
    if isinstance(re_identified, bool) or not 0 <= re_identified <= records:
        raise ApplicationError(
            f"The number of people re-identified must be a whole number from 0 to {records} "
            "(the records in the data set).",
            {"field": "re_identified"},
        )
    test = MotivatedIntruderTest.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        tester=tester.strip(),
        tested_on=tested_on,
        sources=sources.strip(),
        method=method.strip(),
        outcome=outcome.strip(),
        re_identified=re_identified,
        recorded_by=user,
    )
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="release.intruder_test",
        obj=assessment,
        details={
            "tester": test.tester,
            "tested_on": tested_on.isoformat(),
            "sources": test.sources,
            "re_identified": re_identified,
        },
    )
    return test
