"""Step 2 in Chromium on the public-looking extract (issue 22): bulk accept leaves the rows
nothing recognized for the person, the reason boxes start empty, and a role change goes
through only with a reason typed in its box."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from apps.classification.models import ClassificationChange, Variable
from tests.browser.conftest import browser, page  # noqa: F401  (Chromium fixtures)
from tests.browser.test_assessment_flow import sign_in
from tests.classification.public_extract import CATEGORY_LISTS, EXPECTED_QUASI, public_extract
from tests.conftest import read_now

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_bulk_accept_and_typed_reasons_in_the_page(live_server, page, analyst, custodian):  # noqa: F811
    from apps.datasets.services import dataset_upload

    csv = public_extract(400, seed=314).write_csv().encode()
    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("extract.csv", csv),
            name="Public extract",
        )
    )
    base = live_server.url
    sign_in(page, base, "analyst", "pw-analyst")
    page.goto(f"{base}/o/{custodian.slug}/datasets/{dataset.id}/classify/")
    page.get_by_test_id("accept-suggestions").click()
    expect(page.get_by_text("left for you to decide")).to_be_visible()

    for column in CATEGORY_LISTS:
        row = page.locator(f"tr[data-column='{column}']")
        expect(row.get_by_test_id("decide-row")).to_be_visible()
        expect(row.get_by_role("combobox")).to_have_value("")
    for column in EXPECTED_QUASI:
        expect(page.locator(f"tr[data-column='{column}']").get_by_role("combobox")).to_have_value(
            "quasi"
        )
    for box in page.locator("tr[data-column]").get_by_role("textbox").all():
        expect(box).to_have_value("")

    # A role changed without a typed reason is refused, and nothing is saved.
    age = page.locator("tr[data-column='c01']")
    age.get_by_role("combobox").select_option("other")
    page.get_by_test_id("save-classification").click()
    expect(page.locator("tr[data-column='c01']").get_by_role("alert")).to_contain_text("say why")
    assert Variable.objects.get(dataset=dataset, name="c01").role == "quasi"

    # Typed, it goes through; a category list is decided the same way.
    age = page.locator("tr[data-column='c01']")
    age.get_by_role("combobox").select_option("other")
    age.get_by_role("textbox").fill("Ages are released elsewhere in bands; dropped here.")
    colours = page.locator("tr[data-column='c16']")
    colours.get_by_role("combobox").select_option("quasi")
    colours.get_by_role("textbox").fill("Vehicle colour could be seen by a witness.")
    page.get_by_test_id("save-classification").click()
    expect(page.get_by_text(re.compile(r"Classification saved \(2 change"))).to_be_visible()
    reasons = dict(
        ClassificationChange.objects.filter(variable__dataset=dataset)
        .exclude(reason__startswith="Accepted as suggested")
        .values_list("variable__name", "reason")
    )
    assert reasons == {
        "c01": "Ages are released elsewhere in bands; dropped here.",
        "c16": "Vehicle colour could be seen by a witness.",
    }
    expect(page.get_by_test_id("history")).to_contain_text("Vehicle colour could be seen")
