"""Issue 23 (schemathesis, ``positive_data_acceptance``): what the schema allows, the API
accepts. The questionnaires' answers were documented as any text and the audit's ``since`` and
``until`` as any string; a client following the schema had its requests refused. The schema
now names the answers (an enum per question, with the engine's answer sets) and the dates'
formats; the record a reviewer reads is documented without the ARX tables."""

from __future__ import annotations

from typing import Any

import pytest

from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold

pytestmark = pytest.mark.django_db


def _schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)  # type: ignore[no-any-return]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _enum(schema: dict[str, Any], node: dict[str, Any]) -> set[Any]:
    node = _resolve(schema, node)
    if "enum" in node:
        return set(node["enum"])
    return set().union(*(_enum(schema, n) for n in node.get("oneOf", node.get("allOf", []))))


def test_every_questionnaire_answer_is_an_enum_of_its_answers():
    schema = _schema()
    components = schema["components"]["schemas"]
    threshold = components["ThresholdAnswersRequest"]["properties"]
    for key, _question, answers in engine_threshold.INVASION_FACTORS:
        assert _enum(schema, threshold[key]) == set(answers), key
    motives = _resolve(schema, components["ContextRequest"]["properties"]["motives"])
    for key, _question, answers in engine_context.MOTIVES:
        assert _enum(schema, motives["properties"][key]) - {None} == set(answers), key


def test_the_audit_dates_are_documented_as_dates_or_times(client_for, analyst):
    (operation,) = [_schema()["paths"]["/api/v1/audit/"]["get"]]
    params = {p["name"]: p["schema"] for p in operation["parameters"]}
    for name in ("since", "until"):
        assert params[name] == {
            "oneOf": [
                {"type": "string", "format": "date"},
                {"type": "string", "format": "date-time"},
            ]
        }
    client = client_for(analyst)
    for value in ("2024-03-05", "2024-03-05T10:00:00Z", "2024-03-05T10:00:00.5+05:30"):
        assert client.get("/api/v1/audit/", {"since": value}).status_code == 200, value
    assert client.get("/api/v1/audit/", {"since": "assessment"}).status_code == 400


def test_the_record_documents_the_arx_table_as_optional():
    schema = _schema()
    hierarchy = schema["components"]["schemas"]["RecordHierarchy"]
    assert "arx_csv" in hierarchy["properties"]
    assert "arx_csv" not in hierarchy.get("required", [])


def test_an_empty_audit_date_is_refused_as_the_schema_says(client_for, analyst):
    response = client_for(analyst).get("/api/v1/audit/", {"until": ""})
    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {
        "until": "Use a date (YYYY-MM-DD) or an ISO 8601 time."
    }


def _shapes(schema: dict[str, Any], component: str) -> dict[str, dict[str, Any]]:
    node = schema["components"]["schemas"][component]
    return {ref["$ref"].rsplit("/", 1)[1]: _resolve(schema, ref) for ref in node["oneOf"]}


def test_the_release_request_states_who_must_be_named():
    """Step 1's rules (``services.assessment_set_release``) are in the schema: a semi-public
    or non-public release requires a recipient, an agreement requires its reference; each a
    text with something other than spaces. Documented as one object with every field
    optional, a schema-valid semi-public release without a recipient was refused."""
    schema = _schema()
    operation = schema["paths"]["/api/v1/assessments/{id}/release/"]["put"]
    assert operation["requestBody"]["required"] is True
    shapes = _shapes(schema, "ReleaseRequest")
    assert set(shapes) == {
        "PublicReleaseRequest",
        "PublicReleaseUnderAgreementRequest",
        "NamedReleaseRequest",
        "NamedReleaseUnderAgreementRequest",
    }
    for name, shape in shapes.items():
        named = name.startswith("Named")
        under_agreement = name.endswith("UnderAgreementRequest")
        assert _enum(schema, shape["properties"]["release_model"]) == (
            {"semi_public", "non_public"} if named else {"public"}
        ), name
        required = set(shape["required"])
        expected = {"release_model"}
        if named:
            expected.add("recipient_organization")
        if under_agreement:
            expected |= {"agreement_kind", "agreement_reference"}
        assert required == expected, name
        for field in required - {"release_model", "agreement_kind"}:
            assert shape["properties"][field]["pattern"] == r"\S", (name, field)
        kind = shape["properties"]["agreement_kind"]
        if under_agreement:
            assert _enum(schema, kind) == {"dsa", "terms_of_use"}, name
        else:
            assert kind == {"type": "string", "maxLength": 0, "default": ""}, name


def test_each_release_shape_is_accepted_and_what_it_excludes_is_refused(
    client_for, analyst, assessment
):  # type: ignore[no-untyped-def]
    client = client_for(analyst)
    url = f"/api/v1/assessments/{assessment.id}/release/"
    agreement = {"agreement_kind": "dsa", "agreement_reference": "DSA-7"}
    accepted = [
        {"release_model": "public"},
        {"release_model": "public", **agreement},
        {"release_model": "semi_public", "recipient_organization": "Lab A"},
        {"release_model": "non_public", "recipient_organization": "Lab A", **agreement},
    ]
    for body in accepted:
        response = client.put(url, body, content_type="application/json")
        assert response.status_code == 200, (body, response.json())
        assert response.json()["release_model"] == body["release_model"]
        assert response.json()["agreement_reference"] == body.get("agreement_reference", "")
    assert response.json()["effective_release_model"] == "non_public"
    refused = [
        ({"release_model": "semi_public"}, "recipient_organization"),
        ({"release_model": "non_public", "recipient_organization": "  "}, "recipient_organization"),
        ({"release_model": "public", "agreement_kind": "dsa"}, "agreement_reference"),
        (
            {"release_model": "public", **agreement, "agreement_reference": " "},
            "agreement_reference",
        ),
    ]
    for body, field in refused:
        response = client.put(url, body, content_type="application/json")
        assert response.status_code == 400, body
        assert response.json()["extra"]["field"] == field, (body, response.json())
