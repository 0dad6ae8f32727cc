"""Step 4 in Chromium: the analyst states that the release is a sample of Yukon's
population, measures, and reads the attacker models and the population estimate
(real worker, Redis and PostgreSQL)."""

import math

import pytest
from playwright.sync_api import Page, expect

from apps.assessments import services
from tests.assessments.conftest import (  # noqa: F401  # fixtures of the step tests
    LOW_ANSWERS,
    assessment,
    classified,
    ready_dataset,
)
from tests.browser.prepared import reload_when_settled
from tests.browser.test_assessment_flow import TIMEOUT, sign_in
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

YUKON = 40_232  # Statistics Canada, 2021 Census


def zayatz_people(big: int) -> float:
    """Zayatz by hand for the fixture's classes 1, 2, 3, 4 (n = 10, one sample unique)."""
    n = 10
    chance = [
        k * (n / big) * math.prod((big - n - j) / (big - 1 - j) for j in range(k - 1))
        for k in (1, 2, 3, 4)
    ]
    return (chance[0] / sum(chance)) / (n / big)


def test_step_4_shows_attacker_models_and_population_uniques(
    celery_worker_process,
    live_server,
    page: Page,
    analyst,
    custodian,
    assessment,  # noqa: F811
):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    base = live_server.url
    sign_in(page, base, "analyst", "pw-analyst")
    page.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps/data-risk/")

    page.get_by_test_id("population-form").locator("summary").click()
    page.get_by_label("Yes — of a region's population").check()
    page.get_by_label("Region", exact=True).select_option("yukon")
    page.get_by_test_id("run-risk").click()
    assessment.refresh_from_db()
    assert assessment.population == {"region": "yukon"}
    assert wait_for_job(assessment.risk_job_id, timeout=120).status == "succeeded"
    reload_when_settled(page)

    attackers = page.get_by_test_id("attacker-models")
    expect(attackers).to_be_visible(timeout=TIMEOUT)
    # 4 classes / 10 records; every record's risk is above the target 0.1
    # four significant digits: a risk of exactly 1 reads "1"
    expect(page.get_by_test_id("prosecutor").locator("td").first).to_have_text("1")
    expect(page.get_by_test_id("prosecutor")).to_contain_text("100.00%")
    expect(page.get_by_test_id("marketer")).to_contain_text("40.00%")
    table = page.get_by_test_id("population-uniqueness")
    expect(table).to_contain_text("Yukon: Statistics Canada, 2021 Census")
    expect(page.get_by_test_id("population-pitman")).to_contain_text("not available")
    share = zayatz_people(YUKON) / YUKON
    expect(page.get_by_test_id("population-zayatz")).to_contain_text(f"{share * 100:.4f}%")
    expect(page.get_by_test_id("population-zayatz")).to_contain_text("Dankar's rule picks it")
    chart = page.locator(
        "figure.chart", has_text="Population uniques against the sampling fraction"
    )
    expect(chart.locator("svg")).to_be_visible()
    expect(chart.locator("svg line.highlight")).to_have_count(1)
