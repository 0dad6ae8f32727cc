"""The search with privacy models on sensitive columns (l-diversity, t-closeness).

The compressed table then holds one row per distinct (quasi-identifiers, sensitive
values) tuple. Its sensitive columns ride along in the roll-up as columns that never
generalize (a hierarchy of height 0), so the class tables of the search's cache become
tables of *cells* (a class split by its sensitive values); :func:`kernels.judge_cells`
groups a node's cells into classes and judges each. The search's problem itself (metric
bounds, pair suppression bounds) stays the one of the distinct quasi-identifier tuples,
so nothing changes for searches without sensitive models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.criteria import Criterion
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import Hierarchy
from apps.engine.search.classes import base_table, roll_up
from apps.engine.search.problem import (
    Codes,
    EncodedLike,
    LookupLike,
    QuasiLookup,
    SearchProblem,
    build_problem,
    problem_from_encoded,
)
from apps.engine.sensitive import kernels
from apps.engine.sensitive.column import SensitiveColumn, sensitive_column
from apps.engine.sensitive.models import KIND_CODES, SensitiveModel

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


@dataclass(frozen=True)
class CellVerdict:
    """A node's classes judged from its cells: the first cell of each class (its codes),
    class sizes, status (``kernels.RELEASED`` / ``TOO_SMALL`` / ``FAILS_MODEL``) and the
    summary (``kernels.SUPPRESSED_ROWS`` ...)."""

    first: I64
    sizes: I64
    status: NDArray[np.int8]
    summary: I64


@dataclass(frozen=True, eq=False)
class SensitiveTable:
    """Sensitive columns, their models and the cell table the search rolls up."""

    quasi: tuple[str, ...]
    columns: tuple[SensitiveColumn, ...]
    models: tuple[SensitiveModel, ...]
    cells: SearchProblem  # quasi-identifiers, then one height-0 column per sensitive column
    arrays: tuple[Any, ...]  # judge_cells' model and column arrays

    @property
    def monotone_with_suppression(self) -> bool:
        return all(m.monotone_with_suppression for m in self.models)

    def release_size(self, criterion: Criterion) -> int:
        """Classes smaller than this are suppressed whatever their values: the
        criterion's release size or a model's least class (ARX's minimal class size)."""
        return max([criterion.release_size, *(m.min_class_size for m in self.models)])

    def describe(self) -> str:
        return "; ".join(m.describe() for m in self.models)

    def cell_levels(self, levels: NDArray[np.int16]) -> NDArray[np.int16]:
        """A node's levels in the cell table (sensitive columns stay at level 0)."""
        out = np.zeros(len(levels) + len(self.columns), dtype=np.int16)
        out[: len(levels)] = levels
        return out

    def judge(self, codes: Codes, sizes: I64, radix: I64, k: int) -> CellVerdict:
        """Classes of a node's cells (``codes`` ``[d + s x cells]``) and their verdicts;
        ``radix[j]`` = values of quasi-identifier ``j`` at the node's level."""
        first, class_sizes, status, summary = kernels.judge_cells(
            codes, sizes, len(self.quasi), radix, k, *self.arrays
        )
        return CellVerdict(first, class_sizes, status, summary)

    def judge_node(self, levels: Sequence[int], k: int) -> tuple[CellVerdict, Codes]:
        """:meth:`judge` of node ``levels`` and its classes' codes (``[d x classes]``),
        the cells grouped from the bottom (apply, reports, tests; the search rolls cells
        up through its cache)."""
        base = base_table(self.cells)
        table = roll_up(
            self.cells, base, tuple(int(v) for v in self.cell_levels(np.asarray(levels)))
        )
        radix = np.array(
            [self.cells.level_values[j, lv] for j, lv in enumerate(levels)], dtype=np.int64
        )
        verdict = self.judge(table.columns, table.sizes, radix, k)
        return verdict, table.columns[: len(levels), verdict.first]

    def tuple_suppressed(
        self, problem: SearchProblem, levels: Sequence[int], criterion: Criterion
    ) -> NDArray[np.bool_]:
        """For each distinct quasi-identifier tuple of ``problem``: is its class at node
        ``levels`` suppressed (too small, or failing a model)?"""
        verdict, codes = self.judge_node(levels, self.release_size(criterion))
        if not len(problem.counts):
            return np.zeros(0, dtype=bool)
        mapped = np.stack(
            [
                lk.maps[lv][c].astype(np.int64)
                for lk, lv, c in zip(problem.lookups, levels, problem.codes, strict=True)
            ],
            axis=1,
        )
        classes = codes.T.astype(np.int64)
        _, inverse = np.unique(np.concatenate([classes, mapped]), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        suppressed_of = np.zeros(int(inverse.max()) + 1, dtype=bool)
        suppressed_of[inverse[: len(classes)]] = verdict.status != kernels.RELEASED
        return suppressed_of[inverse[len(classes) :]]


def _pack(columns: Sequence[SensitiveColumn], models: Sequence[SensitiveModel]) -> tuple[Any, ...]:
    """The arrays of :func:`kernels.judge_cells` (layout: its module docstring)."""
    index = {c.name: i for i, c in enumerate(columns)}
    kinds = np.array([KIND_CODES[m.kind] for m in models], dtype=np.int64)
    model_col = np.array([index[m.column] for m in models], dtype=np.int64)
    param = np.array([m.t if m.kind.endswith("-t") else m.l for m in models], dtype=np.float64)
    param_c = np.array([m.c for m in models], dtype=np.float64)
    need = np.array([m.min_class_size for m in models], dtype=np.int64)
    col_m = np.array([c.size for c in columns], dtype=np.int64)
    col_off = np.concatenate([[0], np.cumsum(col_m)[:-1]]).astype(np.int64)
    col_rows = np.array([int(c.totals.sum()) for c in columns], dtype=np.int64)
    shares, rank, order, sums, distances = [], [], [], [], []
    h_height, h_off, h_map, h_tot = [], [], [], []
    at = 0
    for c in columns:
        n = max(int(c.totals.sum()), 1)
        share = c.totals / float(n)  # ARX: rows per value / input rows, as a double
        shares.append(share)
        seq = c.order if c.order is not None else np.arange(c.size, dtype=np.int64)
        pos = np.empty(c.size, dtype=np.int64)
        pos[seq] = np.arange(c.size, dtype=np.int64)
        rank.append(pos)
        order.append(seq)
        base_sum, base_distance = _ordered_bases(share, seq)
        sums.append(base_sum)
        distances.append(base_distance)
        levels = c.levels if c.levels is not None else (np.arange(c.size, dtype=np.int64),)
        h_height.append(len(levels) - 1)
        h_off.append(at)
        for level in levels:
            h_map.append(level)
            h_tot.append(np.bincount(level, weights=c.totals, minlength=c.size).astype(np.int64))
            at += c.size
    cat_f = np.concatenate(shares) if shares else np.zeros(0)
    return (
        kinds,
        model_col,
        param,
        param_c,
        need,
        col_m,
        col_off,
        col_rows,
        np.ascontiguousarray(cat_f, dtype=np.float64),
        np.concatenate(rank).astype(np.int64),
        np.concatenate(order).astype(np.int64),
        np.concatenate(sums).astype(np.float64),
        np.concatenate(distances).astype(np.float64),
        np.array(h_height, dtype=np.int64),
        np.array(h_off, dtype=np.int64),
        np.concatenate(h_map).astype(np.int64),
        np.concatenate(h_tot).astype(np.int64),
    )


def _ordered_bases(share: F64, order: I64) -> tuple[F64, F64]:
    """Running sums ``-sum_(j<=i) q_j`` and distances ``sum_(j<=i) |...|`` over the
    values in order, for a class with none of them, computed step by step as ARX does
    (``OrderedDistanceTCloseness.initialize``)."""
    running = distance = 0.0
    sums = np.zeros(len(order), dtype=np.float64)
    distances = np.zeros(len(order), dtype=np.float64)
    for i, v in enumerate(order.tolist()):
        running -= float(share[v])
        distance += abs(running)
        sums[i], distances[i] = running, distance
    return sums, distances


def sensitive_table(
    problem: SearchProblem,
    codes: Sequence[NDArray[np.integer]],
    counts: NDArray[np.integer],
    columns: Sequence[SensitiveColumn],
    models: Sequence[SensitiveModel],
) -> SensitiveTable:
    """The table for ``problem`` from tuples of (quasi-identifier codes, then one code per
    sensitive column in ``columns`` order) with ``counts`` rows."""
    if not models:
        raise EngineInputError("no privacy model on a sensitive column was given")
    names = [c.name for c in columns]
    clash = sorted(set(names) & set(problem.quasi))
    if clash:
        raise EngineInputError(f"column(s) both quasi-identifier and sensitive: {', '.join(clash)}")
    by_name = {c.name: c for c in columns}
    for m in models:
        if m.column not in by_name:
            raise EngineInputError(f"criterion on {m.column!r}, which is not a sensitive column")
        by_name[m.column].check(m)
    if len(codes) != problem.dimensions + len(columns):
        raise EngineInputError("one code column per quasi-identifier and sensitive column needed")
    used = [c for c in columns if any(m.column == c.name for m in models)]
    keep = list(range(problem.dimensions)) + [
        problem.dimensions + names.index(c.name) for c in used
    ]
    identity = [QuasiLookup.from_maps(c.name, [np.arange(c.size)]) for c in used]
    cells = build_problem(
        (*problem.quasi, *(c.name for c in used)),
        [codes[i] for i in keep],
        counts,
        [*problem.lookups, *identity],
    )
    return SensitiveTable(problem.quasi, tuple(used), tuple(models), cells, _pack(used, models))


def problem_with_sensitive(
    encoded: EncodedLike,
    lookups: Sequence[LookupLike],
    sensitive: Sequence[str],
    models: Sequence[SensitiveModel],
    *,
    dictionaries: Sequence[pl.Series],
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> tuple[SearchProblem, SensitiveTable]:
    """The search problem and its sensitive table from one encoding of the quasi-
    identifiers *and* the sensitive columns (``encoded.quasi`` = quasi-identifiers, then
    ``sensitive``; ``dictionaries`` in that order, as ``frame.encode`` returns them).
    ``hierarchies`` gives the sensitive columns' hierarchies (hierarchical distance)."""
    names = tuple(encoded.quasi)
    d = len(names) - len(sensitive)
    if d < 0 or tuple(names[d:]) != tuple(sensitive):
        raise EngineInputError("encode the quasi-identifiers first, then the sensitive columns")
    quasi = names[:d]
    tuples = encoded.tuples
    by_qi = (
        tuples.group_by(list(quasi)).agg(pl.col("count").sum())
        if quasi
        else tuples.select(pl.col("count").sum())
    )
    problem = problem_from_encoded(_Encoded(quasi, by_qi, encoded.rows), lookups)
    counts = tuples.get_column("count").to_numpy()
    columns = []
    for j, name in enumerate(sensitive):
        codes = tuples.get_column(name).to_numpy().astype(np.int64)
        values = dictionaries[d + j].to_list()
        totals = np.bincount(codes, weights=counts, minlength=len(values)).astype(np.int64)
        hierarchy = (hierarchies or {}).get(name)
        needs = any(m.column == name and m.needs_hierarchy for m in models)
        columns.append(
            sensitive_column(name, values, totals, hierarchy=hierarchy if needs else None)
        )
    code_columns = [tuples.get_column(n).to_numpy() for n in names]
    return problem, sensitive_table(problem, code_columns, counts, columns, models)


@dataclass(frozen=True)
class _Encoded:
    quasi: tuple[str, ...]
    tuples: pl.DataFrame
    rows: int
