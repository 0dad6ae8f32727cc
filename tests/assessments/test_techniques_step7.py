"""Step 7's further techniques (#18, the wizard) on the ``traded`` register: 400 people, 12 of
them aged 85–89 (7 women, 5 men). Five-year age bands leave those two groups under the
release size of 10; record suppression removes the 12 records, local suppression instead
blanks sex in those 12 — one group of 12 aged 85–89 — the fewest cells possible."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from django.conf import settings

from apps.assessments import deidentify, release_apply
from apps.assessments.techniques import techniques_set
from apps.core.errors import ApplicationError
from tests.assessments.conftest import _run, trade_off_people

pytestmark = pytest.mark.django_db


def test_local_suppression_blanks_twelve_cells_instead_of_removing_twelve_records(traded, analyst):
    frame = trade_off_people().with_columns(pl.col("age").cast(pl.Int64))
    old = frame.filter(pl.col("age") >= 85)
    assert old.height == 12 and sorted(old.get_column("sex").value_counts().rows()) == [
        ("F", 7),
        ("M", 5),
    ]
    deidentify.assessment_choose_solution(assessment=traded, levels={"age": 1, "sex": 0})
    techniques_set(
        assessment=traded,
        user=analyst,
        entries=[
            {"technique": "pram", "column": "diagnosis", "retain": 0.8},
            {"technique": "local_suppression", "importance": {"age": 1, "sex": 1}},
        ],
    )
    traded.refresh_from_db()
    # local suppression runs first, whatever the order given
    assert [t["technique"] for t in traded.deid_config["techniques"]] == [
        "local_suppression",
        "pram",
    ]
    _run(release_apply.assessment_start_apply(assessment=traded, user=analyst))
    traded.refresh_from_db()
    applied = traded.apply_result
    assert (applied["rows_out"], applied["suppressed_rows"], applied["passes"]) == (400, 0, True)
    local, perturbed = applied["techniques"]
    assert local["blanked_cells"] == 12
    assert local["blanked_by_column"] == {"age": 0, "sex": 12}
    assert local["optimal"] is True
    assert applied["generalization_only"]["suppressed_rows"] == 12
    released = pl.read_parquet(Path(settings.MEDIA_ROOT) / traded.output_parquet_path)
    blanked = released.filter(pl.col("sex").is_null())
    assert blanked.height == 12 and set(blanked.get_column("age")) == {"85-89"}
    smallest = released.group_by(["age", "sex"]).len().get_column("len").min()
    assert smallest >= 10
    # PRAM: the diagnosis of some records changed, its categories are the same three.
    assert perturbed["technique"] == "pram" and perturbed["changed"] == ["diagnosis"]
    (effect,) = perturbed["utility"]
    assert 0 < effect["changed_share"] < 0.5
    assert set(released.get_column("diagnosis")) == set(frame.get_column("diagnosis"))
    assert "seed" not in perturbed["parameters"]


def test_techniques_are_checked_against_the_variables(traded, analyst):
    for entries, message in (
        ([{"technique": "noise", "column": "age"}], "is a quasi-identifier"),
        ([{"technique": "noise", "column": "diagnosis"}], "needs a numeric variable"),
        ([{"technique": "pram", "column": "email"}], "needs a categorical variable"),
        ([{"technique": "teleport", "column": "age"}], "not a technique"),
        ([{"technique": "pram", "column": "diagnosis", "retain": "x"}], "must be a number"),
        ([{"technique": "pram", "column": "diagnosis", "retain": 1.5}], "between 0 and 1"),
        (
            [{"technique": "local_suppression", "importance": {"diagnosis": 1}}],
            "not a quasi-identifier",
        ),
    ):
        with pytest.raises(ApplicationError, match=message):
            techniques_set(assessment=traded, user=analyst, entries=entries)


def test_the_pages_and_the_preview_show_the_techniques(traded, analyst, custodian, client_for):
    from django.urls import reverse

    client = client_for(analyst)
    kwargs = {"org": custodian.slug, "assessment_id": traded.id}
    step7 = reverse("assessment-step", kwargs={**kwargs, "slug": "deidentify"})
    deidentify.assessment_choose_solution(assessment=traded, levels={"age": 1, "sex": 0})
    response = client.post(
        step7,
        {"action": "technique_add", "technique": "local_suppression", "importance-age": "1",
         "importance-sex": "1"},
    )  # fmt: skip
    assert response.status_code == 302
    traded.refresh_from_db()
    assert traded.deid_config["techniques"] == [
        {"technique": "local_suppression", "importance": {"age": 1.0, "sex": 1.0}}
    ]
    preview = client.get(
        reverse("assessment-technique-preview", kwargs=kwargs), {"index": 0}
    ).content.decode()
    # The 400 records are under the 2,000-record sample size: the preview is the real count.
    assert "Preview on 400 of 400 records" in preview
    assert "12 values blanked (age: 0, sex: 12)" in preview
    _run(release_apply.assessment_start_apply(assessment=traded, user=analyst))
    page = client.get(step7).content.decode()
    assert 'data-testid="applied-techniques"' in page
    step8 = client.get(reverse("assessment-step", kwargs={**kwargs, "slug": "utility"}))
    text = step8.content.decode()
    assert 'data-testid="techniques-comparison"' in text
    assert 'data-testid="generalization-only-suppressed">12<' in text
    client.post(step7, {"action": "technique_remove", "index": "0"})
    traded.refresh_from_db()
    assert traded.deid_config["techniques"] == []
