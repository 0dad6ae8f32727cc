"""The release measured from queries over files (as the apply job does, for any number of
rows) gives what the in-memory computations give: the CSV byte for byte, the distributions,
l-diversity and homogeneous classes, small cells and the text scan."""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path

import polars as pl
import pytest

from apps.assessments.release_measures import homogeneous_classes, release_measures
from apps.engine.attribute import l_diversity
from apps.engine.formula_guard import guard_formulas, guard_formulas_lazy
from apps.engine.frame import encode
from apps.engine.freetext import scan_frame
from apps.engine.smallcells import small_cells
from apps.engine.utility import OTHER_LABEL, release_distributions


def _written(frame: pl.DataFrame, folder: Path, name: str) -> pl.LazyFrame:
    path = folder / f"{name}.parquet"
    frame.write_parquet(path, row_group_size=7)  # many row groups: many batches
    return pl.scan_parquet(path)


def test_the_streamed_csv_is_the_in_memory_csv_byte_for_byte(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "note": ['=HYPERLINK("x")', "fine", "-2+3", None, "\t=1", "a,b", 'say "hi"', "-5"],
            "code": pl.Series(["=F", "M", "@x", "M", None, "F", "F", "+1"]).cast(pl.Categorical),
            "clean": ["a", "b", "c", "d", "e", "f", "g", "h"],
            "amount": [-5, None, 0, 1, 2, 3, 4, 5],
            "ratio": [-0.5, 1e-9, None, 2.25, 1e20, 3.0, -4.0, 0.1],
            "day": [dt.date(2024, 3, i + 1) for i in range(7)] + [None],
            "flag": [True, False, None, True, True, False, True, False],
        }
    )
    guarded, counts = guard_formulas(frame)
    guarded.write_csv(tmp_path / "in_memory.csv")
    lazy, streamed_counts = guard_formulas_lazy(_written(frame, tmp_path, "release"))
    lazy.sink_csv(tmp_path / "streamed.csv")
    assert counts == streamed_counts == {"note": 3, "code": 2}
    in_memory = (tmp_path / "in_memory.csv").read_bytes()
    assert (tmp_path / "streamed.csv").read_bytes() == in_memory
    assert b"'=HYPERLINK" in in_memory and b"\n-5," in in_memory


def _reference(column: str, before: pl.Series, after: pl.Series | None, status: str) -> dict:
    """Step 8's distribution as computed before it streamed, on whole columns."""
    rows_after = 0 if after is None else after.len()
    shown = None if status in {"suppressed", "removed", "masked"} or after is None else after
    missing_after = rows_after if shown is None else shown.null_count()

    def counts(series: pl.Series) -> dict[str, int]:
        return dict(series.cast(pl.String).drop_nulls().value_counts().iter_rows())

    parsed = before.drop_nulls().cast(pl.Float64, strict=False)
    numeric = before.dtype.is_numeric() or (
        before.dtype == pl.String and parsed.len() > 0 and parsed.null_count() == 0
    )
    if status == "kept" and before.n_unique() > 20 and numeric:
        values = before.cast(pl.Float64, strict=False).drop_nulls()
        low, high = float(values.min()), float(values.max())  # type: ignore[arg-type]
        width = (high - low) / 10 or 1.0

        def binned(series: pl.Series | None) -> list[int]:
            if series is None:
                return [0] * 10
            numbers = series.cast(pl.Float64, strict=False).drop_nulls()
            index = ((numbers - low) / width).floor().clip(0, 9).cast(pl.Int64)
            found = dict(index.value_counts().iter_rows())
            return [found.get(i, 0) for i in range(10)]

        kind, labels, b, a = "numeric", None, binned(before), binned(shown)
    else:
        by_before, by_after = counts(before), counts(shown) if shown is not None else {}
        ranked = sorted(by_before, key=lambda v: (-by_before[v], v))
        ranked += sorted(
            (v for v in by_after if v not in by_before), key=lambda v: (-by_after[v], v)
        )
        labels = ranked[:20]
        b = [by_before.get(v, 0) for v in labels]
        a = [by_after.get(v, 0) for v in labels]
        rest = (sum(by_before.values()) - sum(b), sum(by_after.values()) - sum(a))
        if any(rest):
            labels, b, a = [*labels, OTHER_LABEL], [*b, rest[0]], [*a, rest[1]]
        kind = "categorical"
    return {
        "column": column,
        "kind": kind,
        "status": status,
        "before": b,
        "after": a,
        "missing_before": before.null_count(),
        "missing_after": missing_after,
        "rows_before": before.len(),
        "rows_after": rows_after,
        **({"labels": labels} if labels is not None else {}),
    }


def _register(rows: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    words = [f"w{i:02d}" for i in range(30)]
    original = pl.DataFrame(
        {
            "id": [f"p{i}" for i in range(rows)],
            "age": [rng.randrange(20, 80) for _ in range(rows)],
            "sex": [rng.choice(["F", "M", None]) for _ in range(rows)],
            "region": [rng.choice("ABCD") for _ in range(rows)],
            "diagnosis": [rng.choice(["J45", "E11", "I10", None]) for _ in range(rows)],
            "word": [rng.choice(words[: rng.choice([5, 30])]) for _ in range(rows)],
            "few": [rng.choice(["a", "b", None]) for _ in range(rows)],
            "amount": [
                str(rng.randrange(-500, 500)) if rng.random() > 0.1 else None for _ in range(rows)
            ],
            "income": [rng.gauss(5e4, 1e4) for _ in range(rows)],
            "code": [rng.choice(["x1", "x2", "12", "y"]) for _ in range(rows)],
        }
    )
    kept = original.filter(pl.col("region") != "D")
    released = kept.select(
        (pl.col("age") // 20 * 20).cast(pl.String).alias("age"),
        pl.lit("*").alias("sex"),
        "region",
        "diagnosis",
        "word",
        # values the original does not have: shown after the original's
        pl.when(pl.col("few") == "b").then(pl.lit("new")).otherwise(pl.col("few")).alias("few"),
        pl.col("amount").cast(pl.Int64).mul(2).cast(pl.String),
        "income",
        pl.lit(None, dtype=pl.String).alias("code"),
    )
    return original, released


@pytest.mark.parametrize("seed, slice_values", [(1, 4_000_000), (2, 4_000_000), (1, 7)])
def test_distributions_from_queries_are_the_in_memory_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, slice_values: int
) -> None:
    # slice_values 7: the 300 identifiers are ranked in some 43 hash slices
    monkeypatch.setattr("apps.engine.utility.SLICE_VALUES", slice_values)
    original, released = _register(300, seed)
    quasi, levels, tops = ["age", "sex", "region"], {"age": 1, "sex": 1}, {"age": 3, "sex": 1}
    expected = []
    for column in original.columns:
        after = released.get_column(column) if column in released.columns else None
        if after is None:
            status = "removed"
        elif column == "code":
            status = "masked"
        elif column in quasi:
            if not levels.get(column, 0) >= tops.get(column, math.inf) > 0:
                continue
            status = "suppressed"
        else:
            status = "kept"
        expected.append(_reference(column, original.get_column(column), after, status))
    settings = {"quasi": quasi, "levels": levels, "tops": tops, "masked": ["code"]}
    for before, after in [
        (original, released),
        (_written(original, tmp_path, "original"), _written(released, tmp_path, "released")),
    ]:
        found = [d.to_dict() for d in release_distributions(before, after, **settings)]
        for d, e in zip(found, expected, strict=True):
            if e["kind"] == "numeric":
                d.pop("labels")
            assert d == e
    kinds = {d["column"]: (d["kind"], d["status"]) for d in expected}
    assert kinds["amount"] == kinds["income"] == ("numeric", "kept")
    assert kinds["id"] == ("categorical", "removed") and kinds["sex"][1] == "suppressed"
    few = next(d for d in expected if d["column"] == "few")
    assert few["labels"][-1] == "new" and few["before"][-1] == 0 and few["after"][-1] > 0


def _homogeneous_reference(frame: pl.DataFrame, quasi: list[str], sensitive: str) -> list:
    grouped = frame.group_by(quasi).agg(
        pl.len().alias("n"), pl.col(sensitive).n_unique().alias("l")
    )
    found = grouped.filter((pl.col("l") == 1) & (pl.col("n") > 1))
    return sorted(
        (
            {"values": {q: r[q] for q in quasi}, "records": r["n"]}
            for r in found.iter_rows(named=True)
        ),
        key=lambda c: (-c["records"], *(str(c["values"][q]) for q in quasi)),
    )


def test_diversity_cells_and_scan_from_the_file_are_the_in_memory_ones(tmp_path: Path) -> None:
    original, released = _register(400, 5)
    released = released.with_columns(
        pl.col("diagnosis").fill_null("J45"),
        note=pl.Series(
            [
                random.Random(i).choice(["fine", "Dr. Tremblay called", "416-555-0199", None])
                for i in range(released.height)
            ]
        ),
    )
    scanned = _written(released, tmp_path, "released")
    quasi = ["age", "region"]
    # l-diversity: the two group-bys against n_unique per class, by hand on the frame.
    per_class = released.group_by(quasi).agg(
        pl.len().alias("n"), pl.col("few").n_unique().alias("l")
    )
    (diversity,) = l_diversity(scanned, quasi, ["few"])
    assert diversity.classes == per_class.height and diversity.rows == released.height
    assert diversity.smallest_l == per_class.get_column("l").min()
    assert diversity.homogeneous_classes == int((per_class.get_column("l") == 1).sum())
    assert l_diversity(released, quasi, ["few", "word"]) == l_diversity(
        scanned, quasi, ["few", "word"]
    )
    # small classes on age and region share their diagnosis; listed as on the frame
    narrow = ["age", "region", "word"]
    expected = _homogeneous_reference(released, narrow, "diagnosis")[:20]
    assert expected and homogeneous_classes(scanned, narrow, "diagnosis") == expected
    assert homogeneous_classes(released, narrow, "diagnosis") == expected
    assert small_cells(encode(scanned, quasi)) == small_cells(encode(released, quasi))
    scans = scan_frame(scanned, ["note", "word"])
    assert scans == scan_frame(released, ["note", "word"])
    assert scans[0].spans == {
        "PHONE": scans[0].rows_by_type["PHONE"],
        "NAME": scans[0].rows_by_type["NAME"],
    }
    settings = {
        "quasi": quasi,
        "sensitive": ["diagnosis", "few"],
        "levels": {"age": 1},
        "tops": {"age": 3, "region": 1},
        "masked": [],
    }
    assert release_measures(original.lazy(), scanned, **settings) == release_measures(
        original.lazy(), released, **settings
    )
