"""Step 7 on a data set past the streaming threshold: the release is written out of core
(`apply_levels_to_file`) and the job writes the CSV and measures the release from the
scanned file. Same figures and the same files (up to the shuffled row order) as the
in-memory path."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from django.conf import settings

from apps.assessments import deidentify, release_apply
from apps.classification.services import variables_accept_suggestions
from tests.assessments.conftest import _run, through_risk, trade_off_people, uploaded_register

pytestmark = pytest.mark.django_db

COMMENTS = ["=1+1", "fine", "-2+3", "seen again", "+A1", "ok"]


def _register() -> pl.DataFrame:
    """trade_off_people with a short comment column, some cells of which start a formula."""
    frame = trade_off_people()
    rng = random.Random(3)
    return frame.with_columns(comment=pl.Series([rng.choice(COMMENTS) for _ in range(400)]))


def _release(assessment) -> tuple[dict, list[str], str, pl.DataFrame]:  # type: ignore[no-untyped-def]
    assessment.refresh_from_db()
    media = Path(settings.MEDIA_ROOT)
    header, *lines = (media / assessment.output_csv_path).read_text().splitlines()
    parquet = pl.read_parquet(media / assessment.output_parquet_path)
    result = {k: v for k, v in assessment.apply_result.items() if k not in {"job", "sha256"}}
    return result, sorted(lines), header, parquet.sort(parquet.columns, nulls_last=True)


def test_the_streaming_apply_gives_the_in_memory_release(custodian, analyst, monkeypatch):
    import apps.engine.apply

    dataset = uploaded_register(custodian, analyst, _register())
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    levels = assessment.search_result["levels"]
    assert levels == {"age": 1, "sex": 0}  # five-year bands, 12 records suppressed
    deidentify.assessment_choose_solution(assessment=assessment, levels=levels)

    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    in_memory = _release(assessment)
    monkeypatch.setattr(apps.engine.apply, "STREAMING_ROWS", 10)
    out_of_core = []
    write = apps.engine.apply.apply_levels_to_file

    def spied(*args, **kwargs):  # type: ignore[no-untyped-def]
        out_of_core.append(kwargs["rows"])
        return write(*args, **kwargs)

    monkeypatch.setattr(apps.engine.apply, "apply_levels_to_file", spied)
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    streamed = _release(assessment)
    assert out_of_core == [400]  # the release was written out of core

    result, lines, header, parquet = streamed
    assert (result["rows_in"], result["rows_out"], result["suppressed_rows"]) == (400, 388, 12)
    assert len(lines) == 388 and parquet.height == 388
    # The comment column is released; its formula cells are prefixed in the CSV only.
    assert "comment" in header.split(",")
    expected = _register().get_column("comment")
    starting = sum(1 for line in lines if ",'=1+1" in line or ",'-2+3" in line or ",'+A1" in line)
    assert result["csv_formula_guard"]["cells"] == {"comment": starting}
    assert 0 < starting <= int(expected.is_in(["=1+1", "-2+3", "+A1"]).sum())
    assert set(parquet.get_column("comment")) <= set(COMMENTS)
    by = {d["column"]: d for d in result["variable_distributions"]}
    assert sum(by["comment"]["before"]) == 400 and sum(by["comment"]["after"]) == 388
    # Everything the job reports, and the files row for row, as in memory.
    assert streamed[0] == in_memory[0]
    assert streamed[1:3] == in_memory[1:3]
    assert streamed[3].equals(in_memory[3])
