"""The reviewer reads the solution that was applied, not the search's optimum: the analyst
picks the alternative that keeps every record (age suppressed, sex kept) on the Step 7 page,
applies it and submits; the reviewer's page says so in words, with labelled charts.
Chromium, a real worker, Redis and PostgreSQL."""

import pytest
from playwright.sync_api import expect

from apps.assessments.models import Assessment
from tests.browser.prepared import justify_on_step_7, reload_when_settled, trade_off_at_step_7
from tests.browser.test_review_flow import sign_in
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]
TIMEOUT = 120_000


def test_the_reviewer_sees_the_applied_alternative(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian
):
    assessment = trade_off_at_step_7(custodian, analyst)

    base = live_server.url
    step7 = f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps/deidentify/"
    ana = sign_in(browser, base, "analyst")
    ana.goto(step7)
    ana.get_by_test_id("run-search").click()
    expect(ana.get_by_test_id("optimum")).to_be_visible(timeout=TIMEOUT)
    # The alternative that keeps every record: age suppressed, 0 records suppressed.
    ana.get_by_test_id("choose-0").click()
    expect(ana.get_by_test_id("chosen")).to_be_visible()
    ana.get_by_test_id("apply").click()
    apply_job = Assessment.objects.get(id=assessment.id).apply_job_id
    assert wait_for_job(apply_job, timeout=120).status == "succeeded"
    reload_when_settled(ana)
    expect(ana.get_by_test_id("applied")).to_contain_text("meets the target", timeout=TIMEOUT)
    assert justify_on_step_7(ana, "The study needs sex and diagnosis, not exact ages.") >= 1
    ana.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps/utility/")
    ana.get_by_label("Why the remaining utility is acceptable for the purpose").fill(
        "Sex and diagnosis are what the study needs."
    )
    ana.get_by_test_id("accept-utility").click()
    ana.get_by_test_id("submit-note").fill("The alternative keeps every record.")
    ana.get_by_test_id("submit-intruder-waiver").fill(
        "Open-data release of counts already published; the custodian waived the test."
    )
    ana.get_by_test_id("submit").click()
    expect(ana.get_by_test_id("status")).to_have_text("Submitted for review")

    rev = sign_in(browser, base, "reviewer")
    rev.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/review/")
    applied = rev.get_by_test_id("applied-solution")
    expect(applied).to_contain_text("an alternative from the search's trade-off set")
    expect(applied.get_by_test_id("applied-level")).to_have_text(
        ["age: suppressed (*)", "sex: kept as is"]
    )
    expect(applied).to_contain_text("would have been: age: intervals of 5 · sex: kept as is")
    expect(applied).to_contain_text("Records suppressed: 0 of 400")
    expect(applied.locator("svg")).to_have_count(2)  # class sizes before/after, alternatives
    expect(applied).to_contain_text("released file (Step 7)")
    expect(rev.get_by_test_id("frozen-record")).to_be_visible()
