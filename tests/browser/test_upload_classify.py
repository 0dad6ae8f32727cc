"""Sign in → upload → watch profiling → classify, in Chromium, with a real worker."""

import re

import pytest
from playwright.sync_api import expect

from apps.classification.models import ClassificationChange, Variable

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CSV = (
    "record_number,full_name,email,date_of_birth,sex,postal_code,diagnosis\n"
    "R-0001,Ann Lee,ann.lee@example.org,1984-02-11,F,K1A 0B1,J45 Asthma\n"
    "R-0002,Bo Chen,bo.chen@example.com,1973-07-30,M,M5V 2T6,E11 Type 2 diabetes\n"
    "R-0003,Cy Roy,cy.roy@example.net,1984-05-02,F,K1A 0B1,J45 Asthma\n"
    "R-0004,Dee Fox,dee.fox@example.org,1990-12-24,M,L4C 3G5,I10 Hypertension\n"
)


def test_sign_in_upload_and_classify(
    celery_worker_process, live_server, page, analyst, custodian, tmp_path
):
    path = tmp_path / "clinic.csv"
    path.write_text(CSV)

    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.get_by_label("User name").fill("analyst")
    page.get_by_label("Password").fill("pw-analyst")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(custodian.name)

    page.get_by_role("button", name="Upload a data set").first.click()
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_label("Name").fill("Clinic extract")
    page.get_by_role("button", name="Upload", exact=True).click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Clinic extract")
    # The page polls the profiling job and reloads itself when the worker is done.
    expect(page.get_by_test_id("dataset-status")).to_have_text("Ready", timeout=90_000)
    expect(page.get_by_test_id("profile-table")).to_contain_text("postal_code")

    page.get_by_test_id("classify-link").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Step 2")
    row = page.locator("tr[data-column='email']")
    expect(row.get_by_test_id("suggested-role")).to_have_text("Direct identifier")
    expect(
        page.locator("tr[data-column='postal_code']").get_by_test_id("suggested-role")
    ).to_have_text("Quasi-identifier")

    # Depart from one suggestion: the diagnosis is kept as "other", which needs a reason.
    diagnosis = page.locator("tr[data-column='diagnosis']")
    diagnosis.get_by_role("combobox").select_option("other")
    page.get_by_test_id("save-classification").click()
    expect(page.get_by_role("alert").first).to_contain_text("say why")
    diagnosis = page.locator("tr[data-column='diagnosis']")
    diagnosis.get_by_role("textbox").fill("Released only as aggregate counts elsewhere")
    page.get_by_test_id("save-classification").click()
    expect(page.get_by_text("Classification saved")).to_be_visible()
    expect(page.get_by_test_id("confirmed-count")).to_have_text("7")
    expect(page.get_by_test_id("history")).to_contain_text("Released only as aggregate counts")

    roles = dict(Variable.objects.values_list("name", "role"))
    assert roles["diagnosis"] == "other"
    assert roles["email"] == "direct"
    assert roles["postal_code"] == "quasi"
    change = ClassificationChange.objects.get(variable__name="diagnosis")
    assert (change.from_role, change.to_role, change.changed_by) == ("", "other", analyst)
