"""The motivated-intruder log of issue 28: entries for public and semi-public releases (who
tried, which sources, what was searched, outcome, date); the reviewer sees whether it was
done; a public release submitted without one needs a written reason, kept in the audit
trail and printed in the report."""

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.assessments import services as assessment_services
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.reviews.intruder_tests import intruder_test_record
from apps.reviews.models import MotivatedIntruderTest, Submission
from apps.reviews.selectors import intruder_test_status
from apps.reviews.submissions import assessment_submit, submission_blockers
from tests.reviews.conftest import complete

REASON = "The release holds only counts by region, already published by the ministry."


def entry(assessment, user, **changes):  # type: ignore[no-untyped-def]
    fields = {
        "tester": "R. Tester",
        "tested_on": timezone.localdate(),
        "sources": "Voters list; local newspaper obituaries",
        "method": "Searched the 90+ age band against the obituaries.",
        "outcome": "No one re-identified.",
        **changes,
    }
    return intruder_test_record(assessment=assessment, user=user, **fields)


def test_a_semi_public_release_keeps_a_log_with_its_sources(assessment, analyst):
    assessment_services.assessment_set_release(
        assessment=assessment, release_model="semi_public", recipient_organization="Registered"
    )
    test = entry(assessment, analyst)
    assert test.sources == "Voters list; local newspaper obituaries"
    event = AuditEvent.objects.filter(action="release.intruder_test").latest("sequence")
    assert event.details["sources"] == test.sources
    assert intruder_test_status(assessment) | {"waiver": ""} == {
        "expected": True,
        "required": False,
        "done": True,
        "tests": 1,
        "re_identified": 0,
        "waiver": "",
    }


def test_an_entry_without_its_sources_is_refused(assessment, analyst):
    assessment_services.assessment_set_release(assessment=assessment, release_model="public")
    with pytest.raises(ApplicationError, match="which sources they used"):
        entry(assessment, analyst, sources="  ")
    assert not MotivatedIntruderTest.objects.exists()


@pytest.fixture
def public(assessment, analyst):  # type: ignore[no-untyped-def]
    return complete(assessment, analyst, release_model="public", recipient="")


def test_a_public_release_without_a_test_needs_a_written_reason(public, analyst):
    assert submission_blockers(public) == []
    with pytest.raises(ApplicationError, match="No motivated-intruder test is recorded"):
        assessment_submit(assessment=public, user=analyst, note="Ready.")
    with pytest.raises(ApplicationError, match="at least one full sentence"):
        assessment_submit(
            assessment=public, user=analyst, note="Ready.", intruder_waiver="Not needed."
        )
    assert not Submission.objects.exists()
    assessment_submit(assessment=public, user=analyst, note="Ready.", intruder_waiver=REASON)
    assert Submission.objects.get().intruder_test_waiver == REASON
    event = AuditEvent.objects.filter(action="assessment.submit").latest("sequence")
    assert (event.details["intruder_tests"], event.details["intruder_test_waiver"]) == (0, REASON)


def test_with_a_test_no_reason_is_asked_and_the_reviewer_sees_it_done(
    public, analyst, reviewer, client_for
):
    entry(public, analyst, re_identified=1, outcome="One centenarian found.")
    assessment_submit(assessment=public, user=analyst, note="Ready.")
    assert Submission.objects.get().intruder_test_waiver == ""
    page = client_for(reviewer).get(
        reverse(
            "assessment-review",
            kwargs={"org": public.organization.slug, "assessment_id": public.id},
        )
    )
    html = page.content.decode()
    assert "Done: 1 attempt logged, 1 person re-identified." in html
    assert 'data-testid="review-intruder-missing"' not in html


def test_the_reviewer_sees_a_missing_test_and_the_reason(public, analyst, reviewer, client_for):
    assessment_submit(assessment=public, user=analyst, note="Ready.", intruder_waiver=REASON)
    html = (
        client_for(reviewer)
        .get(
            reverse(
                "assessment-review",
                kwargs={"org": public.organization.slug, "assessment_id": public.id},
            )
        )
        .content.decode()
    )
    assert 'data-testid="review-intruder-missing"' in html
    assert REASON in html


def test_the_api_submits_with_the_reason(public, analyst, client_for):
    api = client_for(analyst)
    path = f"/api/v1/assessments/{public.id}/submit/"
    refused = api.post(path, {"note": "Ready."}, content_type="application/json")
    assert refused.status_code in (400, 409)
    assert "motivated-intruder" in refused.content.decode()
    done = api.post(
        path, {"note": "Ready.", "intruder_waiver": REASON}, content_type="application/json"
    )
    assert done.status_code == 200, done.json()
    assert Submission.objects.get().intruder_test_waiver == REASON
