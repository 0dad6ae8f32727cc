"""The hierarchies' value lists as a role not allowed raw values sees them (issue #22): the
API and Step 7's page follow the report's rule — an original value held by fewer records
than the threshold's class size is never shown; the analyst sees every value."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from apps.assessments import services
from apps.assessments.hierarchies import class_threshold, value_counts
from tests.assessments.conftest import HIGH_ANSWERS

pytestmark = pytest.mark.django_db


def _labels(hierarchy: dict, level: int) -> list[str | None]:
    return [label for label, _ in hierarchy["preview"][level]["top"]]


@pytest.fixture
def rare_ages(assessment):
    """The 10-person register, public, at a high invasion of privacy (threshold 0.05:
    k = 20): every age (30 ×5, 40 ×4, 50 ×1) is held by fewer than k records."""
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=HIGH_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    assessment.refresh_from_db()
    assert class_threshold(assessment) == 20
    assert value_counts(assessment, "age") == {"30": 5, "40": 4, "50": 1}
    return assessment


def test_a_reviewer_gets_no_rare_original_value_from_the_hierarchies_api(
    rare_ages, analyst, reviewer, client_for
):
    url = f"/api/v1/assessments/{rare_ages.id}/hierarchies/"
    age = {h["column"]: h for h in client_for(reviewer).get(url).json()}["age"]
    assert age["arx_csv"] is None
    assert _labels(age, 0) == [None, None, None]  # three ages, their records, not their value
    assert [n for _, n in age["preview"][0]["top"]] == [5, 4, 1]
    assert not re.search(r'"(30|40|50)"', str(age).replace("'", '"'))

    age = {h["column"]: h for h in client_for(analyst).get(url).json()}["age"]
    assert "30;" in age["arx_csv"]
    assert _labels(age, 0) == ["30", "40", "50"]


def test_step_7_shows_a_reviewer_the_count_not_the_rare_value(rare_ages, reviewer, client_for):
    page = client_for(reviewer).get(
        reverse(
            "assessment-step",
            kwargs={
                "org": rare_ages.organization.slug,
                "assessment_id": rare_ages.id,
                "slug": "deidentify",
            },
        )
    )
    table = re.search(r'data-testid="hierarchy-age".*?</table>', page.content.decode(), re.S)
    assert table
    level0 = re.search(r"<tr><td>0 \(.*?</tr>", table.group(0), re.S)
    assert level0
    assert level0.group(0).count("(a value held by fewer than 20 records)") == 3
    assert not re.search(r"\b(30|40|50): ", level0.group(0))
