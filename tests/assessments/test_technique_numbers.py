"""Issue 23, item 9: a technique's numbers are finite or refused. ``nan`` and ``inf`` (and
``1e400``, which reads as infinity) in Step 7's technique settings answered 500: a NaN
passes every ``<=`` test, and neither JSON nor PostgreSQL's ``jsonb`` stores it.

Every numeric setting of every technique, from the page (text) and from the service (a
float), each refused with a message naming the technique and the setting; nothing saved."""

from __future__ import annotations

import math

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.assessments import services
from apps.assessments.services import assessment_create
from apps.assessments.techniques import techniques_set
from apps.classification.models import Variable
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
)
from apps.core.errors import ApplicationError
from tests.assessments.conftest import LOW_ANSWERS, PEOPLE
from tests.conftest import read_now

pytestmark = pytest.mark.django_db

NON_FINITE_TEXT = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999"]
NON_FINITE = [math.nan, math.inf, -math.inf]

# technique → (its numeric settings, the other settings it needs)
SETTINGS = {
    "rounding": (["base"], {"column": "stay"}),
    "top_bottom_coding": (["top", "bottom"], {"column": "stay"}),
    "microaggregation": (["k"], {"column": "stay"}),
    "noise": (["scale"], {"column": "stay"}),
    "rank_swap": (["percent"], {"column": "stay"}),
    "pram": (["retain"], {"column": "ward"}),
}
CASES = [(kind, key) for kind, (keys, _) in SETTINGS.items() for key in keys]


@pytest.fixture
def stays(custodian, analyst):  # type: ignore[no-untyped-def]
    """The 10 people with a length of stay (numeric, not a quasi-identifier) and a ward
    (categorical): Steps 1, 3 and 5 done."""
    from apps.datasets.services import dataset_upload

    frame = PEOPLE.with_columns(
        pl.Series("stay", [3, 5, 2, 8, 1, 4, 6, 2, 9, 3]),
        pl.Series("ward", ["A", "B", "A", "C", "B", "A", "C", "B", "A", "C"]),
    )
    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("stays.csv", frame.write_csv().encode()),
        )
    )
    variables_accept_suggestions(dataset=dataset, user=analyst)
    stay = Variable.objects.get(dataset=dataset, name="stay")
    ward = Variable.objects.get(dataset=dataset, name="ward")
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(stay.id), "other", "A measure, not an identifier."),
            # a low-confidence suggestion is not taken without a reason typed by a person
            RoleDecision(str(ward.id), "other", "The hospital's three wards, not people."),
        ],
    )
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


def _entry(kind: str, key: str, value: object) -> dict[str, object]:
    keys, others = SETTINGS[kind]
    entry: dict[str, object] = {"technique": kind, **others}
    if kind == "top_bottom_coding":  # the other bound, so that only `key` is wrong
        entry.update(top=100, bottom=0)
    entry[key] = value
    return entry


@pytest.mark.parametrize(("kind", "key"), CASES)
@pytest.mark.parametrize("value", NON_FINITE)
def test_the_service_refuses_non_finite_settings(stays, analyst, kind, key, value):
    with pytest.raises(ApplicationError) as refused:
        techniques_set(assessment=stays, user=analyst, entries=[_entry(kind, key, value)])
    assert f"'{key}' must be a finite number" in refused.value.message
    stays.refresh_from_db()
    assert "techniques" not in (stays.deid_config or {})


@pytest.mark.parametrize("value", NON_FINITE)
def test_local_suppression_refuses_a_non_finite_importance(stays, analyst, value):
    entry = {"technique": "local_suppression", "importance": {"age": value, "sex": 1}}
    with pytest.raises(ApplicationError, match="'importance' must be a finite number"):
        techniques_set(assessment=stays, user=analyst, entries=[entry])


@pytest.mark.parametrize(("kind", "key"), [*CASES, ("local_suppression", "importance")])
@pytest.mark.parametrize("text", NON_FINITE_TEXT)
def test_the_page_answers_a_message_not_a_server_error(client_for, analyst, stays, kind, key, text):
    url = reverse(
        "assessment-step",
        kwargs={"org": stays.organization.slug, "assessment_id": stays.id, "slug": "deidentify"},
    )
    if kind == "local_suppression":
        data = {"action": "technique_add", "technique": kind, "importance-age": text}
    else:
        data = {
            "action": "technique_add",
            "technique": kind,
            f"column-{kind}": _entry(kind, key, 0)["column"],
        }
        if kind == "top_bottom_coding":
            data.update({f"{kind}-top": "100", f"{kind}-bottom": "0"})
        data[f"{kind}-{key}"] = text
    response = client_for(analyst).post(url, data, follow=True)
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any(f"'{key}' must be a finite number" in m for m in shown), shown
    stays.refresh_from_db()
    assert "techniques" not in (stays.deid_config or {})


def test_finite_settings_are_kept_as_numbers(stays, analyst):
    techniques_set(
        assessment=stays,
        user=analyst,
        entries=[
            {"technique": "rounding", "column": "stay", "base": "5"},
            {"technique": "pram", "column": "ward", "retain": 0.75},
        ],
    )
    stays.refresh_from_db()
    assert stays.deid_config["techniques"] == [
        {"technique": "rounding", "column": "stay", "base": 5.0},
        {"technique": "pram", "column": "ward", "retain": 0.75},
    ]
