"""Tables: primary and complementary suppression, audited by linear programs (hand-computed)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.errors import EngineInputError
from apps.engine.techniques.aggregation import (
    TableParams,
    cross_table,
    feasible_ranges,
    suppress_table,
)

#        c1  c2  c3
# r1      2  10   8
# r2      7  12   9
# r3      6  11  15
COUNTS = np.array([[2, 10, 8], [7, 12, 9], [6, 11, 15]])


def _records(counts: np.ndarray) -> pl.DataFrame:
    rows, cols = [], []
    for i, j in np.ndindex(counts.shape):
        rows += [f"r{i + 1}"] * int(counts[i, j])
        cols += [f"c{j + 1}"] * int(counts[i, j])
    return pl.DataFrame({"region": rows, "group": cols, "amount": [10.0] * len(rows)})


def test_cross_table_counts_and_sums() -> None:
    rows, cols, values, contributors = cross_table(
        _records(COUNTS), TableParams("region", "group", value="amount")
    )
    assert rows == ("r1", "r2", "r3") and cols == ("c1", "c2", "c3")
    assert contributors.tolist() == COUNTS.tolist()
    assert values.tolist() == (COUNTS * 10.0).tolist()


def test_a_lone_small_cell_is_recovered_from_the_totals() -> None:
    suppressed = np.zeros((3, 3), dtype=bool)
    suppressed[0, 0] = True
    lower, upper = feasible_ranges(COUNTS.astype(float), suppressed)
    assert (lower[0, 0], upper[0, 0]) == (2.0, 2.0)


def test_complementary_suppression_protects_the_small_cell() -> None:
    # The cheapest rectangle through (r1, c1): (r1,c3)=8, (r2,c1)=7, (r2,c3)=9 (24 in all,
    # against 27 and 29 for the others).  With the totals, x11 = a gives x13 = 10 - a,
    # x21 = 9 - a, x23 = 7 + a, all ≥ 0: a ∈ [0, 9], width 9 ≥ threshold 5.
    result = suppress_table(_records(COUNTS), TableParams("region", "group", threshold=5))
    assert np.argwhere(result.primary).tolist() == [[0, 0]]
    assert np.argwhere(result.complementary).tolist() == [[0, 2], [1, 0], [1, 2]]
    ranges = {(a.row, a.column): (a.lower, a.upper) for a in result.audit}
    assert ranges == {
        ("r1", "c1"): (0.0, 9.0),
        ("r1", "c3"): (1.0, 10.0),
        ("r2", "c1"): (0.0, 9.0),
        ("r2", "c3"): (7.0, 16.0),
    }
    assert result.protected
    published = result.table
    assert published.columns == ["region", "c1", "c2", "c3", "Total"]
    assert published.row(0) == ("r1", None, 10, None, 20)
    assert published.row(3) == ("Total", 15, 33, 32, 80)


def test_magnitude_table_protects_a_share_of_the_cell() -> None:
    result = suppress_table(
        _records(COUNTS), TableParams("region", "group", value="amount", threshold=5)
    )
    assert result.protected
    cell = next(a for a in result.audit if a.primary)
    assert cell.required_width == pytest.approx(0.2 * 20.0)
    assert cell.upper - cell.lower >= cell.required_width


def test_a_cell_whose_total_is_small_is_reported_unprotectable() -> None:
    # Row r1 has 3 records in all: its published total already bounds the cell by 3 < 5.
    counts = np.array([[3, 0, 0], [7, 12, 9], [6, 11, 15]])
    result = suppress_table(_records(counts), TableParams("region", "group", threshold=5))
    assert [(a.row, a.column) for a in result.unprotectable] == [("r1", "c1")]
    assert not result.protected
    assert result.complementary.sum() == 0


def test_no_small_cell_means_nothing_suppressed() -> None:
    result = suppress_table(_records(COUNTS), TableParams("region", "group", threshold=2))
    assert result.audit == () and result.table["c1"].null_count() == 0


def test_bad_tables_are_named() -> None:
    with pytest.raises(EngineInputError, match="given twice"):
        suppress_table(_records(COUNTS), TableParams("region", "region"))
    with pytest.raises(EngineInputError, match="at least two categories"):
        suppress_table(_records(np.array([[3, 4]])), TableParams("region", "group"))


def _integer_ranges(
    values: np.ndarray, suppressed: np.ndarray
) -> dict[tuple[int, int], tuple[int, int]]:
    """Oracle: every non-negative integer filling of the blanks that keeps all totals."""
    cells = [tuple(c) for c in np.argwhere(suppressed)]
    limit = int(values.sum())
    found: dict[tuple[int, int], list[int]] = {c: [] for c in cells}
    for filling in itertools.product(range(limit + 1), repeat=len(cells)):
        trial = values.copy()
        for cell, v in zip(cells, filling, strict=True):
            trial[cell] = v
        if np.array_equal(trial.sum(axis=0), values.sum(axis=0)) and np.array_equal(
            trial.sum(axis=1), values.sum(axis=1)
        ):
            for cell, v in zip(cells, filling, strict=True):
                found[cell].append(v)
    return {c: (min(v), max(v)) for c, v in found.items()}


@settings(max_examples=20, deadline=None)
@given(
    values=st.lists(st.integers(0, 3), min_size=6, max_size=6),
    mask=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_lp_ranges_equal_the_integer_ranges(values: list[int], mask: list[bool]) -> None:
    # Totals-only constraints form a transportation polytope (integral vertices), so
    # the linear program's range is exactly the integer one.
    table = np.array(values, dtype=float).reshape(2, 3)
    suppressed = np.array(mask).reshape(2, 3)
    if suppressed.sum() > 4:
        return
    lower, upper = feasible_ranges(table, suppressed)
    for (r, c), (lo, hi) in _integer_ranges(table, suppressed).items():
        assert (lower[r, c], upper[r, c]) == pytest.approx((lo, hi))
