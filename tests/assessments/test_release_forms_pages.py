"""The release forms on the pages (issue 28): chosen and written from Step 7's page (the
same parser as the API), shown in Step 8, on the review page and in the report."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.assessments import services
from apps.reports.content import report_html
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import WAIVER, _run
from tests.assessments.test_release_forms import at_step_7, pattern_people, table_people

pytestmark = pytest.mark.django_db


@pytest.fixture
def table_assessment(custodian, analyst):  # type: ignore[no-untyped-def]
    return at_step_7(custodian, analyst, table_people())


@pytest.fixture
def synthetic_assessment(custodian, analyst):  # type: ignore[no-untyped-def]
    return at_step_7(custodian, analyst, pattern_people())


def step(assessment, slug: str) -> str:  # type: ignore[no-untyped-def]
    return reverse(
        "assessment-step",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id, "slug": slug},
    )


def form_url(assessment) -> str:  # type: ignore[no-untyped-def]
    return reverse(
        "assessment-release-form",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id},
    )


def approved(assessment, analyst, reviewer):  # type: ignore[no-untyped-def]
    assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Fit for the purpose.")
    assessment_submit(assessment=assessment, user=analyst, note="Ready.", intruder_waiver=WAIVER)
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Protected."
    )
    assessment.refresh_from_db()
    return decision


def test_a_table_from_the_page_to_the_report(
    table_assessment, analyst, reviewer, client_for
) -> None:
    client = client_for(analyst)
    page = client.get(step(table_assessment, "deidentify")).content.decode()
    assert 'data-testid="release-form"' in page and 'data-testid="form-table"' in page
    # A bad threshold is refused by name, and nothing is saved.
    response = client.post(
        form_url(table_assessment),
        {"form": "table", "table-rows": "sex", "table-columns": "city", "table-threshold": "x"},
        follow=True,
    )
    assert "The small-cell threshold must be a whole number" in response.content.decode()
    table_assessment.refresh_from_db()
    assert table_assessment.deid.release_form.form == "microdata"
    client.post(
        form_url(table_assessment),
        {
            "form": "table",
            "table-rows": "sex",
            "table-columns": "city",
            "table-threshold": "5",
            "action": "write",
        },
    )
    table_assessment.refresh_from_db()
    assert table_assessment.deid.release_form.table.threshold == 5
    _run(table_assessment.apply_job)
    page = client.get(step(table_assessment, "deidentify")).content.decode()
    assert "1 hidden as small and 3 as complementary" in page and "meets the target" in page
    page = client.get(step(table_assessment, "utility")).content.decode()
    assert 'data-testid="table-primary">1<' in page
    assert 'data-testid="table-complementary">3<' in page
    assert page.count('data-testid="hidden-cell"') == 4
    assert "every hidden cell protected" in page
    decision = approved(table_assessment, analyst, reviewer)
    review = client_for(reviewer).get(
        reverse(
            "assessment-review",
            kwargs={
                "org": table_assessment.organization.slug,
                "assessment_id": table_assessment.id,
            },
        )
    )
    assert review.status_code == 200
    text = review.content.decode()
    assert 'data-testid="review-release-form"' in text and 'data-testid="table-audit-cells"' in text
    html = report_html(assessment=table_assessment, decision=decision)
    assert 'data-testid="report-release-form"' in html
    assert "7.2 Release form: Aggregated table with complementary suppression" in html
    assert table_assessment.apply_result["sha256"]["csv"] in html
    assert "7.2 Generalization hierarchies" not in html


def test_synthetic_data_from_the_page_to_the_report(
    synthetic_assessment, analyst, reviewer, client_for
) -> None:
    client = client_for(analyst)
    client.post(
        form_url(synthetic_assessment),
        {
            "form": "synthetic",
            "synthetic-columns": ["age", "sex", "diagnosis"],
            "synthetic-secret": "diagnosis",
            "synthetic-rows": "",
            "synthetic-control_share": "0.25",
            "action": "write",
        },
    )
    synthetic_assessment.refresh_from_db()
    assert synthetic_assessment.deid.release_form.synthetic.control_share == 0.25
    _run(synthetic_assessment.apply_job)
    synthetic_assessment.refresh_from_db()
    result = synthetic_assessment.apply_result
    # 1,000 records, 250 held back: 750 learnt from and drawn.
    assert result["rows_out"] == 750 and result["attacks"]["targets"] == 250
    page = client.get(step(synthetic_assessment, "utility")).content.decode()
    assert 'data-testid="synthetic-rows">750<' in page
    assert page.count('data-testid="attack-row"') == 4
    decision = approved(synthetic_assessment, analyst, reviewer)
    review = (
        client_for(reviewer)
        .get(
            reverse(
                "assessment-review",
                kwargs={
                    "org": synthetic_assessment.organization.slug,
                    "assessment_id": synthetic_assessment.id,
                },
            )
        )
        .content.decode()
    )
    assert review.count('data-testid="attack-row"') == 4
    html = report_html(assessment=synthetic_assessment, decision=decision)
    assert "7.2 Release form: Synthetic data" in html
    assert html.count('data-testid="attack-row"') == 4


def test_the_api_sets_and_writes_a_table_with_the_same_parser(
    table_assessment, analyst, reviewer, client_for
) -> None:
    api = client_for(analyst)
    url = f"/api/v1/assessments/{table_assessment.id}/release-form/"
    refused = api.put(
        url, {"form": "table", "table": {"threshold": 1}}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert "The small-cell threshold must be a whole number from 2" in refused.json()["message"]
    assert refused.json()["extra"] == {"field": "table.threshold"}
    # A reviewer reads it but cannot change it.
    assert client_for(reviewer).get(url).json()["form"] == "microdata"
    assert (
        client_for(reviewer)
        .put(url, {"form": "table"}, content_type="application/json")
        .status_code
        == 403
    )
    saved = api.put(
        url,
        {"form": "table", "table": {"rows": "sex", "columns": "city", "threshold": 5}},
        content_type="application/json",
    )
    assert saved.status_code == 200 and saved.json()["table"]["columns"] == "city"
    started = api.post(f"{url}write/")
    assert started.status_code == 202
    table_assessment.refresh_from_db()
    _run(table_assessment.apply_job)
    applied = api.get(f"/api/v1/assessments/{table_assessment.id}/apply/").json()
    assert applied["result"]["form"] == "table"
    assert applied["result"]["table"]["primary"] == [{"row": "F", "column": "Windsor"}]
