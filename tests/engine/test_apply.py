"""Writing the release and re-measuring it from the written file."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from apps.engine.apply import apply_levels, apply_solution
from apps.engine.criteria import KAnonymity
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode, encode_file
from apps.engine.hierarchies import (
    GeneralizationLookup,
    hierarchy_from_rows,
    parse_arx_text,
    read_arx_csv,
)
from apps.engine.loss import METRICS
from apps.engine.reading import read_table
from apps.engine.search import SearchProblem, optimal_search, problem_from_encoded
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT, ADULT_COLUMNS, ARX_DIR
from tests.engine.test_loss import HIER_A, HIER_B, TINY


def tiny_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "name": [f"person {i}" for i in range(len(TINY))],
            "a": [r[0] for r in TINY],
            "b": [r[1] for r in TINY],
            "weight": [str(60 + i) for i in range(len(TINY))],
        }
    )


def tiny_setup() -> tuple[pl.DataFrame, SearchProblem, list[GeneralizationLookup], list[pl.Series]]:
    frame = tiny_frame()
    enc = encode(frame, ["a", "b"])
    lookups = [
        hierarchy_from_rows("a", HIER_A).lookup(enc.dictionaries[0]),
        hierarchy_from_rows("b", HIER_B).lookup(enc.dictionaries[1]),
    ]
    return frame, problem_from_encoded(enc, lookups), lookups, list(enc.dictionaries)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_tiny_release_is_generalized_suppressed_and_remeasured(tmp_path: Path, suffix: str) -> None:
    frame, problem, lookups, dictionaries = tiny_setup()
    out = tmp_path / f"release{suffix}"
    result = apply_solution(
        frame,
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        levels={"a": 1, "b": 0},
        criterion=KAnonymity(2),
        out=out,
        suppression_limit=1 / 6,
        direct={"name": "remove"},
        seed=7,
    )
    written = read_table(out).collect()
    assert written.columns == ["a", "b", "weight"]  # name removed, others kept
    assert written.height == 5
    assert sorted(zip(written["a"], written["b"], strict=True)) == sorted(
        [("a12", "b1")] * 3 + [("a3", "b2")] * 2
    )
    # the suppressed row is the one (a2, b2) -> weight "63"; others untouched
    assert sorted(written["weight"].to_list()) == ["60", "61", "62", "64", "65"]
    m = result.measure
    assert (m.rows_in, m.rows_out, m.suppressed_rows) == (6, 5, 1)
    assert m.risk.smallest_class == 2
    assert m.risk.max_risk == 0.5
    assert m.passes
    search = {
        metric: optimal_search(problem, KAnonymity(2), metric=metric, suppression_limit=1 / 6)
        for metric in METRICS
    }
    for metric, r in search.items():
        if r.solution is not None and r.solution.levels == (1, 0):
            assert m.information_loss[metric] == pytest.approx(r.solution.information_loss)
    assert m.information_loss["discernibility"] == 9 + 4 + 1 * 6  # see test_loss.py


def test_shuffle_is_seeded_or_random() -> None:
    frame, _, lookups, dictionaries = tiny_setup()
    big = pl.concat([frame] * 50)
    kwargs = dict(lookups=lookups, dictionaries=dictionaries, levels={"a": 2, "b": 1})
    first, _ = apply_levels(big, release_size=1, seed=1, **kwargs)  # type: ignore[arg-type]
    again, _ = apply_levels(big, release_size=1, seed=1, **kwargs)  # type: ignore[arg-type]
    other, _ = apply_levels(big, release_size=1, **kwargs)  # type: ignore[arg-type]
    assert first["weight"].to_list() == again["weight"].to_list()
    assert first["weight"].to_list() != other["weight"].to_list()
    assert sorted(first["weight"].to_list()) == sorted(big["weight"].to_list())
    assert set(first["a"].to_list()) == {"*"}


def test_missing_values_keep_their_group(tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": ["a1", "a1", None, None, "a3", "a3"], "b": ["b1"] * 6})
    enc = encode(frame, ["a", "b"])
    lookups = [
        hierarchy_from_rows("a", HIER_A).lookup(enc.dictionaries[0]),
        hierarchy_from_rows("b", HIER_B).lookup(enc.dictionaries[1]),
    ]
    problem = problem_from_encoded(enc, lookups)
    result = apply_solution(
        frame,
        problem=problem,
        lookups=lookups,
        dictionaries=list(enc.dictionaries),
        levels={"a": 1, "b": 0},
        criterion=KAnonymity(2),
        out=tmp_path / "out.csv",
    )
    written = read_table(tmp_path / "out.csv").collect()
    assert sorted(written["a"].to_list(), key=str) == [None, None, "a12", "a12", "a3", "a3"]
    assert result.measure.suppressed_rows == 0


def test_bad_arguments(tmp_path: Path) -> None:
    frame, problem, lookups, dictionaries = tiny_setup()
    common = dict(problem=problem, lookups=lookups, dictionaries=dictionaries)
    with pytest.raises(EngineInputError, match="no level"):
        apply_solution(
            frame, levels={"a": 1}, criterion=KAnonymity(2), out=tmp_path / "x.csv", **common
        )  # type: ignore[arg-type]
    with pytest.raises(EngineInputError, match="outside"):
        apply_solution(
            frame,
            levels={"a": 5, "b": 0},
            criterion=KAnonymity(2),
            out=tmp_path / "x.csv",
            **common,
        )  # type: ignore[arg-type]
    with pytest.raises(EngineInputError, match="output must end"):
        apply_solution(
            frame,
            levels={"a": 1, "b": 0},
            criterion=KAnonymity(2),
            out=tmp_path / "x.xlsx",
            **common,
        )  # type: ignore[arg-type]


def test_adult_release_matches_the_search(tmp_path: Path) -> None:
    require(ADULT)
    data = read_table(ADULT, sep=";").collect()
    enc = encode(data, ADULT_COLUMNS)
    lookups = [
        read_arx_csv(ARX_DIR / f"adult_hierarchy_{q}.csv", q).lookup(d)
        for q, d in zip(ADULT_COLUMNS, enc.dictionaries, strict=True)
    ]
    problem = problem_from_encoded(enc, lookups)
    search = optimal_search(problem, KAnonymity(5), suppression_limit=0.05)
    assert search.solution is not None and search.levels is not None
    result = apply_solution(
        data,
        problem=problem,
        lookups=lookups,
        dictionaries=list(enc.dictionaries),
        levels=search.levels,
        criterion=KAnonymity(5),
        out=tmp_path / "adult.parquet",
        suppression_limit=0.05,
    )
    m = result.measure
    assert m.passes
    assert m.suppressed_rows == search.solution.suppressed_rows == 1346
    assert m.risk.smallest_class >= 5
    assert m.risk.equivalence_classes == search.solution.equivalence_classes
    assert m.information_loss["loss"] == pytest.approx(search.solution.information_loss, rel=1e-12)
    assert encode_file(tmp_path / "adult.parquet", ADULT_COLUMNS).rows == 30_162 - 1346


def test_range_like_group_labels_of_an_arx_import_search_and_apply(tmp_path: Path) -> None:
    # Group labels of a categorical variable that read like overlapping ranges: ARX takes
    # them as text, and so do the search and the release.
    grades = parse_arx_text("a;4-6;low;*\nb;4-7;low;*\nc;7-9;high;*\nd;7-9;high;*\n", "grade")
    frame = pl.DataFrame({"grade": ["a", "b", "c", "d"], "sex": ["F", "F", "M", "M"]})
    enc = encode(frame, ["grade", "sex"])
    lookups = [
        grades.lookup(enc.dictionaries[0]),
        hierarchy_from_rows("sex", [["F", "*"], ["M", "*"]]).lookup(enc.dictionaries[1]),
    ]
    problem = problem_from_encoded(enc, lookups)
    # Level 1 leaves '4-6' and '4-7' one person each; level 2 (low/high) is 2-anonymous.
    search = optimal_search(problem, KAnonymity(2), suppression_limit=0.0)
    assert search.levels == {"grade": 2, "sex": 0}
    result = apply_solution(
        frame,
        problem=problem,
        lookups=lookups,
        dictionaries=list(enc.dictionaries),
        levels={"grade": 1, "sex": 0},
        criterion=KAnonymity(1),
        out=tmp_path / "release.csv",
        suppression_limit=0.0,
    )
    written = read_table(tmp_path / "release.csv").collect()
    assert sorted(written["grade"].to_list()) == ["4-6", "4-7", "7-9", "7-9"]  # rows shuffled
    assert result.measure.risk.equivalence_classes == 3
