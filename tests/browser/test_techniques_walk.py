"""#18 in Chromium: the analyst adds local suppression and PRAM on Step 7, previews their
effect, writes the file, sees the comparison with generalization only on Step 8, and the
signed report lists both techniques with their effect. Real worker, Redis, PostgreSQL."""

from __future__ import annotations

import io
import time

import pytest
from django.core.files.storage import default_storage
from playwright.sync_api import expect
from pypdf import PdfReader

from apps.assessments import deidentify
from apps.assessments.models import Assessment
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.browser.prepared import reload_when_settled, trade_off_at_step_7
from tests.browser.test_review_flow import sign_in
from tests.conftest import wait_for_job
from tests.justify import justify_all

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]
TIMEOUT = 120_000


def test_local_suppression_and_pram_through_step_7(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian
):
    assessment = trade_off_at_step_7(custodian, analyst)
    job = deidentify.assessment_start_search(assessment=assessment, user=analyst)
    assert wait_for_job(job.id, timeout=120).status == "succeeded"

    base = live_server.url
    page = sign_in(browser, base, "analyst")
    page.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps/deidentify/")
    expect(page.get_by_test_id("no-techniques")).to_be_visible()
    # Local suppression: only its fields show.
    page.get_by_test_id("technique-kind").select_option("local_suppression")
    expect(page.get_by_test_id("technique-form").get_by_label("sex", exact=True)).to_be_visible()
    expect(page.get_by_label("Chance of keeping a category")).to_be_hidden()
    page.get_by_test_id("add-technique").click()
    expect(page.get_by_test_id("technique-0")).to_contain_text("Local suppression")
    # PRAM on the diagnosis.
    page.get_by_test_id("technique-kind").select_option("pram")
    page.get_by_label("Variable for PRAM").select_option("diagnosis")
    page.get_by_label("Chance of keeping a category").fill("0.8")
    page.get_by_test_id("add-technique").click()
    expect(page.get_by_test_id("technique-1")).to_contain_text("PRAM")
    # Preview local suppression before applying.
    page.get_by_test_id("preview-0").click()
    expect(page.get_by_test_id("effect-blanked")).to_contain_text("12 values blanked")
    page.get_by_test_id("apply").click()
    apply_job = Assessment.objects.get(id=assessment.id).apply_job_id
    assert wait_for_job(apply_job, timeout=120).status == "succeeded"
    reload_when_settled(page)
    applied = page.get_by_test_id("applied-techniques")
    expect(applied).to_contain_text("Local suppression")
    expect(applied).to_contain_text("Post-randomisation (PRAM) on diagnosis")
    expect(page.get_by_test_id("applied")).to_contain_text("400 records released, 0 suppressed")

    page.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps/utility/")
    expect(page.get_by_test_id("generalization-only-suppressed")).to_have_text("12")
    page.get_by_label("Why the remaining utility is acceptable for the purpose").fill(
        "Every record is kept; sex is blank for the twelve oldest patients."
    )
    page.get_by_test_id("accept-utility").click()
    page.context.close()

    justify_all(assessment)
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Local suppression and PRAM.",
        intruder_waiver="Open-data release of counts already published; the custodian waived the test.",
    )
    review_decide(
        assessment=assessment,
        reviewer=reviewer,
        decision="approve",
        reasons="Fewer records lost; the diagnosis is perturbed with known probabilities.",
    )
    for _ in range(120):
        if assessment.reports.exists():
            break
        time.sleep(1)
    report = assessment.reports.get()
    with default_storage.open(report.pdf_path, "rb") as handle:
        text = " ".join(
            " ".join((p.extract_text() or "").split())
            for p in PdfReader(io.BytesIO(handle.read())).pages
        )
    assert "7.4 Further techniques" in text
    assert "Local suppression" in text and "12 values blanked" in text
    assert "Post-randomisation (PRAM) on diagnosis" in text
    assert "would have suppressed 12 records" in text
    assert "seed =" not in text and "retain = 0.8" in text  # the seed never, the rest yes
