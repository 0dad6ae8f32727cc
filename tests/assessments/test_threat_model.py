"""The threat model of issue 28, recorded in Step 1 (recipients, pseudonymisation domain) and
Step 5 (the adversary's known columns, target known to be in the data), through the service,
the pages and the API; a pseudonymised identifier without a declared domain blocks submission."""

import json

import pytest
from django.urls import reverse

from apps.assessments import deidentify, services
from apps.assessments.threat_model import threat_model_blockers
from apps.assessments.threat_model_live import current_threat_model
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.reviews.submissions import submission_blockers

DSA = {
    "release_model": "non_public",
    "recipient_organization": "University X",
    "agreement_kind": "dsa",
    "agreement_reference": "DSA-2026-014",
}


def test_recipients_are_named_one_by_one(assessment, analyst):
    services.assessment_set_release(
        assessment=assessment,
        user=analyst,
        recipients="University X, epidemiology unit\n\n  Dr. A. Reader \nuniversity x, EPIDEMIOLOGY unit",
        **DSA,
    )
    assert assessment.threat_model["recipients"] == [
        "University X, epidemiology unit",
        "Dr. A. Reader",
    ]
    event = AuditEvent.objects.filter(action="assessment.release").latest("sequence")
    assert event.details["threat_model"]["recipients"] == assessment.threat_model["recipients"]


def test_without_names_the_recipient_organization_is_the_recipient(assessment):
    services.assessment_set_release(assessment=assessment, **DSA)
    model = current_threat_model(assessment)
    assert (model["recipients"], model["recipients_named"]) == (["University X"], False)
    services.assessment_set_release(assessment=assessment, release_model="public")
    assert current_threat_model(assessment)["anyone"] is True


def test_too_many_or_too_long_recipients_are_refused(assessment):
    with pytest.raises(ApplicationError, match="at most 200 characters"):
        services.assessment_set_release(assessment=assessment, recipients=["x" * 201], **DSA)
    with pytest.raises(ApplicationError, match="At most 50 recipients"):
        services.assessment_set_release(
            assessment=assessment, recipients=[f"R{i}" for i in range(51)], **DSA
        )


def test_known_columns_are_prefilled_from_the_quasi_identifiers_and_editable(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_context(assessment=assessment, answers={})
    model = current_threat_model(assessment)
    # PEOPLE's quasi-identifiers (Step 2's suggestions accepted): age and sex.
    assert (model["known_columns"], model["known_columns_prefilled"]) == (["age", "sex"], True)
    assert model["target_in_sample"] == "known"
    services.assessment_set_context(
        assessment=assessment,
        answers={},
        known_columns=["diagnosis", "age"],
        target_in_sample="not_known",
    )
    model = current_threat_model(assessment)
    assert model["known_columns"] == ["age", "diagnosis"]  # in the data set's order
    assert (model["known_not_quasi"], model["quasi_not_known"]) == (["diagnosis"], ["sex"])
    assert model["target_in_sample"] == "not_known"


def test_a_known_column_not_in_the_data_set_or_a_bad_answer_is_refused(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    with pytest.raises(ApplicationError, match="no column 'postcode'"):
        services.assessment_set_context(
            assessment=assessment, answers={}, known_columns=["age", "postcode"]
        )
    with pytest.raises(ApplicationError, match="'maybe' is not an answer"):
        services.assessment_set_context(assessment=assessment, answers={}, target_in_sample="maybe")


def test_a_pseudonymised_identifier_needs_a_declared_domain(assessment, analyst):
    services.assessment_set_release(assessment=assessment, release_model="public")
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    blockers = threat_model_blockers(current_threat_model(assessment))
    assert blockers == [
        "Step 1: email is pseudonymised or encrypted: declare the pseudonymisation domain (who "
        "can link the pseudonyms back, and where the key is kept)."
    ]
    assert blockers[0] in submission_blockers(assessment)
    services.assessment_set_release(
        assessment=assessment,
        release_model="public",
        pseudonym_linkers="The custodian's data office only",
        pseudonym_key_kept="The custodian's key vault, apart from the release",
    )
    assert threat_model_blockers(current_threat_model(assessment)) == []


def _step(assessment, slug):  # type: ignore[no-untyped-def]
    return reverse(
        "assessment-step",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id, "slug": slug},
    )


def test_the_pages_record_the_threat_model(assessment, analyst, client_for):
    client = client_for(analyst)
    response = client.post(
        _step(assessment, "release"),
        {
            "release_model": "public",
            "recipients": "Open data portal",
            "pseudonym_linkers": "Nobody outside the custodian",
            "pseudonym_key_kept": "Custodian vault",
        },
    )
    assert response.status_code == 302
    assessment.refresh_from_db()
    assert assessment.threat_model["recipients"] == ["Open data portal"]
    page = client.get(_step(assessment, "context-risk"))
    form = page.context["form"]
    assert form.initial["known_columns"] == ["age", "sex"]
    response = client.post(
        _step(assessment, "context-risk"),
        {
            "breach_rate": "0.27",
            "acquaintances": "150",
            "known_columns": ["age", "sex", "diagnosis"],
            "target_in_sample": "known",
        },
    )
    assert response.status_code == 302
    assessment.refresh_from_db()
    assert assessment.threat_model["known_columns"] == ["age", "sex", "diagnosis"]
    page = client.get(_step(assessment, "context-risk")).content.decode()
    assert 'data-testid="known-not-quasi"' in page and "diagnosis" in page


def test_the_api_records_the_threat_model(assessment, analyst, client_for):
    api = client_for(analyst)
    base = f"/api/v1/assessments/{assessment.id}/"

    def put(path, body):  # type: ignore[no-untyped-def]
        return api.put(base + path, json.dumps(body), content_type="application/json")

    answer = put(
        "release/",
        {
            "release_model": "semi_public",
            "recipient_organization": "Registered users",
            "recipients": ["Registered users of the portal", "Portal operator"],
            "pseudonym_key_kept": "Custodian vault",
        },
    )
    assert answer.status_code == 200, answer.json()
    got = api.get(base + "release/").json()
    assert got["recipients"] == ["Registered users of the portal", "Portal operator"]
    assert (got["pseudonym_linkers"], got["pseudonym_key_kept"]) == ("", "Custodian vault")
    answer = put(
        "context/",
        {
            "prevalence": 0.01,
            "prevalence_source": "Registry",
            "known_columns": ["sex"],
            "target_in_sample": "not_known",
        },
    )
    assert answer.status_code == 200, answer.json()
    got = api.get(base + "context/").json()
    assert (got["known_columns"], got["target_in_sample"]) == (["sex"], "not_known")
    refused = put(
        "context/", {"prevalence": 0.01, "prevalence_source": "R", "known_columns": ["x"]}
    )
    assert refused.status_code == 400
