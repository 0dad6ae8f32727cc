"""Utility figures of one chosen node for the report (METHOD.md Step 8).

Per-variable before/after distributions (for charts), the missingness that
de-identification added (Seed 001) and the quasi-identifier cells released as ``*``,
computed on the compressed tuple table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.engine.loss import cell_missingness, record_missingness
from apps.engine.search.problem import I64, SearchProblem


@dataclass(frozen=True)
class VariableDistribution:
    """Rows per original value (before) and per released generalized value (after)."""

    column: str
    level: int
    before: tuple[tuple[str | None, int], ...]
    after: tuple[tuple[str | None, int], ...]
    suppressed_rows: int


@dataclass(frozen=True)
class Missingness:
    """Share of records / QI cells made missing by de-identification (Seed 001)."""

    records: float
    cells: float


@dataclass(frozen=True)
class StarredCells:
    """Quasi-identifier cells of the *released* records whose value stands for every value
    of the column (the hierarchy's ``*``): they carry no information, yet Seed 001's
    missingness, which counts only what suppression empties, leaves them out."""

    by_column: dict[str, int]  # released records whose value of the column is *
    released_rows: int

    @property
    def cells(self) -> int:
        return self.released_rows * len(self.by_column)

    @property
    def starred(self) -> int:
        return sum(self.by_column.values())

    @property
    def share(self) -> float:
        return self.starred / self.cells if self.cells else 0.0

    @property
    def whole_columns(self) -> tuple[str, ...]:
        """The quasi-identifiers that are * in every released record."""
        if not self.released_rows:
            return ()
        return tuple(c for c, n in self.by_column.items() if n == self.released_rows)

    def to_dict(self) -> dict[str, object]:
        return {
            "by_column": dict(self.by_column),
            "released_rows": self.released_rows,
            "cells": self.cells,
            "starred": self.starred,
            "share": self.share,
            "whole_columns": list(self.whole_columns),
        }


def starred_cells(
    problem: SearchProblem,
    levels: tuple[int, ...],
    k: int,
    *,
    suppressed: NDArray[np.bool_] | None = None,
) -> StarredCells:
    """Per quasi-identifier, the released records whose value at ``levels`` covers the
    whole hierarchy (a level above the original whose group holds every leaf), and the
    released records (``suppressed`` per tuple, as for :func:`node_missingness`)."""
    if suppressed is None:
        suppressed = tuple_suppressed(problem, levels, k)
    kept: I64 = np.where(suppressed, 0, problem.counts).astype(np.int64)
    by_column = {}
    for lk, lv, codes in zip(problem.lookups, levels, problem.codes, strict=True):
        whole = (
            np.asarray(lk.leaves[lv]) >= lk.domain_size
            if lv > 0
            else np.zeros(lk.values_at(0), dtype=bool)
        )
        by_column[lk.column] = int(kept[whole[lk.maps[lv][codes]]].sum())
    return StarredCells(by_column=by_column, released_rows=int(kept.sum()))


def tuple_suppressed(problem: SearchProblem, levels: tuple[int, ...], k: int) -> NDArray[np.bool_]:
    """For each distinct tuple: is it in a class of fewer than ``k`` rows at ``levels``?"""
    cols = [
        lk.maps[lv][c] for lk, lv, c in zip(problem.lookups, levels, problem.codes, strict=True)
    ]
    if not len(problem.counts):
        return np.zeros(0, dtype=bool)
    stacked = np.stack(cols, axis=1) if cols else np.zeros((len(problem.counts), 0), np.uint32)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    sizes = np.bincount(inverse, weights=problem.counts.astype(np.float64))
    return sizes[inverse] < k


def _label(problem: SearchProblem, j: int, level: int, code: int) -> str | None:
    labels = problem.lookups[j].labels
    if labels is None:
        return str(code)
    return labels[level][code]


def variable_distributions(
    problem: SearchProblem,
    levels: tuple[int, ...],
    k: int,
    suppressed: NDArray[np.bool_] | None = None,
) -> tuple[VariableDistribution, ...]:
    """Per QI: rows per original value, and released rows per generalized value
    (``suppressed`` per tuple: as for :func:`node_missingness`)."""
    if suppressed is None:
        suppressed = tuple_suppressed(problem, levels, k)
    kept: I64 = np.where(suppressed, 0, problem.counts)
    out = []
    for j, (lk, lv) in enumerate(zip(problem.lookups, levels, strict=True)):
        before = problem.frequencies[j][0]
        after = np.bincount(
            lk.maps[lv][problem.codes[j]],
            weights=kept.astype(np.float64),
            minlength=lk.values_at(lv),
        ).astype(np.int64)
        out.append(
            VariableDistribution(
                column=lk.column,
                level=lv,
                before=tuple(
                    (_label(problem, j, 0, int(c)), int(before[c])) for c in np.flatnonzero(before)
                ),
                after=tuple(
                    (_label(problem, j, lv, int(g)), int(after[g])) for g in np.flatnonzero(after)
                ),
                suppressed_rows=int(problem.counts[suppressed].sum()),
            )
        )
    return tuple(out)


def node_missingness(
    problem: SearchProblem,
    levels: tuple[int, ...],
    k: int,
    *,
    count_full_generalization: bool = False,
    suppressed: NDArray[np.bool_] | None = None,
) -> Missingness:
    """Missingness added by de-identification at node ``levels`` (Seed 001's definitions).

    A QI cell is missing before when its value is the missing value (label None). After
    de-identification it is missing when it was before or when its row is suppressed
    (Seed 001: missingness is affected only by suppression; generalization shows in the
    entropy). With ``count_full_generalization`` a value generalized to the whole
    hierarchy (e.g. ``*``) counts as missing too, as ARX's scores count the root.
    ``suppressed`` (per tuple) replaces "classes smaller than ``k``" when privacy models
    on sensitive columns suppress classes too (``SensitiveTable.tuple_suppressed``).
    """
    if suppressed is None:
        suppressed = tuple_suppressed(problem, levels, k)
    d = problem.dimensions
    t = len(problem.counts)
    before = np.zeros((t, d), dtype=bool)
    after = np.zeros((t, d), dtype=bool)
    for j, (lk, lv) in enumerate(zip(problem.lookups, levels, strict=True)):
        codes = problem.codes[j]
        if lk.labels is not None:
            missing_code = np.array([lab is None for lab in lk.labels[0]], dtype=bool)
            before[:, j] = missing_code[codes]
        if count_full_generalization:
            whole = lk.leaves[lv] >= lk.domain_size
            after[:, j] = whole[lk.maps[lv][codes]] & (lk.domain_size > 1)
        after[:, j] |= suppressed
    return Missingness(
        records=record_missingness(before, after, problem.counts),
        cells=cell_missingness(before, after, problem.counts),
    )
