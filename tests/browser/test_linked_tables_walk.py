"""Issue 25 in Chromium: a person table and a visits table uploaded together through the
page's form, walked through Steps 1–9 in persons, released as its tables. Step 7 lists
each table's files with their SHA-256; the reviewer approves; the analyst downloads a
table and the ZIP through the page's links, and the bytes are the ones the page showed
and the decision froze; the person table holds one row per released person under the
keyed pseudonym (never the raw key); the signed report lists the tables. A real worker,
Redis and PostgreSQL; every figure hand-computed on the data below."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile

import polars as pl
import pytest
from playwright.sync_api import Page, expect

from apps.assessments import release_secrets
from apps.assessments.models import Assessment
from apps.datasets.models import Dataset
from apps.engine.masking import hmac_pseudonym
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

# Nine patients. Person-level: sex, birth year and (derived) the number of visits. With the
# adversary knowing one visit (power 1) and the visit count kept, every patient shares all
# of it with one other: (F,1970,2 visits) K101, K102 both {J45, E11}; (F,1970,none) K108,
# K109; (M,1980,1) K103, K104 {I10}; (F,1985,1) K106, K107 {N39} — except K105 alone in
# (M,1990): risk 1 before, suppressed with its visit; after, every count is 2.
PERSONS = (
    "patient_id,sex,birth_year\n"
    "K101,F,1970\nK102,F,1970\nK103,M,1980\nK104,M,1980\nK105,M,1990\n"
    "K106,F,1985\nK107,F,1985\nK108,F,1970\nK109,F,1970\n"
)
VISITS = (
    "patient_id,diagnosis\n"
    "K101,J45\nK101,E11\nK102,J45\nK102,E11\nK103,I10\nK104,I10\nK105,J45\nK106,N39\nK107,N39\n"
)
ROLES = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "diagnosis": "quasi"}
LOW = {
    "How sensitive is the information?": "low",
    "How detailed is the information (scope, granularity)?": "low",
    "How many individuals does it concern?": "few",
    "How serious would harm or injury be after a breach or misuse?": "low",
    "Is the disclosure permitted by FIPPA/MFIPPA without consent?": "yes",
    "Was the information unsolicited or given freely, with little expectation of privacy?": "yes",
    "Did individuals consent to, or were they told of, this de-identified secondary use?": "yes",
}
# file: (table, rows, persons) — K105 and its visit in no table; K108 and K109 in the
# person table, without a visit.
FILES = {
    "persons.parquet": ("persons.csv", 8, 8),
    "persons.csv": ("persons.csv", 8, 8),
    "visits.parquet": ("visits.csv", 8, 6),
    "visits.csv": ("visits.csv", 8, 6),
}


def _wait_then_reload(page: Page, job_id: object) -> None:
    finished = wait_for_job(job_id, timeout=TIMEOUT / 1000)
    assert finished.status == "succeeded", finished.error
    reload_when_settled(page)


def _download(page: Page, link, path):  # type: ignore[no-untyped-def]
    with page.expect_download() as download:
        link.click()
    download.value.save_as(path)
    return path.read_bytes()


def _shown_digests(page: Page) -> dict[str, tuple[str, str, str]]:
    """The release-tables listing on a page: file → (rows, persons, SHA-256) as shown."""
    shown = {}
    for row in page.get_by_test_id("release-table-file").all():
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        shown[cells[0]] = (cells[2], cells[3], cells[4])
    return shown


def test_linked_tables_uploaded_released_as_tables_and_downloaded(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian, tmp_path
):
    from pypdf import PdfReader

    from apps.reports.identity import organization_signing_ensure

    organization_signing_ensure(organization=custodian)
    base = live_server.url
    ana = sign_in(browser, base, "analyst")
    ana.set_default_timeout(60_000)

    # The multi-table upload form, reached from the data sets' page.
    ana.goto(f"{base}/o/{custodian.slug}/datasets/")
    ana.get_by_test_id("upload-tables-link").click()
    csv = {"mimeType": "text/csv"}
    ana.get_by_label("Person table").set_input_files(
        [{"name": "persons.csv", "buffer": PERSONS.encode(), **csv}]
    )
    ana.get_by_label("Event tables").set_input_files(
        [{"name": "visits.csv", "buffer": VISITS.encode(), **csv}]
    )
    ana.get_by_label("Person key").fill("patient_id")
    ana.get_by_label("Name").fill("Linked visits")
    ana.get_by_test_id("upload-tables").click()
    expect(ana.get_by_test_id("dataset-status")).to_have_text("Ready", timeout=TIMEOUT)
    expect(ana.get_by_text("9 persons, 9 events, 2 persons without events")).to_be_visible()
    dataset = Dataset.objects.get(name="Linked visits")

    ana.get_by_test_id("classify-link").click()
    for row in ana.locator("tr[data-column]").all():
        row.get_by_role("combobox").select_option(ROLES[str(row.get_attribute("data-column"))])
        row.get_by_role("textbox").fill("Chosen by the analyst for this walk.")
    ana.get_by_test_id("save-classification").click()
    expect(ana.get_by_text("Classification saved")).to_be_visible()

    # Step 1: public.
    ana.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/assessments/new/")
    ana.get_by_test_id("create-assessment").click()
    ana.get_by_label("Public", exact=True).check()
    ana.get_by_label("Purpose").fill("Open data on visits by patient")
    save_step(ana)
    assessment = Assessment.objects.get(dataset=dataset)
    steps = f"{base}/o/{custodian.slug}/assessments/{assessment.id}/steps"

    # Step 2: the tables' person key declared; the levels from the data.
    ana.goto(f"{steps}/classification/")
    expect(ana.get_by_test_id("longitudinal-warning")).to_contain_text("persons.csv, visits.csv")
    ana.get_by_test_id("person-key").select_option("patient_id")
    levels = ana.get_by_test_id("person-levels")
    expect(levels.locator("tr[data-column='birth_year']")).to_contain_text("person-level")
    expect(levels.locator("tr[data-column='diagnosis']")).to_contain_text("event-level")
    ana.get_by_test_id("save-persons").click()
    expect(ana.get_by_test_id("person-key-declared")).to_contain_text("patient_id")

    # Step 3: a custom threshold of 0.5 (groups of two persons), justified; Step 5.
    ana.goto(f"{steps}/threshold/")
    for question, answer in LOW.items():
        ana.get_by_role("group", name=question).get_by_label(answer, exact=True).check()
    ana.get_by_label("Custom, with a written justification").check()
    ana.get_by_label("Custom threshold (probability)").fill("0.5")
    ana.get_by_role("textbox", name="Justification").fill(
        "A walk on nine hand-made patients: groups of two persons are the design of the test."
    )
    save_step(ana)
    expect(ana.get_by_test_id("threshold-value")).to_have_text("0.5")
    ana.get_by_role("link", name="Context risk").click()
    save_step(ana)

    # Step 4 at power 1, the visit count kept: K105 alone, the others in pairs:
    # max risk 1, average (8 · ½ + 1) / 9 = 5/9.
    ana.get_by_role("link", name="Data risk").click()
    ana.get_by_label(re.compile("Adversary power")).select_option("1")
    ana.get_by_test_id("run-risk").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).risk_job_id)
    expect(ana.get_by_test_id("persons")).to_have_text("9")
    expect(ana.get_by_test_id("events")).to_have_text("9")
    expect(ana.get_by_test_id("max-risk")).to_have_text("1")
    expect(ana.get_by_test_id("average-risk")).to_have_text("0.5556")
    expect(ana.get_by_test_id("persons-at-risk")).to_contain_text("1 (")

    # Step 7: every level capped at the original values, one person of nine may go.
    ana.get_by_role("link", name="De-identify").click()
    ana.get_by_test_id("suppression-limit").fill("20")
    ana.get_by_test_id("event-suppression-limit").fill("0")
    for column in ("sex", "birth_year", "diagnosis"):
        ana.locator(f"input[name='maxlevel-{column}']").fill("0")
    ana.get_by_test_id("save-config").click()
    expect(ana.get_by_text("Settings saved.")).to_be_visible()
    ana.get_by_test_id("run-search").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).search_job_id)
    expect(ana.get_by_test_id("persons-suppressed")).to_have_text("1")
    expect(ana.get_by_test_id("events-suppressed")).to_have_text("0")
    expect(ana.get_by_test_id("min-person-count")).to_have_text("2")
    ana.get_by_test_id("apply").click()
    _wait_then_reload(ana, Assessment.objects.get(id=assessment.id).apply_job_id)
    expect(ana.get_by_test_id("applied")).to_contain_text("meets the target")
    expect(ana.get_by_test_id("applied-persons")).to_contain_text(
        "8 of 9 persons with 8 of 9 events"
    )
    # The table files listed with their digests, as the apply job recorded them.
    expect(ana.get_by_test_id("release-table-file")).to_have_count(4)
    assessment.refresh_from_db()
    listed = {f["name"]: f for f in assessment.apply_result["release_files"]}
    step7 = _shown_digests(ana)
    assert {n: (f["table"], f["rows"], f["persons"]) for n, f in listed.items()} == FILES
    assert step7 == {n: (str(r), str(p), listed[n]["sha256"]) for n, (_, r, p) in FILES.items()}
    justify_on_step_7(ana, "Open-data users link visits by patient, never by the clinic's key.")

    # Step 8, the submission and the reviewer's approval; the review page lists the files.
    ana.get_by_role("link", name=re.compile("Next: Step 8")).click()
    rev, decision = accept_submit_approve(
        browser,
        base,
        ana,
        assessment,
        utility="Sex, birth year and diagnoses by patient are what the users asked for.",
        note="Public release of the linked visits, as two tables.",
        waiver="Hand-made test patients: no person can be found in them, so no intruder test.",
        reasons="Every patient is hidden among at least two.",
    )
    rev.reload()
    assert _shown_digests(rev) == step7
    # The decision froze each file's digest: the ones the page showed.
    assert {n: decision.digests[f"file:{n}"] for n in FILES} == {
        n: s for n, (_, _, s) in step7.items()
    }

    # Step 9: the signed report lists the tables with their digests.
    overview = f"{base}/o/{custodian.slug}/assessments/{assessment.id}/"
    ana.goto(overview)
    pdf = signed_report(ana, custodian, tmp_path)
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    for name in FILES:
        assert name in text, name
    ana.get_by_role("link", name="read it here").click()
    assert _shown_digests(ana) == step7

    # The analyst downloads the person table and the ZIP through the overview's links.
    ana.goto(overview)
    links = ana.get_by_test_id("download-table-file")
    expect(links).to_have_count(4)
    person_csv = _download(ana, links.filter(has_text="persons.csv"), tmp_path / "p.csv")
    assert hashlib.sha256(person_csv).hexdigest() == step7["persons.csv"][2]
    bundle = _download(ana, ana.get_by_test_id("download-zip"), tmp_path / "release.zip")
    archive = zipfile.ZipFile(io.BytesIO(bundle))
    sums = dict(
        reversed(line.split("  ", 1)) for line in archive.read("SHA256SUMS").decode().splitlines()
    )
    assert set(FILES) <= set(archive.namelist())
    for name in FILES:
        content = archive.read(name)
        assert hashlib.sha256(content).hexdigest() == sums[name] == step7[name][2], name
    assert archive.read("persons.csv") == person_csv
    # Every member but SHA256SUMS is summed there, with its own digest.
    assert set(sums) == set(archive.namelist()) - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256(archive.read(name)).hexdigest() == digest, name

    # One row per released person under the keyed pseudonym; K105 in no table.
    keys = json.loads(release_secrets.release_secrets_read(assessment=assessment))["keys"]
    key = base64.b64decode(keys["patient_id"])
    p = {k: hmac_pseudonym(k, key, 32) for k in [f"K10{i}" for i in range(1, 10)]}
    people = pl.read_csv(io.BytesIO(person_csv), infer_schema_length=0)
    assert people.columns == ["patient_id", "sex", "birth_year"]
    assert people.rows() == sorted(
        [
            (p["K101"], "F", "1970"),
            (p["K102"], "F", "1970"),
            (p["K103"], "M", "1980"),
            (p["K104"], "M", "1980"),
            (p["K106"], "F", "1985"),
            (p["K107"], "F", "1985"),
            (p["K108"], "F", "1970"),
            (p["K109"], "F", "1970"),
        ]
    )
    visits = pl.read_csv(io.BytesIO(archive.read("visits.csv")), infer_schema_length=0)
    assert visits.rows() == [
        (p["K101"], "J45"),
        (p["K101"], "E11"),
        (p["K102"], "J45"),
        (p["K102"], "E11"),
        (p["K103"], "I10"),
        (p["K104"], "I10"),
        (p["K106"], "N39"),
        (p["K107"], "N39"),
    ]
    for name in FILES:
        if name.endswith(".csv"):
            assert "K10" not in archive.read(name).decode(), name
