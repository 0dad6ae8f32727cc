"""The streaming apply (bounded memory, out-of-core shuffle) writes the same release as the
in-memory apply: same rows (as a multiset), same re-measured figures."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from apps.engine.apply import apply_levels, apply_levels_to_file, apply_solution
from apps.engine.criteria import KAnonymity
from apps.engine.frame import encode
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.reading import read_table
from apps.engine.search import problem_from_encoded
from tests.engine.test_apply import tiny_frame, tiny_setup
from tests.engine.test_loss import HIER_A, HIER_B


def _sorted(frame: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(frame.rows(), key=repr)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("bucket_rows", [7, 1_000_000])
def test_streaming_release_has_the_rows_of_the_in_memory_one(
    tmp_path: Path, suffix: str, bucket_rows: int
) -> None:
    frame, _, lookups, dictionaries = tiny_setup()
    big = pl.concat([frame, frame.head(4), frame.slice(2, 3)])  # classes of sizes 1, 2, 3
    common = dict(lookups=lookups, dictionaries=dictionaries, levels={"a": 1, "b": 0})
    for size in (1, 2, 3, 4):
        expected, _ = apply_levels(
            big,
            release_size=size,
            direct={"name": "remove"},
            **common,  # type: ignore[arg-type]
        )
        path, _ = apply_levels_to_file(
            big,
            tmp_path / f"out{size}{suffix}",
            release_size=size,
            rows=big.height,
            direct={"name": "remove"},
            bucket_rows=bucket_rows,
            seed=3,
            **common,  # type: ignore[arg-type]
        )
        written = read_table(path).collect()
        assert written.columns == expected.columns
        assert _sorted(written) == _sorted(expected.cast(pl.String)), size


def test_streaming_release_suppresses_failing_classes_too(tmp_path: Path) -> None:
    frame, _, lookups, dictionaries = tiny_setup()
    failing = pl.DataFrame({"a": ["a12"], "b": ["b1"]})
    common = dict(lookups=lookups, dictionaries=dictionaries, levels={"a": 1, "b": 0})
    expected, _ = apply_levels(frame, release_size=2, suppressed_classes=failing, **common)  # type: ignore[arg-type]
    path, _ = apply_levels_to_file(
        frame,
        tmp_path / "out.parquet",
        release_size=2,
        rows=frame.height,
        suppressed_classes=failing,
        bucket_rows=2,
        **common,  # type: ignore[arg-type]
    )
    written = pl.read_parquet(path)
    assert written.height == expected.height == 2
    assert _sorted(written) == _sorted(expected)


def test_streaming_shuffle_moves_rows_and_is_seeded(tmp_path: Path) -> None:
    frame, _, lookups, dictionaries = tiny_setup()
    big = pl.concat([frame] * 200).with_columns(
        pl.int_range(pl.len()).cast(pl.String).alias("weight")
    )
    common = dict(lookups=lookups, dictionaries=dictionaries, levels={"a": 2, "b": 1})
    runs = [
        pl.read_parquet(
            apply_levels_to_file(
                big,
                tmp_path / f"out{n}.parquet",
                release_size=1,
                rows=big.height,
                bucket_rows=100,
                seed=seed,
                **common,  # type: ignore[arg-type]
            )[0]
        )["weight"].to_list()
        for n, seed in enumerate((5, 5, None))
    ]
    assert sorted(runs[0]) == sorted(big["weight"].to_list())
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert runs[0] != big["weight"].to_list()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_apply_solution_streaming_measures_like_in_memory(tmp_path: Path, suffix: str) -> None:
    frame = pl.concat([tiny_frame()] * 3 + [tiny_frame().head(2)])
    enc = encode(frame, ["a", "b"])
    lookups = [
        hierarchy_from_rows("a", HIER_A).lookup(enc.dictionaries[0]),
        hierarchy_from_rows("b", HIER_B).lookup(enc.dictionaries[1]),
    ]
    problem = problem_from_encoded(enc, lookups)
    results = [
        apply_solution(
            frame,
            problem=problem,
            lookups=lookups,
            dictionaries=list(enc.dictionaries),
            levels={"a": 0, "b": 0},
            criterion=KAnonymity(4),
            out=tmp_path / f"{mode}{suffix}",
            direct={"name": "remove"},
            seed=1,
            streaming=mode == "stream",
        )
        for mode in ("memory", "stream")
    ]
    memory, stream = (r.measure for r in results)
    assert stream == memory
    assert memory.suppressed_rows > 0
    assert _sorted(read_table(results[0].path).collect()) == _sorted(
        read_table(results[1].path).collect()
    )


def test_the_streaming_release_query_has_no_in_memory_step() -> None:
    """Generalization looks labels up by position (Enum cast + gather), which the streaming
    engine runs chunk by chunk; `replace_strict` was handed to the in-memory engine, and at
    100 million rows the apply held the whole frame (over 12 GB)."""
    from apps.engine.apply import _release_frame
    from tests.streaming_plan import in_memory_fallbacks

    frame, _, lookups, dictionaries = tiny_setup()
    kept, _ = _release_frame(
        frame.lazy(),
        lookups=lookups,
        dictionaries=dictionaries,
        levels={"a": 1, "b": 0},
        release_size=2,
        direct={"name": "remove"},
        suppressed_classes=None,
        streaming=True,
    )
    assert in_memory_fallbacks(kept) == []
    # a1, a2 → a12 at level 1: classes (a12, b1) × 3, (a12, b2) × 1, (a3, b2) × 2; k = 2
    # keeps five rows.
    released = kept.collect()
    assert sorted(released.select("a", "b").rows()) == [("a12", "b1")] * 3 + [("a3", "b2")] * 2
    expected, _ = apply_levels(
        frame, lookups=lookups, dictionaries=dictionaries, levels={"a": 1, "b": 0},
        release_size=2, direct={"name": "remove"},
    )  # fmt: skip
    assert _sorted(kept.collect()) == _sorted(expected)


def test_typed_quasi_identifiers_are_generalized_alike_in_memory_and_streaming(
    tmp_path: Path,
) -> None:
    """Integers, dates and floats (typed Parquet, Excel, SPSS) are looked up by their text,
    as the dictionary holds it, in both paths; a missing value keeps its own (missing)
    label."""
    import datetime as dt

    frame = pl.DataFrame(
        {
            "age": [34, 36, 51, 58, 34, None],
            "born": [dt.date(1990, 5, 1), dt.date(1988, 2, 3)] * 3,
            "score": [1.5, 2.0, 1.5, 2.0, 1.5, 2.0],
        }
    )
    enc = encode(frame, ["age", "born", "score"])
    hierarchies = {
        "age": [["34", "30-39"], ["36", "30-39"], ["51", "50-59"], ["58", "50-59"]],
        "born": [["1990-05-01", "1990"], ["1988-02-03", "1988"]],
        "score": [["1.5", "low"], ["2.0", "high"]],
    }
    lookups = [
        hierarchy_from_rows(q, hierarchies[q]).lookup(d)
        for q, d in zip(["age", "born", "score"], enc.dictionaries, strict=True)
    ]
    common = dict(
        lookups=lookups,
        dictionaries=list(enc.dictionaries),
        levels={"age": 1, "born": 1, "score": 1},
        release_size=1,
    )
    expected, _ = apply_levels(frame, **common)  # type: ignore[arg-type]
    path, _ = apply_levels_to_file(frame, tmp_path / "out.parquet", rows=6, **common)  # type: ignore[arg-type]
    written = pl.read_parquet(path)
    assert _sorted(written) == _sorted(expected)
    rows = sorted(written.rows(), key=repr)
    assert rows == sorted(
        [
            ("30-39", "1990", "low"),
            ("30-39", "1988", "high"),
            ("50-59", "1990", "low"),
            ("50-59", "1988", "high"),
            ("30-39", "1990", "low"),
            (None, "1988", "high"),  # a missing age stays missing at every level
        ],
        key=repr,
    )
