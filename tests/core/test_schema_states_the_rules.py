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
