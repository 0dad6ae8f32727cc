"""The demo analyst takes the demo data set through Steps 1–8 in Chromium and reaches a
passing release (real worker, Redis and PostgreSQL)."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Page, expect

from apps.assessments import steps
from apps.assessments.models import Assessment
from apps.datasets.demo import generate_register
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

KEEP_QUASI = {"age", "sex", "postal_code", "admission_date"}
TIMEOUT = 120_000


def sign_in(page: Page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def save_step(page: Page) -> None:
    page.get_by_test_id("save-step").click()
    expect(page.locator(".flash-error")).to_have_count(0)


def test_steps_1_to_8_reach_a_passing_release(
    celery_worker_process, live_server, page, analyst, custodian
):
    from apps.datasets.services import dataset_upload

    csv = generate_register(1500).write_csv().encode()
    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("demo_register.csv", csv),
        name="Demo register",
    )
    assert wait_for_job(dataset.profile_job_id, timeout=120).status == "succeeded"

    base = live_server.url
    sign_in(page, base, "analyst", "pw-analyst")

    # Step 2 first (the data set's classification): keep four quasi-identifiers.
    page.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/classify/")
    page.get_by_test_id("accept-suggestions").click()
    expect(page.get_by_text("suggestion(s) confirmed")).to_be_visible()
    for row in page.locator("tr[data-column]").all():
        column = row.get_attribute("data-column")
        select = row.get_by_role("combobox")
        if select.input_value() == "quasi" and column not in KEEP_QUASI:
            select.select_option("other")
            row.get_by_role("textbox").fill("Not released to this recipient's analysis")
    page.get_by_test_id("save-classification").click()
    expect(page.get_by_text("Classification saved")).to_be_visible()

    # Start the assessment from the data set page.
    page.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/assessments/new/")
    page.get_by_test_id("create-assessment").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Step 1: Release model")

    # Step 1: non-public without an agreement → handled as semi-public.
    page.get_by_label("Non-public").check()
    page.get_by_label("Recipient organization").fill("University Health Research Unit")
    page.get_by_label("Purpose").fill("Readmission study")
    save_step(page)
    expect(page.get_by_test_id("handled-as-semi-public")).to_be_visible()
    expect(page.get_by_test_id("state-classification")).to_have_text("✓ done")

    # Step 3: a medium invasion of privacy under the Ontario profile → 0.075.
    page.get_by_role("link", name="Risk threshold").click()
    answers = {
        "How sensitive is the information?": "high",
        "How detailed is the information (scope, granularity)?": "moderate",
        "How many individuals does it concern?": "many",
        "How serious would harm or injury be after a breach or misuse?": "moderate",
        "Is the disclosure permitted by FIPPA/MFIPPA without consent?": "yes",
        "Was the information unsolicited or given freely, with little expectation of privacy?": "no",
        "Did individuals consent to, or were they told of, this de-identified secondary use?": "partly",
    }
    for question, answer in answers.items():
        page.get_by_role("group", name=question).get_by_label(answer, exact=True).check()
    save_step(page)
    expect(page.get_by_test_id("invasion-level")).to_have_text("medium")
    expect(page.get_by_test_id("threshold-value")).to_have_text("0.075")

    # Step 5: semi-public → T1 fixed at 0.6 (the highlighted cell).
    page.get_by_role("link", name="Context risk").click()
    page.get_by_label("Prevalence", exact=True).fill("0.001")  # T2 = 1 - 0.999^150 = 0.139 < 0.6
    page.get_by_label("Source of the prevalence").fill(
        "Provincial discharge abstract database, 2025"
    )
    save_step(page)
    expect(page.get_by_test_id("context-value")).to_have_text("0.6")
    expect(page.get_by_test_id("t1-used")).to_have_text("0.6")

    # Step 4: the data risk job.
    page.get_by_role("link", name="Data risk").click()
    page.get_by_test_id("run-risk").click()
    expect(page.get_by_test_id("max-risk")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_test_id("max-risk")).to_have_text("1")
    expect(page.locator("figure.chart").first).to_be_visible()

    # Step 6: overall risk fails; target 0.075 / 0.6 = 0.125 → groups of at least 8.
    page.get_by_role("link", name="Overall risk").click()
    expect(page.get_by_test_id("verdict")).to_contain_text("exceeds the threshold")
    expect(page.get_by_test_id("target")).to_have_text("0.125")

    # Step 7: search, then apply the optimum.
    page.get_by_role("link", name="De-identify").click()
    page.get_by_test_id("run-search").click()
    search_job = Assessment.objects.get(dataset=dataset).search_job
    finished = wait_for_job(search_job.id, timeout=TIMEOUT / 1000)
    assert finished.status == "succeeded", finished.error
    expect(page.get_by_test_id("optimum")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_test_id("alternatives").get_by_test_id("chosen")).to_be_visible()
    page.get_by_test_id("apply").click()
    apply_job = Assessment.objects.get(dataset=dataset).apply_job
    finished = wait_for_job(apply_job.id, timeout=TIMEOUT / 1000)
    assert finished.status == "succeeded", finished.error
    expect(page.get_by_test_id("applied")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_test_id("applied")).to_contain_text("meets the target")

    # Step 8: utility, accepted with a reason.
    page.get_by_role("link", name=re.compile("Next: Step 8")).click()
    expect(page.get_by_test_id("loss-headline")).to_be_visible()
    page.get_by_label("Why the remaining utility is acceptable for the purpose").fill(
        "Age bands, regions and admission periods suffice for the readmission model."
    )
    page.get_by_test_id("accept-utility").click()
    for slug in (step.slug for step in steps.STEPS):
        expect(page.get_by_test_id(f"state-{slug}")).to_have_text("✓ done")

    assessment = Assessment.objects.get(dataset=dataset)
    result = assessment.apply_result
    assert result["passes"] is True
    assert result["risk_after"]["max_risk"] <= 0.125 + 1e-12
    assert result["suppressed_share"] <= 0.05
    assert assessment.effective_release_model == "semi_public"
