"""After Step 7 the release itself is measured: l-diversity of each sensitive variable over
the released classes, small cells, and every variable's distribution before and after
(a fully suppressed column counts as missing, its original distribution shown)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.reviews.conftest import complete

pytestmark = pytest.mark.django_db


def test_the_release_is_measured(assessment, analyst, client_for):
    # 10 people, non-public: the search generalizes age to 20-year bands and sex to *.
    assessment = complete(assessment, analyst)
    applied = assessment.apply_result
    assert applied["levels"] == {"age": 3, "sex": 1}
    # Released classes: ages 30 (5 records) and 40-50 (5 records) on age alone (sex is *);
    # diagnoses J45 J45 J45 E11 I10 | J45 E11 E11 I10 J45: three distinct in each class.
    (diag,) = applied["attribute_disclosure_after"]
    assert (diag["column"], diag["classes"], diag["smallest_l"]) == ("diagnosis", 2, 3)
    assert diag["homogeneous_shared_classes"] == 0 and diag["flagged_classes"] == []
    # Before (Step 4) the class (30, F) was all asthma: the release removed that leak.
    assert assessment.risk_result["attribute_disclosure"][0]["homogeneous_shared_rows"] == 3

    by = {v["column"]: v for v in applied["variable_distributions"]}
    assert set(by) == {"email", "sex", "diagnosis"}  # age carries values: the QI charts
    assert by["email"]["status"] == "removed"
    sex = by["sex"]
    assert sex["status"] == "suppressed"
    assert (sex["labels"], sex["before"], sex["after"]) == (["F", "M"], [7, 3], [0, 0])
    assert (sex["missing_before"], sex["missing_after"], sex["rows_after"]) == (0, 10, 10)
    diagnosis = by["diagnosis"]
    assert diagnosis["labels"] == ["J45 Asthma", "E11 Diabetes", "I10 Hypertension"]
    assert diagnosis["before"] == diagnosis["after"] == [5, 3, 2]
    assert applied["small_cells_after"]["univariate_total"] >= 1  # 5-record bands < 20

    page = (
        client_for(analyst)
        .get(
            reverse(
                "assessment-step",
                kwargs={
                    "org": assessment.organization.slug,
                    "assessment_id": assessment.id,
                    "slug": "utility",
                },
            )
        )
        .content.decode()
    )
    assert 'data-testid="fully-suppressed">Fully suppressed in the release' in page
    assert "sex: records per value, before and after" in page
    assert "diagnosis: records per value, before and after" in page
    assert 'data-testid="diversity-after"' in page
