"""Issue 23, item 16 (schemathesis: valid requests refused): a well-formed request that the
object's state does not allow yet, or any more, is a 409 Conflict, documented in the schema —
not a 400, which tells a client its request was malformed. Applying before the search,
accepting utility before applying, choosing before searching, deleting a data set that has
assessments, cancelling a finished job and retrying a succeeded one."""

from __future__ import annotations

import json

import pytest

from apps.assessments import services
from tests.assessments.conftest import LOW_ANSWERS

pytestmark = pytest.mark.django_db
API = "/api/v1"


def _schema_statuses(path: str, method: str) -> set[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return set(schema["paths"][path][method]["responses"])


@pytest.fixture
def ready(assessment):  # type: ignore[no-untyped-def]
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


def _send(client, method, url, body=None):  # type: ignore[no-untyped-def]
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def test_steps_out_of_order_are_conflicts(client_for, analyst, ready):
    client = client_for(analyst)
    base = f"{API}/assessments/{ready.id}"
    for method, suffix, body, words in (
        ("post", "apply/", None, "Run the search and choose a solution first"),
        ("put", "utility/", {"note": "Fit for the study."}, "Apply a de-identification"),
        ("post", "choose/", {"levels": {"age": 1, "sex": 0}}, "Run the search first"),
    ):
        response = _send(client, method, f"{base}/{suffix}", body)
        assert response.status_code == 409, (suffix, response.content)
        assert words in response.json()["message"]
        assert "409" in _schema_statuses(f"{API}/assessments/{{id}}/{suffix}", method)


def test_deleting_a_data_set_with_assessments_is_a_conflict(client_for, analyst, ready):
    response = client_for(analyst).delete(f"{API}/datasets/{ready.dataset_id}/")
    assert response.status_code == 409
    assert "has assessments" in response.json()["message"]
    assert "409" in _schema_statuses(f"{API}/datasets/{{id}}/", "delete")


def test_cancelling_or_retrying_a_finished_job_is_a_conflict(client_for, analyst, ready):
    job = ready.dataset.profile_job
    assert job.status == "succeeded"
    client = client_for(analyst)
    cancel = client.post(f"{API}/jobs/{job.id}/cancel/")
    assert cancel.status_code == 409 and "nothing to cancel" in cancel.json()["message"]
    retry = client.post(f"{API}/jobs/{job.id}/retry/")
    assert retry.status_code == 409 and "can be retried" in retry.json()["message"]
