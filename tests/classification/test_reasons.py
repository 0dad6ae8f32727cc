"""Reasons a person typed (issue 22, finding 11), through one guard for the page and the API.

Bulk accept confirms only confident suggestions and records that they were accepted as
suggested, with the evidence; the rest (low confidence, free text to read) stay for a person,
row by row. A role is never changed, nor a low-confidence suggestion confirmed, without a
reason someone typed: the suggestion's own text, or the reason recorded for the earlier role,
does not count. The page's reason boxes start empty."""

from __future__ import annotations

import re

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.classification.models import ClassificationChange, Variable
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
)
from apps.core.errors import ApplicationError
from tests.conftest import read_now

pytestmark = pytest.mark.django_db

ROWS = 60
FRAME = pl.DataFrame(
    {
        "email": [f"p{i}@example.org" for i in range(ROWS)],
        "age": [str(20 + i % 50) for i in range(ROWS)],
        "sex": ["F", "M", "F"] * (ROWS // 3),
        "score": [str(1 + i % 5) for i in range(ROWS)],  # nothing points anywhere: low
        "batch_no": [f"B{i % 4}" for i in range(ROWS)],  # a shared code: low
    }
)
CONFIDENT = {"email": "direct", "age": "quasi", "sex": "quasi"}
LOW = {"score", "batch_no"}


@pytest.fixture
def dataset(custodian, analyst):
    from apps.datasets.services import dataset_upload

    return read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("scores.csv", FRAME.write_csv().encode()),
        )
    )


def by_name(dataset) -> dict[str, Variable]:
    return {v.name: v for v in Variable.objects.filter(dataset=dataset)}


def changes_audited(dataset) -> dict[str, str]:
    return {
        e.details["column"]: e.details["reason"]
        for e in AuditEvent.objects.filter(action="classification.change").order_by("sequence")
        if e.details["dataset"] == str(dataset.id)
    }


def test_premise_two_suggestions_have_low_confidence(dataset):
    found = {n: (v.suggested_role, v.suggestion_confidence) for n, v in by_name(dataset).items()}
    assert {n: found[n][1] for n in LOW} == dict.fromkeys(LOW, "low")
    assert all(found[n][1] in ("high", "medium") for n in CONFIDENT)


def test_bulk_accept_confirms_only_confident_suggestions(dataset, analyst):
    changes = variables_accept_suggestions(dataset=dataset, user=analyst)
    assert {c.variable.name for c in changes} == set(CONFIDENT)
    variables = by_name(dataset)
    assert {n: variables[n].role for n in CONFIDENT} == CONFIDENT
    assert {n: variables[n].role for n in LOW} == dict.fromkeys(LOW, "")
    # The recorded reason says it was accepted as suggested, and on what evidence.
    audited = changes_audited(dataset)
    assert set(audited) == set(CONFIDENT)
    email = variables["email"]
    assert audited["email"].startswith("Accepted as suggested (high confidence)")
    assert email.suggestion_evidence[0] in audited["email"]
    assert ClassificationChange.objects.get(variable=email).reason == audited["email"]
    # A second bulk accept does not touch the rows left for a person.
    assert variables_accept_suggestions(dataset=dataset, user=analyst) == []
    assert {n: by_name(dataset)[n].role for n in LOW} == dict.fromkeys(LOW, "")


def test_a_low_confidence_suggestion_needs_a_typed_reason(dataset, analyst):
    score = by_name(dataset)["score"]
    for reason in ("", "  ", score.suggested_reason):
        with pytest.raises(ApplicationError, match="low confidence"):
            variables_classify(
                dataset=dataset,
                user=analyst,
                decisions=[RoleDecision(str(score.id), score.suggested_role, reason)],
            )
    assert by_name(dataset)["score"].role == ""
    typed = "Satisfaction score from the exit survey; nobody outside could know it."
    variables_classify(
        dataset=dataset, user=analyst, decisions=[RoleDecision(str(score.id), "other", typed)]
    )
    assert by_name(dataset)["score"].role == "other"
    assert changes_audited(dataset) == {"score": typed}


def test_a_role_change_needs_a_reason_of_its_own(dataset, analyst):
    variables_accept_suggestions(dataset=dataset, user=analyst)
    age = by_name(dataset)["age"]
    # Neither empty, nor the suggestion's text, nor the reason recorded for the earlier role.
    for reason in ("", age.suggested_reason, age.reason):
        with pytest.raises(ApplicationError, match="say why it is other rather than"):
            variables_classify(
                dataset=dataset,
                user=analyst,
                decisions=[RoleDecision(str(age.id), "other", reason)],
            )
    assert by_name(dataset)["age"].role == "quasi"
    typed = "Only adults of one cohort; the recipient never sees the age."
    variables_classify(
        dataset=dataset, user=analyst, decisions=[RoleDecision(str(age.id), "other", typed)]
    )
    assert changes_audited(dataset)["age"] == typed


# --------------------------------------------------------------------------- the API


def test_api_bulk_accept_and_changes_go_through_the_same_guard(client_for, analyst, dataset):
    client = client_for(analyst)
    response = client.post(f"/api/v1/classification/{dataset.id}/accept-suggestions/")
    assert response.status_code == 200
    assert {c["variable_name"] for c in response.json()} == set(CONFIDENT)
    variables = by_name(dataset)
    assert {n: variables[n].role for n in LOW} == dict.fromkeys(LOW, "")

    age, score = variables["age"], variables["score"]
    for payload in ({"role": "other"}, {"role": "other", "reason": age.suggested_reason},
                    {"role": "other", "reason": age.reason}):  # fmt: skip
        refused = client.post(
            f"/api/v1/variables/{age.id}/classify/", payload, content_type="application/json"
        )
        assert refused.status_code == 400, refused.content
        assert "say why" in refused.content.decode()
    refused = client.post(
        f"/api/v1/classification/{dataset.id}/decisions/",
        [{"variable": str(score.id), "role": "other", "reason": score.suggested_reason}],
        content_type="application/json",
    )
    assert refused.status_code == 400, refused.content
    assert "low confidence" in refused.content.decode()
    assert by_name(dataset)["age"].role == "quasi" and by_name(dataset)["score"].role == ""


# --------------------------------------------------------------------------- the page


def _inputs(html: str, kind: str) -> dict[str, str]:
    """name → value of the page's text inputs of one kind ("reason")."""
    found = {}
    for tag in re.findall(rf'<input type="text" [^>]*name="{kind}-[^"]+"[^>]*>', html):
        name = re.search(r'name="([^"]+)"', tag).group(1)  # type: ignore[union-attr]
        value = re.search(r'value="([^"]*)"', tag)
        found[name] = value.group(1) if value else ""
    return found


def _selected(html: str, name: str) -> str:
    select = re.search(rf'<select [^>]*name="{name}"[^>]*>(.*?)</select>', html, re.S)
    assert select is not None, name
    option = re.search(r'<option value="([^"]*)" selected', select.group(1))
    return option.group(1) if option else ""


def test_page_reason_boxes_start_empty_and_a_change_needs_a_typed_reason(
    client_for, analyst, custodian, dataset
):
    client = client_for(analyst)
    url = reverse("dataset-classify", kwargs={"org": custodian.slug, "dataset_id": dataset.id})
    accept = reverse(
        "dataset-accept-suggestions", kwargs={"org": custodian.slug, "dataset_id": dataset.id}
    )
    response = client.post(accept, follow=True)
    assert "left for you to decide" in response.content.decode()
    html = client.get(url).content.decode()
    variables = by_name(dataset)
    reasons = _inputs(html, "reason")
    assert reasons == {f"reason-{v.id}": "" for v in variables.values()}
    # The low-confidence rows are not preselected: saving the form leaves them undecided.
    for name in LOW:
        assert _selected(html, f"role-{variables[name].id}") == ""
    assert _selected(html, f"role-{variables['age'].id}") == "quasi"

    # The form as the page rendered it, with one role changed and no reason typed.
    form = {f"role-{v.id}": _selected(html, f"role-{v.id}") for v in variables.values()}
    form |= reasons
    form[f"role-{variables['age'].id}"] = "other"
    refused = client.post(url, form)
    assert refused.status_code == 400
    assert f'id="err-{variables["age"].id}"' in refused.content.decode()
    assert by_name(dataset)["age"].role == "quasi"
    # Saved as rendered, nothing changes and nothing is recorded.
    form[f"role-{variables['age'].id}"] = "quasi"
    before = AuditEvent.objects.filter(action="classification.change").count()
    assert client.post(url, form).status_code == 302
    assert AuditEvent.objects.filter(action="classification.change").count() == before
    assert {n: by_name(dataset)[n].role for n in LOW} == dict.fromkeys(LOW, "")
