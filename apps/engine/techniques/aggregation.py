"""Aggregation: a two-way table from a release, with small-cell suppression (PDPC 3.8; seed 004).

Instead of records, a table of counts (frequency table) or of sums of a numeric
variable (magnitude table) by two variables is released, with row, column and grand
totals.  A cell with 1..threshold-1 contributing records is *primarily* suppressed
(the threshold comes from the profile: 5, 11, …; an empty cell is a published zero).
Blanking it alone is not enough: the totals give it back (a row total minus the other
cells).  *Complementary* suppression blanks further cells so that no suppressed cell can
be recovered, which is checked the way an intruder would attack it (the "audit" of
τ-ARGUS; Giessing 2004, Hundepool et al. 2012 *Statistical Disclosure Control* §4.3): a
linear program finds each suppressed cell's smallest and largest value consistent with
every published figure and non-negativity, and the range must be at least the
protection width (default: the threshold for counts; 20 % of the cell for sums).

Complementary cells are chosen by the rectangle ("hypercube" in two dimensions) method:
for each cell whose range is too narrow, the cheapest rectangle of four cells through it
is suppressed (fewest new cells, then least value for counts; least value for sums),
preferring one whose own cycle already gives the width; then the audit runs again.
Totals are always published; a cell whose own row or column total is smaller than the
protection width cannot be hidden by any interior pattern: it is reported as
unprotectable (combine categories first), not chased with ever more blanks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy.optimize import linprog

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import FloatArray, numeric_values, require_columns

TOTAL = "Total"
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class TableParams:
    """`rows` × `columns`; counts, or sums of `value`; primary threshold and protection."""

    rows: str
    columns: str
    value: str | None = None
    threshold: int = 5
    protection: float | None = None  # minimal range width; default threshold (counts) or 0
    protection_share: float | None = None  # … or this share of the cell; default 0 / 0.2


@dataclass(frozen=True)
class CellAudit:
    """One suppressed cell: what an intruder can narrow it to, from the published figures."""

    row: str
    column: str
    lower: float
    upper: float
    required_width: float
    primary: bool
    # False when the cell's row or column total is itself below the width: no pattern of
    # blanks inside the table can hide it; combine categories (recode) first.
    attainable: bool

    @property
    def protected(self) -> bool:
        return self.upper - self.lower >= self.required_width - 1e-9


@dataclass(frozen=True)
class SuppressedTable:
    table: pl.DataFrame  # published: row label, one column per category, Total; blanks = null
    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    primary: BoolArray  # rows × columns
    complementary: BoolArray
    audit: tuple[CellAudit, ...]  # every suppressed cell

    @property
    def protected(self) -> bool:
        return all(cell.protected for cell in self.audit)

    @property
    def unprotectable(self) -> tuple[CellAudit, ...]:
        """Cells whose totals are too small for any suppression pattern (recode instead)."""
        return tuple(cell for cell in self.audit if not cell.attainable)


def _labels(series: pl.Series) -> list[str]:
    return [("(missing)" if v is None else str(v)) for v in series.to_list()]


def cross_table(
    data: pl.DataFrame, params: TableParams
) -> tuple[tuple[str, ...], tuple[str, ...], FloatArray, FloatArray]:
    """Row labels, column labels, cell values (counts or sums) and contributor counts."""
    wanted = [params.rows, params.columns, *([params.value] if params.value else [])]
    require_columns(data, wanted, "table")
    rows = _labels(data.get_column(params.rows).cast(pl.String))
    cols = _labels(data.get_column(params.columns).cast(pl.String))
    row_labels, row_index = np.unique(np.array(rows, dtype=object), return_inverse=True)
    col_labels, col_index = np.unique(np.array(cols, dtype=object), return_inverse=True)
    shape = (row_labels.size, col_labels.size)
    contributors = np.zeros(shape)
    np.add.at(contributors, (row_index, col_index), 1.0)
    if params.value:
        amounts = numeric_values(data, params.value, "table")
        if np.any(amounts[~np.isnan(amounts)] < 0):
            raise EngineInputError(f"table: {params.value!r} has negative values; sums need ≥ 0")
        values = np.zeros(shape)
        np.add.at(values, (row_index, col_index), np.nan_to_num(amounts))
    else:
        values = contributors.copy()
    return (
        tuple(str(v) for v in row_labels),
        tuple(str(v) for v in col_labels),
        values,
        contributors,
    )


def _required(values: FloatArray, params: TableParams) -> FloatArray:
    magnitude = params.value is not None
    absolute = (
        params.protection
        if params.protection is not None
        else (0.0 if magnitude else float(params.threshold))
    )
    share = (
        params.protection_share
        if params.protection_share is not None
        else (0.2 if magnitude else 0.0)
    )
    return np.maximum(absolute, share * values)


def feasible_ranges(values: FloatArray, suppressed: BoolArray) -> tuple[FloatArray, FloatArray]:
    """Each suppressed cell's [min, max] given the published cells and all totals (LP).

    Unknowns: the suppressed cells, ≥ 0.  Known: every other cell, every row and column
    total.  Two linear programs per cell (HiGHS).  Published cells get their own value.
    """
    lower, upper = values.copy(), values.copy()
    cells = np.argwhere(suppressed)
    if cells.size == 0:
        return lower, upper
    n_rows, n_cols = values.shape
    equations, rhs = [], []
    for axis, count in ((0, n_rows), (1, n_cols)):
        for line in range(count):
            members = cells[:, axis] == line
            if not members.any():
                continue
            published = (
                values[line][~suppressed[line]]
                if axis == 0
                else values[:, line][~suppressed[:, line]]
            )
            total = values[line].sum() if axis == 0 else values[:, line].sum()
            equations.append(members.astype(np.float64))
            rhs.append(total - published.sum())
    a_eq, b_eq = np.array(equations), np.array(rhs)
    for index, (r, c) in enumerate(cells):
        objective = np.zeros(len(cells))
        for sign, out in ((1.0, lower), (-1.0, upper)):
            objective[index] = sign
            result = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
            if result.status == 3:  # unbounded cannot happen with totals, but say so if it does
                out[r, c] = np.inf
            elif result.status != 0:
                raise EngineInputError(f"table audit failed: {result.message}")
            else:
                out[r, c] = sign * result.fun
    return lower, upper


def _rectangle(
    values: FloatArray, suppressed: BoolArray, r: int, c: int, need: float, magnitude: bool
) -> list[tuple[int, int]] | None:
    """The cheapest rectangle through (r, c) to suppress, or None if none adds a cell."""
    best: tuple[tuple[float, ...], list[tuple[int, int]]] | None = None
    n_rows, n_cols = values.shape
    for r2 in range(n_rows):
        for c2 in range(n_cols):
            if r2 == r or c2 == c:
                continue
            corners = [(r, c2), (r2, c), (r2, c2)]
            new = [cell for cell in corners if not suppressed[cell]]
            if not new:
                continue
            width = min(values[r, c2], values[r2, c]) + min(values[r, c], values[r2, c2])
            cells, amount = float(len(new)), float(sum(values[cell] for cell in new))
            cost = (amount, cells) if magnitude else (cells, amount)
            key = (0.0 if width >= need else 1.0, *cost, -width)
            if best is None or key < best[0]:
                best = (key, new)
    return best[1] if best is not None else None


def suppress_table(data: pl.DataFrame, params: TableParams) -> SuppressedTable:
    """The table with primary and complementary suppression, audited by linear programs."""
    if params.threshold < 1:
        raise EngineInputError("table: the threshold must be at least 1")
    row_labels, col_labels, values, contributors = cross_table(data, params)
    if len(row_labels) < 2 or len(col_labels) < 2:
        raise EngineInputError(
            "table: complementary suppression needs at least two categories in each variable"
        )
    required = _required(values, params)
    primary = (contributors > 0) & (contributors < params.threshold)
    # The widest range any interior blanks can give a cell is its smaller total.
    attainable = required <= np.minimum(values.sum(axis=1)[:, None], values.sum(axis=0)[None, :])
    suppressed = primary.copy()
    for _ in range(values.size):
        lower, upper = feasible_ranges(values, suppressed)
        short = suppressed & attainable & (upper - lower < required - 1e-9)
        if not short.any():
            break
        added = False
        for r, c in np.argwhere(short):
            rectangle = _rectangle(
                values, suppressed, int(r), int(c), required[r, c], params.value is not None
            )
            for cell in rectangle or []:
                suppressed[cell] = added = True
        if not added:
            break  # every rectangle through them is already suppressed: the audit says so
    lower, upper = feasible_ranges(values, suppressed)
    audit = tuple(
        CellAudit(
            row_labels[r],
            col_labels[c],
            float(lower[r, c]),
            float(upper[r, c]),
            float(required[r, c]),
            bool(primary[r, c]),
            bool(attainable[r, c]),
        )
        for r, c in np.argwhere(suppressed)
    )
    return SuppressedTable(
        table=_published(row_labels, col_labels, values, suppressed, params),
        row_labels=row_labels,
        column_labels=col_labels,
        primary=primary,
        complementary=suppressed & ~primary,
        audit=audit,
    )


def _published(
    row_labels: tuple[str, ...],
    col_labels: tuple[str, ...],
    values: FloatArray,
    suppressed: BoolArray,
    params: TableParams,
) -> pl.DataFrame:
    dtype: type[pl.DataType] = pl.Float64 if params.value else pl.Int64
    columns: dict[str, pl.Series] = {
        params.rows: pl.Series(params.rows, [*row_labels, TOTAL], dtype=pl.String)
    }
    for j, label in enumerate(col_labels):
        cells = [None if suppressed[i, j] else values[i, j] for i in range(len(row_labels))]
        columns[label] = pl.Series(label, [*cells, values[:, j].sum()]).cast(dtype)
    totals = [*values.sum(axis=1), values.sum()]
    columns[TOTAL] = pl.Series(TOTAL, totals).cast(dtype)
    return pl.DataFrame(list(columns.values()))
