"""Released columns that are not quasi-identifiers, measured as if an intruder knew them
(#22): small cells, the classes they make with the quasi-identifiers, and whether they
predict a sensitive variable — hand-computed on twelve records, the same in hash slices,
and every query streaming."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from apps.engine.attribute import class_slices, class_table_query, l_diversity
from apps.engine.errors import EngineInputError
from apps.engine.released_columns import released_column_exposure, value_counts_query
from tests.streaming_plan import in_memory_fallbacks

# Classes on (age, sex): (30,F) ×4, (30,M) ×4, (40,F) ×4, each with both injuries (l = 2).
# "origin" is N/A exactly for six non-fatal records; "site" is the same for everyone.
RELEASE = pl.DataFrame(
    {
        "age": ["30"] * 8 + ["40"] * 4,
        "sex": ["F"] * 4 + ["M"] * 4 + ["F"] * 4,
        "origin": ["A", "A", "N/A", "N/A", "A", "B", "N/A", "N/A", "A", "B", "N/A", "N/A"],
        "site": ["X"] * 12,
        "injury": [
            "fatal", "nonfatal", "nonfatal", "nonfatal",
            "fatal", "nonfatal", "nonfatal", "nonfatal",
            "fatal", "fatal", "nonfatal", "nonfatal",
        ],
    }
)  # fmt: skip


def _measure(frame: pl.DataFrame | pl.LazyFrame, **kwargs):  # type: ignore[no-untyped-def]
    return released_column_exposure(
        frame,
        quasi=["age", "sex"],
        columns=["origin", "site"],
        sensitive=["injury"],
        release_size=4,
        release_model="public",
        **kwargs,
    )


def test_a_column_that_predicts_the_sensitive_variable_is_found() -> None:
    report = _measure(RELEASE, examples=["origin"])
    assert report.without.to_dict() == {
        "classes": 3, "rows": 12, "smallest": 4, "uniques": 0, "below_k": 0, "data_risk": 0.25,
    }  # fmt: skip
    origin, site = report.columns
    # With origin: (30,F,A) 2, (30,F,N/A) 2, (30,M,A) 1, (30,M,B) 1, (30,M,N/A) 2, (40,F,A) 1,
    # (40,F,B) 1, (40,F,N/A) 2: four uniques, every record in a class under 4.
    assert origin.with_column.to_dict() == {
        "classes": 8, "rows": 12, "smallest": 1, "uniques": 4, "below_k": 12, "data_risk": 1.0,
    }  # fmt: skip
    # B is held by 2 records (under k = 4); A by 4 and N/A by 6.
    assert (origin.values, origin.small_values, origin.small_records) == (3, 1, 2)
    assert origin.examples == (("N/A", 6), ("A", 4))
    # The three N/A classes of 2 are all non-fatal; without origin no class is homogeneous.
    (link,) = origin.links
    assert (link.classes, link.records, link.classes_without, link.records_without) == (3, 6, 0, 0)
    assert link.predicts
    # A column with one value for everyone changes nothing.
    assert site.with_column == report.without
    assert (site.values, site.small_values, site.small_records) == (1, 0, 0)
    assert site.examples == () and not site.links[0].predicts
    # Step 8's l-diversity over the quasi-identifiers and both columns: the classes of origin.
    assert report.with_all == origin.with_column
    (diversity,) = report.diversity_with_all
    assert (diversity.classes, diversity.smallest_l) == (8, 1)
    assert (diversity.homogeneous_classes, diversity.homogeneous_rows) == (7, 10)
    assert (diversity.homogeneous_shared_classes, diversity.homogeneous_shared_rows) == (3, 6)


def test_non_public_uses_the_strict_average_risk() -> None:
    report = released_column_exposure(
        RELEASE,
        quasi=["age", "sex"],
        columns=["origin"],
        sensitive=[],
        release_size=3,
        release_model="non_public",
    )
    # Without origin: max risk 1/4 is under the cap 0.33, so the average 3/12.
    assert report.without.data_risk == 0.25
    # With it: uniques, max risk 1 over the cap.
    assert report.columns[0].with_column.data_risk == 1.0
    assert report.columns[0].links == ()
    assert report.diversity_with_all == ()


def test_without_quasi_identifiers_the_column_alone_makes_the_classes() -> None:
    report = released_column_exposure(
        RELEASE,
        quasi=[],
        columns=["origin"],
        sensitive=["injury"],
        release_size=4,
        release_model="public",
    )
    assert report.without.classes == 1 and report.without.smallest == 12
    (origin,) = report.columns
    assert origin.with_column.classes == 3 and origin.with_column.smallest == 2
    # N/A (6 records, all non-fatal) is homogeneous; the whole release is not.
    assert (origin.links[0].classes, origin.links[0].records) == (1, 6)
    assert origin.links[0].records_without == 0


def test_hash_slices_give_the_same_figures(tmp_path: Path) -> None:
    rng = random.Random(5)
    rows = 3000
    frame = pl.DataFrame(
        {
            "band": [rng.choice(["0-19", "20-39", "40-59", "60+"]) for _ in range(rows)],
            "sex": [rng.choice("FM") for _ in range(rows)],
            "record": [f"R{rng.randrange(2000)}" for _ in range(rows)],  # nearly unique
            "unit": [rng.choice(["ICU", "ER", None]) for _ in range(rows)],
            "dx": [rng.choice(["a", "b", "c", None]) for _ in range(rows)],
        }
    )
    path = tmp_path / "release.parquet"
    frame.write_parquet(path, row_group_size=100)
    kwargs = {
        "quasi": ["band", "sex"],
        "columns": ["record", "unit"],
        "sensitive": ["dx"],
        "release_size": 5,
        "release_model": "public",
        "examples": ["unit", "record"],
    }
    whole = released_column_exposure(frame, **kwargs)  # type: ignore[arg-type]
    sliced = released_column_exposure(pl.scan_parquet(path), slice_values=50, **kwargs)  # type: ignore[arg-type]
    assert sliced == whole
    record = whole.columns[0]
    # Checked against a plain group-by of the whole frame.
    sizes = frame.group_by(["band", "sex", "record"]).len().get_column("len")
    assert record.with_column.uniques == int((sizes == 1).sum())
    assert record.with_column.classes == sizes.len()
    assert record.values == frame.get_column("record").n_unique()
    counts = frame.get_column("record").value_counts(name="n").filter(pl.col("n") >= 5)
    top = counts.sort(["n", "record"], descending=[True, False]).head(3).rows()
    assert record.examples == tuple(top) and top
    unit = whole.columns[1]
    assert [v for v, _ in unit.examples] == sorted(
        ["ICU", "ER"], key=lambda v: -int((frame.get_column("unit") == v).sum())
    )
    assert l_diversity(pl.scan_parquet(path), ["band", "sex"], ["dx"], slice_values=3) == (
        l_diversity(frame, ["band", "sex"], ["dx"])
    )


def test_every_query_streams_slice_by_slice() -> None:
    """Each part of a sliced measure is a streaming group-by: nothing falls back to the
    in-memory engine (which would take the whole release at once)."""
    frame = RELEASE.lazy()
    parts = class_slices(frame, ["age", "sex", "origin"], distinct=90, slice_values=10)
    assert len(parts) == 10  # 90 classes and 10 % for the estimate's error, 10 a slice
    queries = [class_table_query(p, ["age", "sex", "origin"], "injury") for p in parts[:2]]
    queries += [class_table_query(parts[0], ["age", "sex", "origin"], None)]
    queries += [value_counts_query(p, "origin") for p in parts[:2]]
    assert [f for q in queries for f in in_memory_fallbacks(q)] == []


def test_bad_columns_are_refused() -> None:
    with pytest.raises(EngineInputError, match="quasi-identifiers or sensitive: injury"):
        released_column_exposure(
            RELEASE,
            quasi=["age"],
            columns=["injury"],
            sensitive=["injury"],
            release_size=2,
            release_model="public",
        )
    with pytest.raises(EngineInputError, match="unknown released column"):
        released_column_exposure(
            RELEASE, quasi=["age"], columns=["nope"], sensitive=[], release_size=2,
            release_model="public",
        )  # fmt: skip


def test_no_column_to_measure() -> None:
    report = released_column_exposure(
        RELEASE,
        quasi=["age", "sex"],
        columns=[],
        sensitive=["injury"],
        release_size=4,
        release_model="public",
    )
    assert (report.columns, report.with_all, report.diversity_with_all) == ((), None, ())
    assert report.without.classes == 3 and report.without.smallest == 4
