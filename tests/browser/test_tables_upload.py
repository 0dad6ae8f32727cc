"""An analyst uploads a person table and two event tables in Chromium (issue 25): the job
reads, checks and joins them; the data set's page lists the tables; an upload with an
orphan event is refused on the page, naming the table, the column and the rows."""

import pytest
from playwright.sync_api import Page, expect

from apps.datasets.models import Dataset
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

PERSONS = b"patient_id,sex,birth_year\n1,F,1970\n2,M,1980\n3,M,1980\n4,F,1990\n"
VISITS = b"patient_id,diagnosis\n1,J45\n1,E11\n2,I10\n3,I10\n3,J45\n"
PRESCRIPTIONS = b"patient_id,drug\n2,A10\n"


def sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("User name").fill("analyst")
    page.get_by_label("Password").fill("pw-analyst")
    page.get_by_role("button", name="Sign in").click()


def _files(**named: bytes) -> list[dict[str, object]]:
    return [{"name": n, "mimeType": "text/csv", "buffer": b} for n, b in named.items()]


def _upload(page: Page, base: str, slug: str, visits: bytes, name: str) -> Dataset:
    page.goto(f"{base}/o/{slug}/datasets/")
    page.get_by_test_id("upload-tables-link").click()
    page.get_by_label("Person table").set_input_files(_files(**{"persons.csv": PERSONS}))
    page.get_by_label("Event tables").set_input_files(
        _files(**{"visits.csv": visits, "rx.csv": PRESCRIPTIONS})
    )
    page.get_by_label("Person key").fill("patient_id")
    page.get_by_label("Name").fill(name)
    page.get_by_test_id("upload-tables").click()
    expect(page.get_by_test_id("dataset-status")).to_be_visible()
    dataset = Dataset.objects.get(name=name)
    wait_for_job(dataset.profile_job_id, timeout=120)
    page.reload()
    return dataset


def test_tables_are_uploaded_joined_and_listed(
    celery_worker_process, live_server, page, analyst, custodian
):
    base = live_server.url
    sign_in(page, base)
    dataset = _upload(page, base, custodian.slug, VISITS, "Hospital visits")
    expect(page.get_by_test_id("dataset-status")).to_have_text("Ready")
    tables = page.get_by_test_id("tables")
    expect(tables).to_contain_text("persons.csv")
    expect(page.get_by_test_id("table-2")).to_contain_text("visits.csv")
    expect(page.get_by_test_id("table-2")).to_contain_text("event table")
    expect(page.get_by_test_id("table-3")).to_contain_text("rx.csv")
    # 5 visits + 1 prescription, and person 4 without events: 7 rows.
    expect(page.get_by_test_id("rows")).to_have_text("7")
    expect(page.get_by_text("4 persons, 6 events, 1 person without events")).to_be_visible()
    dataset.refresh_from_db()
    assert dataset.table_structure["person_key"] == "patient_id"

    refused = _upload(page, base, custodian.slug, VISITS + b"9,K35\n", "With an orphan")
    expect(page.get_by_test_id("profile-failed")).to_contain_text(
        "'visits.csv': 1 event row(s) of 1 person(s) name a person whose 'patient_id' is not "
        "in the person table 'persons.csv' (row 6)"
    )
    refused.refresh_from_db()
    assert refused.status == "failed"
