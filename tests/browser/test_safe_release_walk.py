"""#13 in Chromium: the demo register from upload to a submittable public release, meeting each
guard on the way — free text suggested as a direct identifier with its findings masked, an
impossible threshold refused and an out-of-range one needing a justification, the search's
precheck before running, the notes scrubbed and re-scanned clean. (Notes released as they
are block the submission: tests/assessments/test_free_text_release.py.)"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.assessments.models import Assessment
from apps.datasets.demo import generate_register
from apps.datasets.models import Dataset
from tests.browser.prepared import justify_on_step_7, reload_when_settled
from tests.browser.test_assessment_flow import TIMEOUT, save_step, sign_in
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

KEEP_QUASI = {"age", "sex", "city"}


def _wait_job_then_reload(page: Page, job_id: object) -> None:
    finished = wait_for_job(job_id, timeout=TIMEOUT / 1000)
    assert finished.status == "succeeded", finished.error
    reload_when_settled(page)


def test_demo_register_walks_to_a_submittable_release_through_the_guards(
    celery_worker_process, live_server, page: Page, analyst, custodian, tmp_path
):
    register = generate_register(800)
    path = tmp_path / "demo_register.csv"
    register.write_csv(path)
    phones = register.get_column("phone").drop_nulls().to_list()
    base = live_server.url
    sign_in(page, base, "analyst", "pw-analyst")

    # Upload through the page; the worker profiles it.
    page.get_by_role("button", name="Upload a data set").first.click()
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_label("Name").fill("Demo register")
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_test_id("dataset-status")).to_have_text("Ready", timeout=TIMEOUT)
    dataset = Dataset.objects.get(name="Demo register")

    # Step 2: the notes are suggested as a direct identifier, with what was found, masked.
    page.get_by_test_id("classify-link").click()
    note = page.locator("tr[data-column='clinical_note']")
    expect(note.get_by_test_id("suggested-role")).to_have_text("Direct identifier")
    expect(note).to_contain_text("names found in")
    expect(note).to_contain_text("phone numbers found in")
    expect(note).to_contain_text("[NAME]")
    for phone in phones[:50]:
        expect(note).not_to_contain_text(phone)
    page.get_by_test_id("accept-suggestions").click()
    expect(page.get_by_text("suggestion(s) confirmed")).to_be_visible()
    # Keep three quasi-identifiers; the others leave the release like direct identifiers.
    for row in page.locator("tr[data-column]").all():
        column = row.get_attribute("data-column")
        select = row.get_by_role("combobox")
        if select.input_value() == "quasi" and column not in KEEP_QUASI:
            select.select_option("direct")
            row.get_by_role("textbox").fill("Not needed by this analysis: left out")
    page.get_by_test_id("save-classification").click()
    expect(page.get_by_text("Classification saved")).to_be_visible()

    page.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/assessments/new/")
    page.get_by_test_id("create-assessment").click()
    page.get_by_label("Public", exact=True).check()
    page.get_by_label("Purpose").fill("Open data on admissions")
    save_step(page)

    # Step 3: a threshold of 1 (no group of two) is refused; 0.2 needs a justification.
    page.get_by_role("link", name="Risk threshold").click()
    answers = {
        "How sensitive is the information?": "low",
        "How detailed is the information (scope, granularity)?": "low",
        "How many individuals does it concern?": "few",
        "How serious would harm or injury be after a breach or misuse?": "low",
        "Is the disclosure permitted by FIPPA/MFIPPA without consent?": "yes",
        "Was the information unsolicited or given freely, with little expectation of privacy?": "yes",
        "Did individuals consent to, or were they told of, this de-identified secondary use?": "yes",
    }
    for question, answer in answers.items():
        page.get_by_role("group", name=question).get_by_label(answer, exact=True).check()
    page.get_by_label("Custom, with a written justification").check()
    page.get_by_label("Custom threshold (probability)").fill("1")
    page.get_by_role("textbox", name="Justification").fill(
        "The recipient asked for the least change possible."
    )
    page.get_by_test_id("save-step").click()
    expect(page.locator(".flash-error, .errorlist").first).to_contain_text("0.5")
    page.get_by_label("Custom threshold (probability)").fill("0.2")
    page.get_by_role("textbox", name="Justification").fill("Too short.")
    page.get_by_test_id("save-step").click()
    expect(page.locator(".flash-error, .errorlist").first).to_contain_text(
        "outside the range 0.05-0.1"
    )
    page.get_by_label("From the invasion-of-privacy assessment").check()
    page.get_by_role("textbox", name="Justification").fill("")
    save_step(page)
    expect(page.get_by_test_id("threshold-value")).to_have_text("0.1")

    page.get_by_role("link", name="Context risk").click()
    save_step(page)
    page.get_by_role("link", name="Data risk").click()
    page.get_by_test_id("run-risk").click()
    assessment = Assessment.objects.get(dataset=dataset)
    _wait_job_then_reload(page, assessment.risk_job_id)

    # Step 7: the precheck speaks before the search; the notes are scrubbed, not removed.
    page.get_by_role("link", name="De-identify").click()
    expect(page.get_by_test_id("precheck")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_test_id("lattice-size")).to_contain_text("combinations")
    expect(page.get_by_test_id("feasible")).to_be_visible()
    expect(page.get_by_test_id("scrub-hint-clinical_note")).to_be_visible()
    # The hierarchy editor shows only the chosen builder's fields (#16).
    age = page.get_by_test_id("hierarchy-age")
    age.locator("summary").click()
    expect(age.get_by_test_id("builder-interval")).to_be_visible()
    for hidden in ("builder-prefix", "builder-date", "builder-categorical", "builder-arx"):
        expect(age.get_by_test_id(hidden)).to_be_hidden()
    age.get_by_test_id("builder-kind-age").select_option("prefix")
    expect(age.get_by_test_id("builder-prefix")).to_be_visible()
    expect(age.get_by_test_id("builder-interval")).to_be_hidden()
    age.get_by_test_id("builder-kind-age").select_option("interval")
    # Character masking's kept characters show only for character masking.
    expect(page.get_by_label("Leading characters kept of email")).to_be_hidden()
    page.get_by_label("Masking of email").select_option("mask")
    expect(page.get_by_label("Leading characters kept of email")).to_be_visible()
    page.get_by_label("Masking of email").select_option("remove")
    page.get_by_label("Masking of clinical_note").select_option("scrub")
    page.get_by_test_id("save-config").click()
    expect(page.get_by_text("Settings saved.")).to_be_visible()
    page.get_by_test_id("run-search").click()
    _wait_job_then_reload(page, Assessment.objects.get(id=assessment.id).search_job_id)
    page.get_by_test_id("apply").click()
    _wait_job_then_reload(page, Assessment.objects.get(id=assessment.id).apply_job_id)
    expect(page.get_by_test_id("applied")).to_contain_text("meets the target")
    expect(page.get_by_test_id("scrubbed-clinical_note")).to_contain_text(
        "A re-scan of the released column finds nothing."
    )
    expect(page.get_by_test_id("identifier-findings")).to_have_count(0)
    assert justify_on_step_7(page, "The register's users need no finer detail than this.") >= 1

    page.get_by_role("link", name=re.compile("Next: Step 8")).click()
    page.get_by_label("Why the remaining utility is acceptable for the purpose").fill(
        "Age, sex, city and the scrubbed notes are what the open-data users asked for."
    )
    page.get_by_test_id("accept-utility").click()

    # Submittable: no blocker, and the submission goes through.
    page.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/")
    expect(page.get_by_test_id("blockers")).to_have_count(0)
    page.get_by_test_id("submit-note").fill("Public release of the admissions register.")
    page.get_by_test_id("submit-intruder-waiver").fill(
        "Open-data release of counts already published; the custodian waived the test."
    )
    page.get_by_test_id("submit").click()
    assessment.refresh_from_db()
    assert assessment.status == "submitted"
    notes = assessment.apply_result["scrubbed"][0]
    assert notes["column"] == "clinical_note" and notes["spans_after"] == {}
