"""Every screen a decision is made on reads at 1280 and 1920 px: the main column is centred,
nothing makes the page scroll sideways (wide tables scroll inside their own box). A decided
demo release is built through the services and a real worker, then each step, the overview,
the review page and the report viewer are opened at both widths.

With DEIDWEB_WRITE_SCREENS=1 the 1280 px screenshots are written to docs/screens/ (the README
shows them); otherwise they go to a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Browser, expect

from apps.assessments import deidentify, release_apply, services, steps
from apps.assessments.models import Assessment
from apps.classification.models import Variable
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
)
from apps.datasets.demo import generate_register
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import LOW_ANSWERS
from tests.conftest import wait_for_job
from tests.justify import justify_all

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

KEEP_QUASI = {"age", "sex", "city"}
WIDTHS = (1280, 1920)
STEPS = tuple(step.slug for step in steps.STEPS)


def _ok(job_id: object) -> None:
    finished = wait_for_job(job_id, timeout=180)
    assert finished.status == "succeeded", finished.error


def _decided_release(custodian, analyst, reviewer) -> Assessment:  # type: ignore[no-untyped-def]
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        name="Demo patient register",
        upload=SimpleUploadedFile("register.csv", generate_register(800).write_csv().encode()),
    )
    _ok(dataset.profile_job_id)
    dataset.refresh_from_db()
    variables_accept_suggestions(dataset=dataset, user=analyst)
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), "direct", "Not needed by this analysis: left out.")
            for v in Variable.objects.filter(dataset=dataset, role="quasi").exclude(
                name__in=KEEP_QUASI
            )
        ],
    )
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    _ok(services.assessment_start_risk(assessment=assessment, user=analyst).id)
    _ok(deidentify.assessment_start_search(assessment=assessment, user=analyst).id)
    assessment.refresh_from_db()
    _ok(release_apply.assessment_start_apply(assessment=assessment, user=analyst).id)
    assessment.refresh_from_db()
    services.assessment_accept_utility(
        assessment=assessment, note="Age bands, sex and city suffice for the open-data users."
    )
    justify_all(assessment)
    assessment.refresh_from_db()
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Public release of admissions.",
        intruder_waiver="Open-data release of counts already published; the custodian waived the test.",
    )
    review_decide(
        assessment=assessment,
        reviewer=reviewer,
        decision="approve",
        reasons="The risk is below the threshold and the notes are left out.",
    )
    for _ in range(180):
        assessment.refresh_from_db()
        if assessment.reports.exists():
            break
        import time

        time.sleep(1)
    assert assessment.reports.exists(), "the signed report was not written"
    return assessment


def _sign_in(browser: Browser, base: str, username: str, width: int):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    return page


def _check(page, name: str, width: int, folder: Path) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_load_state("networkidle")
    layout = page.evaluate(
        """() => {
            const main = document.querySelector('main') || document.body;
            const box = main.getBoundingClientRect();
            return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                    left: box.left, right: window.innerWidth - box.right, width: box.width};
        }"""
    )
    assert layout["scroll"] <= layout["inner"], f"{name} scrolls sideways at {width} px: {layout}"
    # Centred: the margins either side of the main column differ by at most a few pixels.
    assert abs(layout["left"] - layout["right"]) <= 24, f"{name} is not centred: {layout}"
    if width == WIDTHS[0]:
        page.screenshot(path=str(folder / f"{name}.png"), full_page=False)


def test_every_screen_reads_at_1280_and_1920(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian, tmp_path
):
    assessment = _decided_release(custodian, analyst, reviewer)
    report = assessment.reports.get()
    base = live_server.url
    org = f"{base}/o/{custodian.slug}"
    write = os.environ.get("DEIDWEB_WRITE_SCREENS") == "1"
    folder = Path(settings.BASE_DIR) / "docs" / "screens" if write else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page = _sign_in(browser, base, "analyst", width)
        for number, slug in enumerate(STEPS, start=1):
            page.goto(f"{org}/assessments/{assessment.id}/steps/{slug}/")
            expect(page.get_by_role("heading", level=1)).to_contain_text(f"Step {number}")
            _check(page, f"step-{number}-{slug}", width, folder)
        page.goto(f"{org}/assessments/{assessment.id}/")
        _check(page, "step-9-overview", width, folder)
        page.context.close()

        page = _sign_in(browser, base, "reviewer", width)
        page.goto(f"{org}/assessments/{assessment.id}/review/")
        expect(page.get_by_test_id("applied-solution")).to_be_visible()
        _check(page, "review", width, folder)
        page.goto(f"{org}/reports/{report.id}/")
        expect(page.get_by_test_id("viewer-banner")).to_be_visible()
        expect(page.locator("#step-7")).to_contain_text("Step 7")
        _check(page, "report-viewer", width, folder)
        page.context.close()
    assert sorted(p.name for p in folder.glob("*.png")) == sorted(
        [
            *[f"step-{n}-{slug}.png" for n, slug in enumerate(STEPS, start=1)],
            "step-9-overview.png",
            "review.png",
            "report-viewer.png",
        ]
    )
