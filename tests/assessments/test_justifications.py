"""Each altered variable carries its ISO/IEC 20889 class and needs a justification before
the release is submitted (issue 28, EMA Policy 0070's anonymisation report)."""

from __future__ import annotations

import pytest

from apps.assessments.justifications import (
    altered_variables,
    justification_blockers,
    release_transformations,
    variable_justifications_set,
)
from apps.assessments.models import Assessment
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.reviews.snapshot import assessment_record
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import WAIVER

AGE = "Ages above 85 are too few to release; age is not needed for the diagnosis counts."
EMAIL = "An e-mail address names the person and the study never needs to contact anyone."


def _unjustified(assessment: Assessment) -> Assessment:
    Assessment.objects.filter(id=assessment.id).update(variable_justifications={})
    assessment.refresh_from_db()
    return assessment


def test_altered_variables_name_their_transformation_and_iso_class(traded):
    # traded: email (a direct identifier) removed, age generalized to its top level '*',
    # sex kept as it is, no record removed
    rows = {r["column"]: r["transformations"] for r in altered_variables(traded.apply_result)}
    assert sorted(rows) == ["age", "email"]
    (email,) = rows["email"]
    assert email["key"] == "mask:remove"
    assert email["iso_class"] == "Suppression techniques — Masking"
    (age,) = rows["age"]
    assert age["key"] == "attribute_suppression"
    assert age["iso_class"] == "Suppression techniques — Masking"
    assert age["detail"].startswith("level 4: ")
    assert release_transformations(traded.apply_result) == []


def test_generalization_techniques_and_record_suppression_are_classed():
    applied = {
        "levels": {"age": 1, "zip": 0},
        "level_labels": {"age": "intervals of 5", "zip": "original"},
        "masking": {"mrn": {"method": "hmac"}},
        "techniques": [
            {"technique": "rounding", "title": "Rounding", "changed": ["income"]},
            {"technique": "pram", "title": "PRAM", "changed": ["diagnosis"]},
        ],
        "suppressed_rows": 12,
    }
    rows = {r["column"]: r["transformations"][0] for r in altered_variables(applied)}
    assert set(rows) == {"age", "mrn", "income", "diagnosis"}  # zip stays at level 0
    assert rows["age"]["iso_class"] == "Generalization techniques"
    assert rows["mrn"]["iso_category"] == "Pseudonymization techniques"
    assert rows["income"]["iso_class"] == "Generalization techniques — Rounding"
    assert rows["diagnosis"]["iso_class"] == "Randomization techniques"
    (records,) = release_transformations(applied)
    assert records["iso_class"] == "Suppression techniques — Record suppression"
    assert records["detail"] == "12 records removed"


def test_submission_names_each_unjustified_variable(traded, analyst):
    assessment = _unjustified(traded)
    (blocker,) = justification_blockers(assessment)
    assert "no justification is recorded for: email, age." in blocker
    with pytest.raises(ApplicationError) as refused:
        assessment_submit(
            assessment=assessment, user=analyst, note="Ready.", intruder_waiver=WAIVER
        )
    assert "email, age" in refused.value.message

    variable_justifications_set(assessment=assessment, user=analyst, justifications={"age": AGE})
    (blocker,) = justification_blockers(assessment)
    assert blocker.endswith("no justification is recorded for: email.")
    assert AuditEvent.objects.filter(action="assessment.justifications").count() >= 1


def test_only_altered_variables_are_justified_and_blank_removes(traded, analyst):
    assessment = _unjustified(traded)
    with pytest.raises(ApplicationError, match="not altered by it: sex"):
        variable_justifications_set(
            assessment=assessment, user=analyst, justifications={"sex": AGE}
        )
    with pytest.raises(ApplicationError, match="must be text"):
        variable_justifications_set(assessment=assessment, user=analyst, justifications={"age": 5})
    variable_justifications_set(
        assessment=assessment, user=analyst, justifications={"age": AGE, "email": EMAIL}
    )
    variable_justifications_set(assessment=assessment, user=analyst, justifications={"age": " "})
    assessment.refresh_from_db()
    assert assessment.variable_justifications == {"email": EMAIL}


def test_justifications_are_frozen_with_the_submission(traded, analyst):
    assessment = _unjustified(traded)
    variable_justifications_set(
        assessment=assessment, user=analyst, justifications={"age": AGE, "email": EMAIL}
    )
    assessment_submit(assessment=assessment, user=analyst, note="Ready.", intruder_waiver=WAIVER)
    assessment.refresh_from_db()
    frozen = assessment_record(assessment).assessment
    assert frozen.variable_justifications == {"age": AGE, "email": EMAIL}
    with pytest.raises(ApplicationError):
        variable_justifications_set(
            assessment=assessment, user=analyst, justifications={"age": "Changed after."}
        )


def test_api_and_step7_form(traded, analyst, reviewer, client_for):
    assessment = _unjustified(traded)
    url = f"/api/v1/assessments/{assessment.id}/justifications/"
    got = client_for(analyst).get(url).json()
    assert got["missing"] == ["email", "age"]
    assert got["variables"][0]["transformations"][0]["iso_class"] == (
        "Suppression techniques — Masking"
    )
    # a reviewer may not read raw values: a direct identifier's row comes back withheld
    # (apps.assessments.withheld), the quasi-identifier's whole
    seen = client_for(reviewer).get(url).json()["variables"]
    assert seen[0]["values_withheld"] is True
    assert seen[1]["transformations"][0]["key"] == "attribute_suppression"
    refused = client_for(reviewer).put(
        url, {"justifications": {"age": AGE}}, content_type="application/json"
    )
    assert refused.status_code == 403
    put = client_for(analyst).put(
        url, {"justifications": {"age": AGE}}, content_type="application/json"
    )
    assert put.status_code == 200, put.content
    assert put.json()["missing"] == ["email"]

    org = assessment.organization.slug
    page = client_for(analyst).get(f"/o/{org}/assessments/{assessment.id}/steps/deidentify/")
    body = page.content.decode()
    assert 'data-testid="justification-email"' in body
    assert "Suppression techniques — Masking" in body
    saved = client_for(analyst).post(
        f"/o/{org}/assessments/{assessment.id}/steps/deidentify/justifications/",
        {"column": ["email", "age"], "justification": [EMAIL, AGE]},
    )
    assert saved.status_code == 302
    assessment.refresh_from_db()
    assert assessment.variable_justifications == {"email": EMAIL, "age": AGE}
