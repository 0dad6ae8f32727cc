"""Issue 25 in Chromium: the "Demo hospital visits" data set (several visits per patient)
from upload to an approved release with its signed report. The analyst declares the
chart number the person key in Step 2, measures risk in persons in Step 4, searches and
writes the release in persons in Step 7 (persons and events suppressed shown), accepts
the utility and submits; the reviewer approves; both the report's signature and the
released file are checked: every chart number replaced by a keyed pseudonym, one per
patient. A real worker, Redis and PostgreSQL."""

from __future__ import annotations

import base64
import io
import json
import re

import polars as pl
import pytest
from playwright.sync_api import Page, expect

from apps.assessments import release_secrets
from apps.assessments.models import Assessment
from apps.datasets.demo_visits import generate_visits
from apps.datasets.models import Dataset
from apps.engine.masking import hmac_pseudonym
from apps.reports.management.commands.seed_demo import DEMO_VISITS_ROLES
from tests.browser.prepared import (
    accept_submit_approve,
    justify_on_step_7,
    reload_when_settled,
    sign_in,
    signed_report,
)
from tests.browser.test_assessment_flow import TIMEOUT, save_step
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

# The demo's roles, but the area and the length of stay left out of this release (removed
# like direct identifiers), so that four quasi-identifiers remain: sex and birth year
# (person-level), admission date and diagnosis (event-level).
LEFT_OUT = {"fsa", "length_of_stay"}


def _wait_then_reload(page: Page, job_id: object) -> None:
    finished = wait_for_job(job_id, timeout=TIMEOUT / 1000)
    assert finished.status == "succeeded", finished.error
    reload_when_settled(page)


def test_demo_visits_walk_steps_1_to_9_in_persons(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian, tmp_path
):
    from apps.reports.identity import organization_signing_ensure

    organization_signing_ensure(organization=custodian)
    visits = generate_visits(300)
    path = tmp_path / "demo_hospital_visits.csv"
    visits.write_csv(path)
    base = live_server.url
    ana = sign_in(browser, base, "analyst")
    ana.set_default_timeout(60_000)

    # Upload; the worker profiles it.
    ana.get_by_role("button", name="Upload a data set").first.click()
    ana.get_by_label("File").set_input_files(str(path))
    ana.get_by_label("Name").fill("Demo hospital visits")
    ana.get_by_role("button", name="Upload", exact=True).click()
    expect(ana.get_by_test_id("dataset-status")).to_have_text("Ready", timeout=TIMEOUT)
    dataset = Dataset.objects.get(name="Demo hospital visits")

    # The data set's classification: the chart number a direct identifier (the person key).
    ana.get_by_test_id("classify-link").click()
    for row in ana.locator("tr[data-column]").all():
        column = str(row.get_attribute("data-column"))
        role, reason = DEMO_VISITS_ROLES[column]
        if column in LEFT_OUT:
            role, reason = "direct", "Not needed by this study: left out of the release."
        row.get_by_role("combobox").select_option(role)
        row.get_by_role("textbox").fill(reason)
    ana.get_by_test_id("save-classification").click()
    expect(ana.get_by_text("Classification saved")).to_be_visible()

    # Step 1: a public release.
    ana.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/assessments/new/")
    ana.get_by_test_id("create-assessment").click()
    ana.get_by_label("Public", exact=True).check()
    ana.get_by_label("Purpose").fill("Open data on hospital visits")
    save_step(ana)
    assessment = Assessment.objects.get(dataset=dataset)
    steps = f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps"

    # Step 2: the file looks longitudinal until the chart number is declared the person key;
    # the levels are suggested from the data.
    ana.goto(f"{steps}/classification/")
    expect(ana.get_by_test_id("longitudinal-warning")).to_contain_text("chart_number")
    ana.get_by_test_id("person-key").select_option("chart_number")
    levels = ana.get_by_test_id("person-levels")
    expect(levels.locator("tr[data-column='sex']")).to_contain_text("person-level")
    expect(levels.locator("tr[data-column='diagnosis_code']")).to_contain_text("event-level")
    ana.get_by_test_id("save-persons").click()
    expect(ana.get_by_test_id("person-key-declared")).to_contain_text("chart_number")
    assessment.refresh_from_db()
    assert assessment.person_levels == {
        "sex": "person",
        "birth_year": "person",
        "admission_date": "event",
        "diagnosis_code": "event",
    }

    # Step 3 from the invasion-of-privacy assessment (low: 0.1), Step 5 (public: 1).
    ana.goto(f"{steps}/threshold/")
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
        ana.get_by_role("group", name=question).get_by_label(answer, exact=True).check()
    save_step(ana)
    expect(ana.get_by_test_id("threshold-value")).to_have_text("0.1")
    ana.get_by_role("link", name="Context risk").click()
    save_step(ana)

    # Step 4: risk in persons at the default power (3 events known); the admission date
    # declared an absolute date (day, month, quarter, year), the number of visits per
    # patient counted as offered by default.
    ana.get_by_role("link", name="Data risk").click()
    expect(ana.get_by_test_id("risk-unit")).to_contain_text("chart_number")
    ana.get_by_test_id("dates-form").locator("summary").click()
    ana.get_by_test_id("date-columns").get_by_label("admission_date").check()
    ana.get_by_test_id("run-risk").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).risk_job_id)
    expect(ana.get_by_test_id("power-all")).to_be_visible()
    expect(ana.get_by_test_id("date-mode")).to_contain_text("absolute")
    expect(ana.get_by_test_id("event-count")).to_contain_text("top-coded at")

    # Step 7: both suppression limits; the search and the release in persons.
    ana.get_by_role("link", name="De-identify").click()
    expect(ana.get_by_test_id("longitudinal-note")).to_be_visible()
    ana.get_by_test_id("event-suppression-limit").fill("4")
    ana.get_by_test_id("save-config").click()
    expect(ana.get_by_text("Settings saved.")).to_be_visible()
    assessment.refresh_from_db()
    assert assessment.deid_config["event_suppression_limit"] == pytest.approx(0.04)
    ana.get_by_test_id("run-search").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).search_job_id)
    assessment.refresh_from_db()
    search = assessment.search_result
    assert search["unit"] == "person" and search["power"] == "3"
    expect(ana.get_by_test_id("search-dates")).to_contain_text("absolute")
    expect(ana.get_by_test_id("search-event-count")).to_contain_text("top-code")
    solution = search["solution"]
    expect(ana.get_by_test_id("persons-suppressed")).to_have_text(
        str(solution["suppressed_persons"])
    )
    expect(ana.get_by_test_id("events-suppressed")).to_have_text(str(solution["suppressed_events"]))
    expect(ana.get_by_test_id("min-person-count")).to_have_text(str(solution["min_class_size"]))
    assert solution["min_class_size"] >= 10  # max risk 0.1 at the target
    ana.get_by_test_id("apply").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).apply_job_id)
    expect(ana.get_by_test_id("applied")).to_contain_text("meets the target")
    expect(ana.get_by_test_id("applied-persons")).to_contain_text("keyed pseudonym")
    # Why each altered variable was altered (EMA Policy 0070): the person key at least.
    expect(ana.get_by_test_id("justification-chart_number")).to_be_visible()
    justify_on_step_7(ana, "Open-data users need visits by person, never the hospital number.")

    # Step 8, then the submission.
    ana.get_by_role("link", name=re.compile("Next: Step 8")).click()
    # The attack tests ran on the demo's persons and their visits, counted in persons:
    # singling out, linkability (exact, nearest), inference of the discharge disposition.
    expect(ana.get_by_test_id("attacks-in-persons")).to_be_visible()
    expect(ana.get_by_test_id("attack-row")).to_have_count(4)
    expect(ana.get_by_test_id("attack-table")).to_contain_text("Inference of discharge_disposition")
    rev, _ = accept_submit_approve(
        browser,
        base,
        ana,
        assessment,
        utility="Visit months and years by age band are what the open-data users asked for.",
        note="Public release of hospital visits, in persons.",
        waiver="Synthetic demo data: no person can be found in it, so no intruder test was run.",
        reasons="Every patient is hidden among at least ten.",
    )

    # Step 9: the signed report and the released file, as the reviewer downloads them.
    assessment.refresh_from_db()
    applied = assessment.apply_result
    keys = json.loads(release_secrets.release_secrets_read(assessment=assessment))["keys"]
    key = base64.b64decode(keys["chart_number"])
    expected = {hmac_pseudonym(c, key, 32): c for c in visits.get_column("chart_number")}
    rows_of = visits.group_by("chart_number").len()
    rev.goto(f"{base}/o/{custodian.slug}/assessments/{assessment.id}/")
    signed_report(rev, custodian, tmp_path)
    with rev.expect_download() as data_download:
        rev.get_by_test_id("download-csv").click()
    csv = (tmp_path / "released.csv").resolve()
    data_download.value.save_as(csv)
    text = csv.read_text()
    released = pl.read_csv(io.StringIO(text), infer_schema_length=0)
    assert set(released.columns) == {
        "chart_number", "sex", "birth_year", "admission_date", "diagnosis_code",
        "discharge_disposition",
    }  # fmt: skip
    # The admission dates as released: every one at the calendar level the search chose.
    assert applied["longitudinal"]["dates"]["mode"] == "absolute"
    level = applied["longitudinal"]["dates"]["levels"]["admission_date"]
    pattern = {
        "day": r"\d{4}-\d{2}-\d{2}",
        "month": r"\d{4}-\d{2}",
        "quarter": r"\d{4}-Q[1-4]",
        "year": r"\d{4}",
        "*": r"\*",
    }[level]
    assert all(re.fullmatch(pattern, d) for d in released.get_column("admission_date"))
    assert applied["longitudinal"]["event_count"]["top_code"] >= 1
    # Every chart number is replaced by its keyed pseudonym: one per patient, never shared,
    # and no chart number left anywhere in the file.
    pseudonyms = released.get_column("chart_number")
    assert set(pseudonyms.unique()) <= set(expected)
    assert pseudonyms.n_unique() == applied["longitudinal"]["persons_out"]
    assert not any(chart in text for chart in rows_of.get_column("chart_number").to_list())
    # A patient's rows all carry their pseudonym: as many as their visits kept.
    counts = released.group_by("chart_number").len()
    originals = dict(rows_of.iter_rows())
    suppressed_events = applied["longitudinal"]["suppressed"]["events"]
    assert sum(originals[expected[p]] - n for p, n in counts.iter_rows()) == suppressed_events
