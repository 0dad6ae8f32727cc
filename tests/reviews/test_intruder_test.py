"""A motivated-intruder test is recorded only as it can have happened: done by today, with
0 to (records in the release) people re-identified (issue 15: these were server errors)."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.assessments import services as assessment_services
from apps.core.errors import ApplicationError
from apps.reviews.intruder_tests import intruder_test_record
from apps.reviews.models import MotivatedIntruderTest


@pytest.fixture
def public(assessment):
    assessment_services.assessment_set_release(assessment=assessment, release_model="public")
    assessment.refresh_from_db()
    return assessment


def record(assessment, user, **changes):
    fields = {
        "tester": "R. Tester",
        "tested_on": timezone.localdate(),
        "sources": "The provincial voters list",
        "method": "Linked the release to the voters list.",
        "outcome": "No one re-identified.",
        "re_identified": 0,
        **changes,
    }
    return intruder_test_record(assessment=assessment, user=user, **fields)


def form(client, assessment, **changes):
    url = reverse(
        "assessment-intruder-test",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id},
    )
    data = {
        "tester": "R. Tester",
        "tested_on": timezone.localdate().isoformat(),
        "sources": "The provincial voters list",
        "method": "Linked the release to the voters list.",
        "outcome": "Two people found.",
        "re_identified": "2",
        **changes,
    }
    response = client.post(url, data, follow=True)
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


@pytest.mark.parametrize("count", [-1, 11, 10**12])
def test_a_count_outside_0_to_the_records_of_the_release_is_refused(public, analyst, count):
    with pytest.raises(ApplicationError, match=r"from 0 to 10 \(the records in the data set\)"):
        record(public, analyst, re_identified=count)
    assert not MotivatedIntruderTest.objects.exists()


def test_a_test_dated_in_the_future_is_refused(public, analyst):
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    with pytest.raises(ApplicationError, match=f"{tomorrow.isoformat()} is in the future"):
        record(public, analyst, tested_on=tomorrow)
    assert not MotivatedIntruderTest.objects.exists()


def test_a_test_done_today_with_every_record_found_is_kept(public, analyst):
    test = record(public, analyst, re_identified=10)
    assert (test.re_identified, test.tested_on) == (10, timezone.localdate())


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"re_identified": "-1"}, "from 0 to 10"),
        ({"re_identified": "99999999999999999999"}, "from 0 to 10"),
        ({"re_identified": "two"}, "re-identified count as a number"),
        ({"tested_on": "2999-01-01"}, "2999-01-01 is in the future"),
        ({"tested_on": "yesterday"}, "YYYY-MM-DD"),
    ],
)
def test_the_form_says_what_is_wrong_and_records_nothing(
    client_for, analyst, public, changes, fragment
):
    shown = form(client_for(analyst), public, **changes)
    assert any(fragment in m for m in shown), shown
    assert not MotivatedIntruderTest.objects.exists()


def test_the_form_records_a_good_test(client_for, analyst, public):
    shown = form(client_for(analyst), public)
    assert shown == ["Motivated-intruder test recorded."]
    assert MotivatedIntruderTest.objects.get().re_identified == 2
