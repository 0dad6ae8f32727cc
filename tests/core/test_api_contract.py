"""The API keeps its contract: schemathesis sends generated requests, valid and invalid, to
every operation of ``/api/schema/`` and checks each answer against the schema (issue 15).

No answer is a server error; every status code, content type and body is the documented one;
invalid input is refused. The caller is an analyst of an organization with a profiled data
set and an assessment, and generated ids are mixed with the real ones, so that the paths
behind a successful lookup are exercised, not only the 404s.

Bounded and repeatable: ``MAX_EXAMPLES`` per operation, derandomized (the same requests on
every run), each operation with DEBUG off and on (local settings' debug pages must not answer
for the API). Marked ``contract``: ``make test`` runs it, ``make test-fast`` leaves it out.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import pytest
import schemathesis
import yaml
from django.core import signals
from django.db import close_old_connections
from django.test import Client
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from deidweb.wsgi import application

pytestmark = [pytest.mark.contract, pytest.mark.django_db]

# A longer or random hunt, by hand: DEIDWEB_CONTRACT_EXAMPLES=200 DEIDWEB_CONTRACT_RANDOM=1
# DEIDWEB_CONTRACT_ROLE=admin pytest tests/core/test_api_contract.py
MAX_EXAMPLES = int(os.environ.get("DEIDWEB_CONTRACT_EXAMPLES", "12"))
DETERMINISTIC = not os.environ.get("DEIDWEB_CONTRACT_RANDOM")
ROLE = os.environ.get("DEIDWEB_CONTRACT_ROLE", "analyst")
# Of 63 operations, 52 answer 2xx at 12 examples; the other 11 refuse what an analyst sends.
MIN_SUCCEEDED = 48
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
    positive_data_acceptance,
]

# The seeded objects of the running test, by the kind of id a path takes (see `seeded`).
REAL: dict[str, str] = {}
# Status codes each operation answered with, for the check that lookups succeeded too.
STATUSES: dict[str, set[int]] = {}


# Operations whose well-formed bodies must also fit the data set in a way neither the schema
# nor `fit_body` can make them: for these alone, a 400 answer to schema-valid data is the
# documented refusal (the message names the rule), not a contract failure. Every other
# operation must accept what its schema allows (``positive_data_acceptance``; issue 23).
DATA_RULES: dict[tuple[str, str], str] = {
    # the column must be one in which the applied release has findings (the seeded assessment
    # has none: Step 7 is not applied), and a reason must name what was found, in words
    ("POST", "/api/v1/assessments/{id}/deidentify/columns/"): "a released column's finding",
    ("POST", "/api/v1/assessments/{id}/deidentify/identifiers/"): "a column with detections",
    # keys must be the data set's direct identifiers (masking), quasi-identifiers (levels up
    # to each hierarchy's height) and sensitive variables (privacy models, whose spec must
    # parse); a character mask keeps at most half a value's mean length
    ("PUT", "/api/v1/assessments/{id}/deidentify/config/"): "the data set's columns",
    # the params must fit the column's values (an interval's bounds, the categories, an
    # ARX table's rows, a date format): only kind = suppress fits every column
    ("PUT", "/api/v1/assessments/{id}/hierarchies/{column}/"): "a kind the values fit",
    # the file must be a table the readers can open (an empty file is not; a schema can
    # state a binary's presence, not that it parses as CSV, Excel or Parquet)
    ("POST", "/api/v1/datasets/"): "a readable table",
}
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]  # schemathesis' default


def _config() -> SchemathesisConfig:
    return SchemathesisConfig.from_dict(
        {
            "operations": [
                {
                    "include-method": method,
                    "include-path": path,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}
                    },
                }
                for method, path in DATA_RULES
            ],
            "generation": {
                "mode": "all",
                "max-examples": MAX_EXAMPLES,
                "deterministic": DETERMINISTIC,
                "database": "none",
                # The session cookie is ours; random Authorization headers test nothing here.
                "with-security-parameters": False,
            },
        }
    )


@pytest.fixture
def seeded(analyst, assessment, user_factory) -> Iterator[dict[str, dict[str, str]]]:  # type: ignore[no-untyped-def]
    """An analyst's session (or ROLE's), and the ids of what their organization holds."""
    from apps.assessments import services
    from apps.audit.models import AuditEvent
    from apps.classification.models import Variable
    from tests.assessments.conftest import LOW_ANSWERS

    # Steps 1, 3 and 5 done, so that Step 7 (hierarchies, settings, search) answers too.
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    dataset = assessment.dataset
    REAL.clear()
    REAL.update(
        {
            "assessment": str(assessment.id),
            "dataset": str(dataset.id),
            "variable": str(Variable.objects.filter(dataset=dataset).order_by("position")[0].id),
            "job": str(dataset.profile_job_id),
            "audit": str(AuditEvent.objects.filter(organization=assessment.organization)[0].id),
            "organization": assessment.organization.slug,
            "column": "age",
        }
    )
    user = analyst
    if ROLE != "analyst":
        user = user_factory(f"contract-{ROLE}", assessment.organization, ROLE)
    client = Client()
    client.force_login(user)
    token = get_random_string(32)
    # The requests go through the real WSGI handler, which closes the database connection
    # when a request ends; the test's transaction lives on that connection (Django's own
    # test client disconnects the same handlers).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield {
        "cookies": {"sessionid": client.cookies["sessionid"].value, "csrftoken": token},
        "headers": {"X-CSRFToken": token},
    }
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _served_schema() -> dict[str, Any]:
    """The schema ``/api/schema/`` serves, built as its view builds it (collection runs
    before any database exists, so not over HTTP; `test_the_served_schema_is_the_one_tested`
    checks the two agree)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


def _kind_of(path: str) -> str:
    for prefix, kind in (
        ("/api/v1/assessments/", "assessment"),
        ("/api/v1/datasets/", "dataset"),
        ("/api/v1/classification/", "dataset"),
        ("/api/v1/variables/", "variable"),
        ("/api/v1/jobs/", "job"),
        ("/api/v1/audit/", "audit"),
    ):
        if path.startswith(prefix):
            return kind
    return ""


def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Half the time, the generated ids; half the time, those of the seeded objects."""
    if not path_parameters or context.operation is None:
        return st.just(path_parameters)
    real = dict(path_parameters)
    kind = _kind_of(context.operation.path)
    if "id" in real and kind:
        real["id"] = REAL[kind]
    if "slug" in real:
        real["slug"] = REAL["organization"]
    if "column" in real:
        real["column"] = REAL["column"]
    return st.sampled_from([path_parameters, real])


def _decision_fitted(item: dict[str, Any], variable: Any) -> dict[str, Any]:
    """A Step 2 decision on ``variable`` with a typed reason where the data set needs one:
    a role other than the column's present (or suggested) one, or a suggestion too weak to
    confirm without one (``variables_classify``). Other decisions are left as generated."""
    from apps.classification.services import _typed_reason

    current = variable.role or variable.suggested_role
    confirmable = bool(variable.role) or variable.confident_suggestion
    if item.get("role") == current and confirmable:
        return item
    if _typed_reason(str(item.get("reason", "")), variable):
        return item
    return {**item, "reason": f"Read by the analyst: {item.get('role')} fits this column."}


def _fit_decisions(body: list[Any]) -> list[Any]:
    """Each decision names a variable of the seeded data set (in turn)."""
    from apps.classification.models import Variable

    variables = list(Variable.objects.filter(dataset_id=REAL["dataset"]).order_by("position"))
    return [
        _decision_fitted(
            {**item, "variable": str(variables[i % len(variables)].id)},
            variables[i % len(variables)],
        )
        if isinstance(item, dict)
        else item
        for i, item in enumerate(body)
    ]


def _fit_classify(body: dict[str, Any]) -> dict[str, Any]:
    from apps.classification.models import Variable

    return _decision_fitted(body, Variable.objects.get(id=REAL["variable"]))


# Operations whose bodies name the data set's own variables: a valid request on the seeded
# data set names them (the schema states a UUID; which UUIDs exist is the data set's).
FITTERS: dict[tuple[str, str], tuple[str, Any]] = {
    ("POST", "/api/v1/classification/{id}/decisions/"): ("dataset", _fit_decisions),
    ("POST", "/api/v1/variables/{id}/classify/"): ("variable", _fit_classify),
}


def map_case(context: Any, case: Any) -> Any:
    """A valid request on a seeded object carries what that object's data make valid: its
    variables' ids, and a typed reason where a decision needs one (`FITTERS`). Invalid
    requests, and those on generated ids (404), are sent as generated."""
    fitter = FITTERS.get((case.operation.method.upper(), case.operation.path))
    if fitter is None or case.meta is None or not case.meta.generation.mode.is_positive:
        return case
    kind, fit = fitter
    if not REAL or case.path_parameters.get("id") != REAL[kind]:
        return case
    if isinstance(case.body, (dict, list)):
        case.body = fit(case.body)
    return case


schema = schemathesis.openapi.from_dict(_served_schema(), config=_config())
schema.app = application
schema.hook(flatmap_path_parameters)
schema.hook(map_case)


@pytest.fixture(params=[False, True], ids=["DEBUG off", "DEBUG on, as local settings"])
def debug(request, settings):  # type: ignore[no-untyped-def]
    """Each operation under the test settings and with DEBUG on, as local settings run:
    Django's debug pages (404, 500) must not replace the API's JSON errors (issue 23)."""
    settings.DEBUG = request.param
    return request.param


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_every_answer_keeps_the_contract(case, seeded, debug):  # type: ignore[no-untyped-def]
    # The seeded objects are shared by the examples of one operation on purpose: a DELETE
    # or a state change is seen by the requests after it, as a real client would see it.
    response = case.call_and_validate(checks=CHECKS, **seeded)
    STATUSES.setdefault(case.operation.label, set()).add(response.status_code)


def test_the_requests_reached_past_the_lookups():  # type: ignore[no-untyped-def]
    """Most operations answered 2xx at least once: the run tested what they do, not only
    their 404s and 400s (runs after the operations, in file order)."""
    if len(STATUSES) < len(list(schema.get_all_operations())):
        pytest.skip("run with the whole of test_every_answer_keeps_the_contract")
    succeeded = sorted(op for op, codes in STATUSES.items() if any(200 <= c < 300 for c in codes))
    assert len(succeeded) >= MIN_SUCCEEDED, sorted(set(STATUSES) - set(succeeded))


def test_the_served_schema_is_the_one_tested(client_for, analyst):  # type: ignore[no-untyped-def]
    served = client_for(analyst).get("/api/schema/?format=json")
    assert served.status_code == 200
    assert served.json() == _served_schema()
    operations = sum(
        method in ("get", "post", "put", "patch", "delete")
        for methods in served.json()["paths"].values()
        for method in methods
    )
    assert operations >= 63  # as many as the probe found, and more since


def test_the_schema_and_docs_are_for_signed_in_users_only(client, analyst):  # type: ignore[no-untyped-def]
    for path in ("/api/schema/", "/api/schema/?format=json"):
        response = client.get(path)
        assert response.status_code in (401, 403), path
        assert yaml.safe_load(response.content)["message"]  # YAML, or JSON (a subset)
        assert b"/api/v1/" not in response.content
    for path in ("/api/docs/", "/api/redoc/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    client.force_login(analyst)
    assert client.get("/api/schema/").status_code == 200


def test_an_unknown_api_path_answers_json(client_for, analyst):  # type: ignore[no-untyped-def]
    response = client_for(analyst).get(f"/api/v1/datasets/{uuid.uuid4()}/not-here/")
    assert response.status_code == 404
    assert response.json() == {"message": "Not found.", "extra": {}}
