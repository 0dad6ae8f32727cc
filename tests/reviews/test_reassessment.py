"""Re-assessment (issue 28): the interval of a release by its release model, the triggers
recorded against it (audited), and which releases are due — on hand-set dates."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.assessments.services import assessment_create
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.reviews.models import ReassessmentTrigger, ReleaseRecord
from apps.reviews.reassessment import (
    REASSESSMENT_MONTHS,
    add_months,
    default_interval,
    registry_rows,
    release_interval_set,
    trigger_record,
    trigger_resolve,
)
from tests.assessments.conftest import assessment, classified, ready_dataset  # noqa: F401

TODAY = dt.date(2026, 11, 26)


def _release(custodian, analyst, dataset, *, title, model, approved):  # type: ignore[no-untyped-def]
    """A registry entry approved on ``approved`` with its model's default interval."""
    months = default_interval(model)
    return ReleaseRecord.objects.create(
        organization=custodian,
        assessment=assessment_create(
            organization=custodian, dataset=dataset, user=analyst, title=title
        ),
        dataset_name=dataset.name,
        recipient="University X",
        release_model=model,
        quasi_identifiers=["age", "sex"],
        decided_at=timezone.make_aware(dt.datetime.combine(approved, dt.time(12))),
        reassess_months=months,
        reassess_on=add_months(approved, months),
    )


@pytest.fixture
def registry(custodian, analyst, classified):  # noqa: F811
    return {
        # public, approved 2025-11-20: 12 months passed on 2026-11-20 → due
        "public_old": _release(
            custodian,
            analyst,
            classified,
            title="A",
            model="public",
            approved=dt.date(2025, 11, 20),
        ),
        # public, approved 2025-12-01: due on 2026-12-01, not yet
        "public_recent": _release(
            custodian, analyst, classified, title="B", model="public", approved=dt.date(2025, 12, 1)
        ),
        # non-public, approved 2025-01-10: 24 months → 2027-01-10, not yet
        "non_public": _release(
            custodian,
            analyst,
            classified,
            title="C",
            model="non_public",
            approved=dt.date(2025, 1, 10),
        ),
    }


def test_default_interval_by_release_model():
    assert REASSESSMENT_MONTHS == {"public": 12, "semi_public": 12, "non_public": 24}
    assert add_months(dt.date(2024, 2, 29), 12) == dt.date(2025, 2, 28)
    assert add_months(dt.date(2025, 1, 31), 1) == dt.date(2025, 2, 28)
    assert add_months(dt.date(2025, 1, 10), 24) == dt.date(2027, 1, 10)


def test_due_list_from_the_interval_and_open_triggers(registry, custodian, analyst, reviewer):
    organization = custodian
    due = registry_rows(organization=organization, today=TODAY, show="due")
    assert [r["record"].id for r in due] == [registry["public_old"].id]
    assert due[0]["reasons"] == ["interval of 12 months passed on 2026-11-20"]

    # an incident against the non-public release makes it due at once, whatever its date
    trigger = trigger_record(
        record=registry["non_public"],
        user=reviewer,
        kind="incident",
        occurred_on=dt.date(2026, 11, 2),
        note="The recipient reported a laptop stolen with the data on it.",
    )
    due = registry_rows(organization=organization, today=TODAY, show="due")
    assert {r["record"].id for r in due} == {registry["public_old"].id, registry["non_public"].id}
    (row,) = [r for r in due if r["record"].id == registry["non_public"].id]
    assert row["reasons"] == ["incident on 2026-11-02"]
    not_due = registry_rows(organization=organization, today=TODAY, show="not_due")
    assert [r["record"].id for r in not_due] == [registry["public_recent"].id]
    # the day the recent public release's year ends, it is due too
    on_the_day = registry_rows(organization=organization, today=dt.date(2026, 12, 1), show="due")
    assert registry["public_recent"].id in {r["record"].id for r in on_the_day}

    # resolved, the trigger no longer makes the release due
    trigger_resolve(trigger=trigger, user=analyst, note="Re-assessed as version 2 and approved.")
    due = registry_rows(organization=organization, today=TODAY, show="due")
    assert [r["record"].id for r in due] == [registry["public_old"].id]
    assert AuditEvent.objects.filter(action="release.trigger").count() == 1
    assert AuditEvent.objects.filter(action="release.trigger_resolved").count() == 1
    with pytest.raises(ApplicationError, match="already resolved"):
        trigger_resolve(trigger=trigger, user=analyst, note="Again.")


def test_interval_change_moves_the_due_date(registry, analyst):
    record = release_interval_set(record=registry["public_old"], user=analyst, months=18)
    assert (record.reassess_months, record.reassess_on) == (18, dt.date(2027, 5, 20))
    organization = record.organization
    assert registry_rows(organization=organization, today=TODAY, show="due") == []
    event = AuditEvent.objects.get(action="release.interval")
    assert event.details["from_months"] == 12 and event.details["to_months"] == 18
    for bad in (0, 61, "12", True):
        with pytest.raises(ApplicationError, match="whole number of months"):
            release_interval_set(record=record, user=analyst, months=bad)


def test_trigger_input_is_checked(registry, analyst):
    record = registry["public_recent"]
    with pytest.raises(ApplicationError, match="'leak' is not a re-assessment trigger"):
        trigger_record(
            record=record, user=analyst, kind="leak", occurred_on=TODAY, note="Something."
        )
    with pytest.raises(ApplicationError, match="in the future"):
        trigger_record(
            record=record,
            user=analyst,
            kind="new_public_data",
            occurred_on=timezone.localdate() + dt.timedelta(days=1),
            note="A voters' list is to be published.",
        )
    with pytest.raises(ApplicationError, match="Say what happened"):
        trigger_record(
            record=record, user=analyst, kind="new_recipient", occurred_on=TODAY, note=" "
        )
    assert not ReassessmentTrigger.objects.exists()


def test_registry_page_and_api_filter(registry, analyst, reviewer, outsider, client_for):
    organization = registry["public_old"].organization
    page = client_for(reviewer).get(f"/o/{organization.slug}/releases/?show=due")
    body = page.content.decode()
    assert f'data-testid="release-{registry["public_old"].id}"' in body
    assert f'data-testid="release-{registry["public_recent"].id}"' not in body
    posted = client_for(analyst).post(
        f"/o/{organization.slug}/releases/{registry['public_recent'].id}/reassessment/",
        {
            "action": "trigger",
            "kind": "new_recipient",
            "occurred_on": "2026-11-01",
            "note": "A second university asked for the same extract.",
        },
    )
    assert posted.status_code == 302
    api = client_for(reviewer).get(f"/api/v1/releases/?organization={organization.slug}&show=due")
    assert api.status_code == 200
    ids = {row["id"] for row in api.json()}
    assert str(registry["public_recent"].id) in ids  # open trigger
    assert (
        client_for(outsider).get(f"/api/v1/releases/?organization={organization.slug}").status_code
        == 404
    )
    made = client_for(reviewer).post(
        f"/api/v1/releases/{registry['non_public'].id}/triggers/",
        {"kind": "scheduled_review", "occurred_on": "2026-11-20", "note": "Annual audit."},
        content_type="application/json",
    )
    assert made.status_code == 201, made.content
    put = client_for(analyst).put(
        f"/api/v1/releases/{registry['non_public'].id}/interval/",
        {"months": 6},
        content_type="application/json",
    )
    assert put.status_code == 200 and put.json()["reassess_on"] == "2025-07-10"
