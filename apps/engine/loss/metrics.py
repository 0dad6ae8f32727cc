"""Metrics evaluated on a lattice node's classes, with the search's lower bounds.

Each ``*Metric`` applies one formula of :mod:`apps.engine.loss.formulas` to a node's
equivalence classes and gives the search a **lower bound** per node: the value it would
take with nothing suppressed. It is a lower bound because a suppressed row costs each
metric at least as much as the same row released (share 1 >= any share; |E| <= n; ...),
and it is monotone along the lattice (classes merge, values cover more leaves), which
the search uses to prune (ARX does the same with ``getLowerBound``). Knowing that a
node suppresses at least ``S`` rows raises it (``suppression_bounds``); discernibility
and AECS also take numbers measured on evaluated specializations (``lift``), each
bound with its proof in its docstring, all checked against every node of random
problems in ``tests/engine/test_search_properties.py``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from apps.engine.loss import kernels
from apps.engine.loss.formulas import (
    ARX_FACTOR,
    METRICS,
    MetricName,
    average_class_size,
    discernibility_value,
    generalization_entropy,
    geometric_mean_loss,
    loss_of_dimension,
    precision_value,
    suppression_entropy,
)

if TYPE_CHECKING:
    from apps.engine.search.problem import I64, U32, Codes, SearchProblem


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """What a metric sees of a node: its levels, classes (``columns[j]`` = codes of QI
    ``j`` per class) and which are suppressed. ``counts``, when given, holds (suppressed
    rows, released classes, sum of squared released sizes), as the search's compiled
    roll-up already summed them; otherwise they are computed from ``sizes``."""

    levels: tuple[int, ...]
    columns: Sequence[U32] | Codes
    sizes: I64
    suppressed: NDArray[np.bool_]
    counts: tuple[int, int, int] | None = None

    @cached_property
    def _counts(self) -> tuple[int, int, int]:
        if self.counts is not None:
            return self.counts
        kept = self.sizes[~self.suppressed].astype(np.int64)
        return (
            int(self.sizes[self.suppressed].sum()),
            len(kept),
            int(np.square(kept).sum()),
        )

    @property
    def suppressed_rows(self) -> int:
        return self._counts[0]

    @property
    def released_classes(self) -> int:
        return self._counts[1]

    @property
    def released_squares(self) -> int:
        """Sum of the squared sizes of the released classes."""
        return self._counts[2]


class Metric(ABC):
    """An information-loss metric prepared for one problem (lower is better)."""

    name: MetricName
    #: Numbers an evaluated node hands up to its generalizations (:meth:`lift`), 0 when
    #: the metric's bounds need nothing measured on classes. The search keeps, per node,
    #: the element-wise maximum over its evaluated specializations (and the bottom node,
    #: :meth:`lift_base`) and turns it into a bound with :meth:`lifted_bound`.
    lift_width: int = 0
    #: True when :meth:`value` reads the classes' codes (``NodeClasses.columns``).
    reads_codes: bool = False
    #: True when :meth:`value` or :meth:`lift` reads the classes' sizes (the search then
    #: hands them over; else only the summary's counts).
    reads_sizes: bool = False

    def __init__(self, problem: SearchProblem) -> None:
        self.problem = problem

    @abstractmethod
    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        """Static lower bound of the metric for every node (rows of ``levels``)."""

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Lower bound of every node knowing it suppresses at least ``suppressed`` rows
        (classes of fewer than ``k`` rows). Default: no use of it."""
        return self.lower_bounds(levels)

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        """Scalar form of :meth:`suppression_bounds` for one node (-inf: no bound)."""
        return -math.inf

    #: True when :meth:`suppression_bounds` of a node suppressing nothing is exactly its
    #: static bound (:meth:`lower_bounds`): then :meth:`suppression_keys` computes the
    #: suppression bounds of the nodes known to suppress rows only.
    static_at_zero: bool = False

    def suppression_keys(
        self,
        levels: NDArray[np.int16],
        bounds: NDArray[np.float64],
        suppressed: NDArray[np.int64],
        k: int,
    ) -> NDArray[np.float64]:
        """The search's key of every node: the larger of its static bound (``bounds``,
        :meth:`lower_bounds`) and its bound knowing it suppresses ``suppressed`` rows."""
        if not self.static_at_zero:
            return np.maximum(bounds, self.suppression_bounds(levels, suppressed, k))
        keys = bounds.copy()
        at = np.flatnonzero(suppressed > 0)
        if len(at):
            keys[at] = np.maximum(
                bounds[at], self._suppression_bounds_of(levels[at], suppressed[at], k)
            )
        return keys

    def _suppression_bounds_of(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """:meth:`suppression_bounds` of nodes that suppress rows (for the keys)."""
        return self.suppression_bounds(levels, suppressed, k)

    #: True when the value with nothing suppressed equals the static bound exactly.
    exact_bound: bool = False

    def value(self, node: NodeClasses) -> float:
        """The metric's value on a node with its suppressed classes.

        With nothing suppressed, metrics whose static bound is exact return the bound
        itself, bit for bit, so that nodes valued either way compare consistently.
        """
        if self.exact_bound and node.suppressed_rows == 0:
            return self.generalization_value(node)
        return self._value(node)

    @abstractmethod
    def _value(self, node: NodeClasses) -> float:
        """The metric's formula on a node with its suppressed classes."""

    def generalization_value(self, node: NodeClasses) -> float:
        """Value with nothing suppressed: a lower bound for this node and, with
        consistent hierarchies, for all its generalizations."""
        return float(self.lower_bounds(np.asarray([node.levels], dtype=np.int16))[0])

    def lift_base(self, k: int) -> NDArray[np.float64]:
        """:meth:`lift` of the bottom node, valid for *every* node (each class of any node
        is a union of distinct tuples, whatever the hierarchies)."""
        return np.zeros(self.lift_width, dtype=np.float64)

    def lift(self, node: NodeClasses, k: int) -> tuple[float, ...]:
        """Numbers measured on an evaluated node that bound its generalizations (with
        consistent hierarchies: classes only merge going up)."""
        return ()

    def lifted_bounds(
        self, lifted: NDArray[np.float64], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Lower bound of nodes from their lifted numbers (rows of ``lifted``) and a
        number of rows each certainly suppresses."""
        return np.full(len(suppressed), -math.inf, dtype=np.float64)

    def lifted_bound(self, lifted: Sequence[float], suppressed: int, k: int) -> float:
        """Scalar form of :meth:`lifted_bounds`."""
        return -math.inf

    def _base(self, k: int) -> list[float]:
        """:meth:`lift_base` as a list, memoized per ``k``."""
        memo: dict[int, list[float]] = self.__dict__.setdefault("_base_memo", {})
        if k not in memo:
            memo[k] = [float(v) for v in self.lift_base(k)]
        return memo[k]


class LossMetric(Metric):
    """Loss (Iyengar 2002), ARX's default: see :func:`loss_of_dimension`."""

    name: MetricName = "loss"
    exact_bound = True
    reads_codes = True
    static_at_zero = True  # (no suppressed row: the same truncated shares, same product)

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.weighted, self.by_level, self.penalty = problem.memoized(
            ("metric", self.name), lambda: _loss_tables(problem)
        )

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        d = self.problem.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j in range(d):
            prod *= 1.0 + self.by_level[j][levels[:, j]]
        return prod ** (1.0 / d) - 1.0

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Each suppressed row adds at least ``|H_j| - (most leaves of a value at l_j)``
        to ``S_j |H_j|`` (its share becomes 1)."""
        p = self.problem
        d = p.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j, lk in enumerate(p.lookups):
            col = levels[:, j]
            weighted = (
                np.asarray(self.weighted[j], dtype=np.int64)[col]
                + suppressed * np.asarray(self.penalty[j], dtype=np.int64)[col]
            )
            denominator = p.rows * lk.domain_size - p.rows
            if denominator > 0:
                share = np.maximum(0.0, (weighted - p.rows) / denominator)
                prod *= 1.0 + np.floor(share * ARX_FACTOR) / ARX_FACTOR  # truncate_like_arx
        return prod ** (1.0 / d) - 1.0

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return float(
            kernels.loss_suppression_bound(
                np.asarray(levels, dtype=np.int16), suppressed, *self._bound_arrays
            )
        )

    @cached_property
    def _bound_arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64], int, NDArray[np.int64]]:
        """``weighted``, ``penalty`` as ``[d x (H+1)]`` arrays, rows, domain sizes."""
        p = self.problem
        width = max(p.heights, default=0) + 1
        weighted = np.zeros((p.dimensions, width), dtype=np.int64)
        penalty = np.zeros((p.dimensions, width), dtype=np.int64)
        for j in range(p.dimensions):
            weighted[j, : len(self.weighted[j])] = self.weighted[j]
            penalty[j, : len(self.penalty[j])] = self.penalty[j]
        domain = np.array([lk.domain_size for lk in p.lookups], dtype=np.int64)
        return weighted, penalty, p.rows, domain

    def _value(self, node: NodeClasses) -> float:
        p = self.problem
        columns = node.columns
        if isinstance(columns, np.ndarray) and columns.ndim == 2 and p.dimensions:
            # The integer sums in one compiled pass (the same integers as below).
            leaves, offsets = self._leaves
            sums = kernels.suppressed_leaves(
                np.ascontiguousarray(columns),
                np.ascontiguousarray(node.sizes, dtype=np.int64),
                np.ascontiguousarray(node.suppressed),
                np.asarray(node.levels, dtype=np.int64),
                leaves,
                offsets,
            ).tolist()
            s = sums[-1]
            dims = [
                loss_of_dimension(
                    self.weighted[j][level] - sums[j] + s * lk.domain_size, p.rows, lk.domain_size
                )
                for j, (lk, level) in enumerate(zip(p.lookups, node.levels, strict=True))
            ]
            return geometric_mean_loss(dims)
        supp_sizes = node.sizes[node.suppressed]
        s = int(supp_sizes.sum())
        dims = []
        for j, (lk, level) in enumerate(zip(p.lookups, node.levels, strict=True)):
            covered = int((supp_sizes * lk.leaves[level][node.columns[j][node.suppressed]]).sum())
            weighted = self.weighted[j][level] - covered + s * lk.domain_size
            dims.append(loss_of_dimension(weighted, p.rows, lk.domain_size))
        return geometric_mean_loss(dims)

    @cached_property
    def _leaves(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Every QI's ``leaves`` at every level in one array, and where each starts."""
        return self.problem.memoized(("leaves", "flat"), lambda: _flat_leaves(self.problem))


def _flat_leaves(problem: SearchProblem) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    width = max(problem.heights, default=0) + 1
    offsets = np.zeros((problem.dimensions, width), dtype=np.int64)
    parts: list[NDArray[np.int64]] = []
    at = 0
    for j, lk in enumerate(problem.lookups):
        for level, leaves in enumerate(lk.leaves):
            offsets[j, level] = at
            parts.append(np.asarray(leaves, dtype=np.int64))
            at += len(leaves)
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(flat, dtype=np.int64), offsets


def _loss_tables(
    problem: SearchProblem,
) -> tuple[tuple[tuple[int, ...], ...], tuple[NDArray[np.float64], ...], tuple[list[int], ...]]:
    """:class:`LossMetric`'s ``weighted``, ``by_level`` and ``penalty`` (per problem)."""
    # weighted[j][L] = sum over all rows of leaves covered at level L (= S_j |H_j|)
    weighted = tuple(
        tuple(int((f * lv).sum()) for f, lv in zip(fr, lk.leaves, strict=True))
        for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
    )
    by_level = tuple(
        np.array([loss_of_dimension(w, problem.rows, lk.domain_size) for w in ws], dtype=np.float64)
        for ws, lk in zip(weighted, problem.lookups, strict=True)
    )
    # penalty[j][L]: least increase of S_j |H_j| per suppressed row at level L
    penalty = tuple(
        [
            lk.domain_size - (int(lv[f > 0].max()) if (f > 0).any() else lk.domain_size)
            for f, lv in zip(fr, lk.leaves, strict=True)
        ]
        for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
    )
    return weighted, by_level, penalty


class EntropyMetric(Metric):
    """Non-uniform entropy, non-monotonic variant (El Emam et al. 2009), summed over QIs."""

    name: MetricName = "entropy"
    exact_bound = True
    reads_codes = True
    static_at_zero = True  # (no suppressed row: nothing added to the static bound)

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.by_level = problem.memoized(("metric", self.name), lambda: _entropy_by_level(problem))

    @cached_property
    def _cum(self) -> list[list[tuple[NDArray[np.float64], NDArray[np.float64]]]]:
        """Per QI and level, the value frequencies in decreasing order, their running
        sums and the running sums of f log2 f (for the least suppression entropy; made
        when a bound first needs them: searches that suppress nothing never do)."""
        return self.problem.memoized(
            ("metric", self.name, "cum"), lambda: _entropy_cums(self.problem)
        )

    def maximum(self) -> float:
        """Entropy at the top node of the hierarchies, nothing suppressed (the 100 %)."""
        return float(sum(e[-1] for e in self.by_level))

    def least_suppression_entropy(
        self, j: int, level: int, suppressed: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """Least ``-sum_u c_u log2(c_u/S)`` of QI ``j`` at ``level`` over every way of
        suppressing ``S >= suppressed`` rows.

        Proof: with ``S`` fixed the term is ``S log2 S - sum_u c_u log2 c_u`` with
        ``0 <= c_u <= f_u`` (the value's rows at that level) and ``sum c_u = S``. The
        greedy vector ``g`` that fills the most frequent values first majorizes every such
        ``c`` (its top-m sum is ``min(S, top-m sum of f)``, which bounds any ``c``'s), and
        ``sum x log x`` is Schur-convex, so ``g`` gives the least term. That least term is
        non-decreasing in ``S``: one more row raises ``S log S`` by at least as much as
        ``c log c`` of the bin it fills, because ``c <= S`` and ``x log x`` has increasing
        differences. So ``S = suppressed`` gives a bound for every larger ``S``.
        """
        cum, cum_flogf = self._cum[j][level]
        s = suppressed.astype(np.float64)
        if not len(cum):
            return np.zeros(len(s), dtype=np.float64)
        full = np.searchsorted(cum, s, side="right")  # values filled completely
        filled = np.where(full > 0, cum[np.maximum(full - 1, 0)], 0.0)
        flogf = np.where(full > 0, cum_flogf[np.maximum(full - 1, 0)], 0.0)
        rest = s - filled
        with np.errstate(divide="ignore", invalid="ignore"):
            rest_log = np.where(rest > 0, rest * np.log2(np.maximum(rest, 1.0)), 0.0)
            s_log = np.where(s > 0, s * np.log2(np.maximum(s, 1.0)), 0.0)
        # A hair below the exact least, so float rounding never lifts it over a value.
        least: NDArray[np.float64] = np.maximum(0.0, s_log - flogf - rest_log) * (1.0 - 1e-12)
        return least

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Generalization part (exact) plus, per QI, the least suppression entropy of
        at least ``suppressed`` rows (:meth:`least_suppression_entropy`)."""
        total = self.lower_bounds(levels)
        if not (suppressed > 0).any():
            return total
        for j, top in enumerate(int(t) for t in levels.max(axis=0, initial=0)):
            for level in range(top + 1):
                at = levels[:, j] == level
                if at.any():
                    total[at] += self.least_suppression_entropy(j, level, suppressed[at])
        return total

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        """Scalar form of :meth:`suppression_bounds` (compiled: ``loss/kernels.py``)."""
        return float(
            kernels.entropy_suppression_bound(
                np.asarray(levels, dtype=np.int16), suppressed, *self._bound_arrays
            )
        )

    def _suppression_bounds_of(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Compiled (:func:`kernels.entropy_suppression_bounds`): the same bound as
        :meth:`suppression_bounds` up to the order of its float additions."""
        out: NDArray[np.float64] = kernels.entropy_suppression_bounds(
            np.ascontiguousarray(levels, dtype=np.int16),
            np.ascontiguousarray(suppressed, dtype=np.int64),
            *self._bound_arrays,
        )
        return out

    @cached_property
    def _bound_arrays(
        self,
    ) -> tuple[
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.int64],
        NDArray[np.int64],
    ]:
        """``by_level`` as ``[d x (H+1)]``; the running sums of every QI and level in one
        array each, with their start and length per QI and level."""
        p = self.problem
        width = max(p.heights, default=0) + 1
        by_level = np.zeros((p.dimensions, width), dtype=np.float64)
        start = np.zeros((p.dimensions, width), dtype=np.int64)
        length = np.zeros((p.dimensions, width), dtype=np.int64)
        cums: list[NDArray[np.float64]] = []
        flogfs: list[NDArray[np.float64]] = []
        at = 0
        for j, per_level in enumerate(self._cum):
            by_level[j, : len(self.by_level[j])] = self.by_level[j]
            for level, (cum, flogf) in enumerate(per_level):
                start[j, level], length[j, level] = at, len(cum)
                cums.append(cum)
                flogfs.append(flogf)
                at += len(cum)
        empty = np.zeros(0, dtype=np.float64)
        return (
            by_level,
            np.concatenate(cums) if cums else empty,
            np.concatenate(flogfs) if flogfs else empty,
            start,
            length,
        )

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        total = np.zeros(len(levels), dtype=np.float64)
        for j, e in enumerate(self.by_level):
            total += e[levels[:, j]]
        return total

    def _value(self, node: NodeClasses) -> float:
        total = 0.0
        for j, level in enumerate(node.levels):
            total += float(self.by_level[j][level])
        columns = node.columns
        if not node.suppressed.any():
            return total
        if isinstance(columns, np.ndarray) and columns.ndim == 2:
            # Rows per suppressed value counted in one compiled pass; each QI's term is
            # then suppression_entropy's own expression on the same floats.
            lookups = self.problem.lookups
            counts, starts = kernels.suppressed_value_counts(
                np.ascontiguousarray(columns),
                np.ascontiguousarray(node.sizes, dtype=np.int64),
                np.ascontiguousarray(node.suppressed),
                np.array(
                    [lk.values_at(level) for lk, level in zip(lookups, node.levels, strict=True)],
                    dtype=np.int64,
                ),
            )
            bounds = starts.tolist()
            for j in range(len(node.levels)):
                c = counts[bounds[j] : bounds[j + 1]]
                rows = c.sum()
                if rows != 0:
                    total += float(-(c * np.log2(c / rows)).sum()) + 0.0
            return total
        if node.suppressed.any():
            supp_sizes = node.sizes[node.suppressed].astype(np.float64)
            for j, level in enumerate(node.levels):
                per_value = np.bincount(
                    node.columns[j][node.suppressed],
                    weights=supp_sizes,
                    minlength=self.problem.lookups[j].values_at(level),
                )
                total += suppression_entropy(per_value.astype(np.int64))
        return total


def _entropy_by_level(problem: SearchProblem) -> tuple[NDArray[np.float64], ...]:
    """:class:`EntropyMetric`'s ``by_level`` (per problem)."""
    return tuple(
        np.array(
            [
                generalization_entropy(fr[0], fr[level], lk.maps[level])
                for level in range(lk.height + 1)
            ],
            dtype=np.float64,
        )
        for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
    )


def _entropy_cums(
    problem: SearchProblem,
) -> list[list[tuple[NDArray[np.float64], NDArray[np.float64]]]]:
    """:class:`EntropyMetric`'s ``_cum`` (per problem)."""
    cum: list[list[tuple[NDArray[np.float64], NDArray[np.float64]]]] = []
    for fr in problem.frequencies:
        per_level = []
        for f in fr:
            desc = np.sort(f[f > 0].astype(np.float64))[::-1]
            per_level.append((np.cumsum(desc), np.cumsum(desc * np.log2(desc))))
        cum.append(per_level)
    return cum


class PrecisionMetric(Metric):
    """Precision (Sweeney 2002): see :func:`precision_value`."""

    name: MetricName = "precision"
    exact_bound = True
    static_at_zero = True  # (no suppressed row: the same shares, added in the same order)

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        d = self.problem.dimensions
        total = np.zeros(len(levels), dtype=np.float64)
        if d == 0 or self.problem.rows == 0:
            return total
        for j, h in enumerate(self.problem.heights):
            if h:
                total += levels[:, j] / h
        return total / d

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """``mean_j [s_j + (S/n)(1 - s_j)]`` is increasing in ``S``."""
        d, n = self.problem.dimensions, self.problem.rows
        total = np.zeros(len(levels), dtype=np.float64)
        if d == 0 or n == 0:
            return total
        frac = suppressed / n
        for j, h in enumerate(self.problem.heights):
            share = levels[:, j] / h if h else np.zeros(len(levels))
            total += share + frac * (1.0 - share)
        return total / d

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return precision_value(levels, self.problem.heights, self.problem.rows, suppressed)

    def _value(self, node: NodeClasses) -> float:
        return precision_value(
            node.levels, self.problem.heights, self.problem.rows, node.suppressed_rows
        )


class DiscernibilityMetric(Metric):
    """Discernibility: see :func:`discernibility_value`.

    Bounds count a cost per row: ``|E|`` for a row released in class ``E``, ``n`` for a
    suppressed row (the value is their sum). Going up the lattice (consistent
    hierarchies) a row's class only grows, and a released class stays released.
    """

    name: MetricName = "discernibility"
    lift_width = 1

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        # Classes are unions of the distinct tuples: sum |E|^2 >= sum count^2.
        floor = float(np.square(self.problem.counts.astype(np.float64)).sum())
        return np.full(len(levels), floor, dtype=np.float64)

    def _least_cost(self, k: int) -> int:
        """Least cost of a row in a class of fewer than ``k`` rows: ``min(k, n)``
        (released in a class of ``>= k`` rows, or suppressed at cost ``n``)."""
        return min(max(k, 1), max(self.problem.rows, 1))

    def lift_base(self, k: int) -> NDArray[np.float64]:
        """Bottom node: a row of a tuple of ``c`` rows costs ``>= max(c, min(k, n))``."""
        c = self.problem.counts.astype(np.int64)
        return np.array([float(int((c * np.maximum(c, self._least_cost(k))).sum()))])

    def lift(self, node: NodeClasses, k: int) -> tuple[float, ...]:
        """``sum_{released E} |E|^2 + min(k, n) |S|``: at a generalization a row released
        here is released in a class at least as large (cost ``>= |E|``), a row
        suppressed here costs ``>= min(k, n)`` (released in a class of ``>= k``, or
        ``n``)."""
        return (float(node.released_squares + self._least_cost(k) * node.suppressed_rows),)

    def lifted_bounds(
        self, lifted: NDArray[np.float64], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """``lifted + (n - min(k, n)) S_N``. Proof: the lifted number of ``M <= N``
        charges ``min(k, n)`` to each row of ``S_M``; the rows suppressed at ``N`` are
        among them (classes of ``N`` are unions of classes of ``M``) and cost ``n``
        there, ``n - min(k, n)`` more; there are at least ``suppressed`` of them."""
        extra = self.problem.rows - self._least_cost(k)
        return lifted[:, 0] + float(extra) * suppressed.astype(np.float64)

    def lifted_bound(self, lifted: Sequence[float], suppressed: int, k: int) -> float:
        if not suppressed:  # (called for every node the search takes from its queue)
            return float(lifted[0])
        return float(lifted[0]) + float(self.problem.rows - self._least_cost(k)) * suppressed

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """The bottom node's lifted number bounds every node (:meth:`lift_base`)."""
        base = np.broadcast_to(self.lift_base(k), (len(levels), 1))
        return np.maximum(self.lower_bounds(levels), self.lifted_bounds(base, suppressed, k))

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return self.lifted_bound(self._base(k), suppressed, k)

    def generalization_value(self, node: NodeClasses) -> float:
        return float(discernibility_value(node.sizes, 0, self.problem.rows))

    def _value(self, node: NodeClasses) -> float:
        # = discernibility_value(released sizes, suppressed rows, n), from the sums
        return float(node.released_squares + node.suppressed_rows * self.problem.rows)


class AverageClassSizeMetric(Metric):
    """Average equivalence class size: see :func:`average_class_size`."""

    name: MetricName = "aecs"
    lift_width = 2
    reads_sizes = True  # (lift: the number of classes)

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.present = problem.memoized(
            ("metric", self.name),
            lambda: tuple(
                np.array([int((f > 0).sum()) for f in fr], dtype=np.float64)
                for fr in problem.frequencies
            ),
        )

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        # Classes <= distinct tuples and <= product of the values present per QI.
        n = self.problem.rows
        if n == 0:
            return np.zeros(len(levels), dtype=np.float64)
        most = np.full(len(levels), float(len(self.problem.counts)), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j, pres in enumerate(self.present):
            prod *= pres[levels[:, j]]
        return n / np.maximum(np.minimum(most, prod), 1.0)

    def lift_base(self, k: int) -> NDArray[np.float64]:
        c = self.problem.counts
        k = max(k, 1)
        released = int((c >= k).sum())
        suppressed = int(c[c < k].sum())
        return np.array([-float(len(c)), -float(k * released + suppressed)])

    def lift(self, node: NodeClasses, k: int) -> tuple[float, ...]:
        """``(-classes, -(k released + |S|))``, negated so that the search's maximum
        keeps the least (:meth:`lifted_bounds`)."""
        k = max(k, 1)
        released, s = node.released_classes, node.suppressed_rows
        return (-float(len(node.sizes)), -float(k * released + s))

    def _most_released(
        self, lifted: NDArray[np.float64], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Most released classes of ``N`` given ``M <= N`` and ``S_N >= suppressed``.

        Proof: (1) classes of ``N`` are unions of classes of ``M``: at most
        ``classes(M)``. (2) A released class of ``N`` either holds a row released at
        ``M`` (each released class of ``M`` lies in one class of ``N``: at most
        ``released(M)`` such classes) or only rows of ``S_M`` that ``N`` releases, at least
        ``k`` of them; those rows are ``S_M`` minus ``S_N`` (``S_N`` is within ``S_M``),
        so at most ``floor((k released(M) + |S_M| - S_N) / k)`` in all. (3) Released
        classes hold ``>= k`` of the ``n - S_N`` released rows."""
        k = max(k, 1)
        s = suppressed.astype(np.float64)
        n = float(self.problem.rows)
        most = np.minimum(-lifted[:, 0], np.floor((-lifted[:, 1] - s) / k))
        return np.maximum(np.minimum(most, np.floor((n - s) / k)), 0.0)

    def lifted_bounds(
        self, lifted: NDArray[np.float64], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        n = self.problem.rows
        most = self._most_released(lifted, suppressed, k)
        if n == 0:
            return np.zeros(len(most), dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(most > 0, n / np.maximum(most, 1.0), math.inf)

    def lifted_bound(self, lifted: Sequence[float], suppressed: int, k: int) -> float:
        n = self.problem.rows
        if n == 0:
            return 0.0
        k = max(k, 1)
        most = min(-lifted[0], (-lifted[1] - suppressed) // k, (n - suppressed) // k)
        return n / most if most > 0 else math.inf

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """The bottom node's lifted numbers bound every node (:meth:`lift_base`)."""
        base = np.broadcast_to(self.lift_base(k), (len(levels), 2))
        return np.maximum(self.lower_bounds(levels), self.lifted_bounds(base, suppressed, k))

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return self.lifted_bound(self._base(k), suppressed, k)

    def generalization_value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, len(node.sizes))

    def _value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, node.released_classes)


_METRIC_CLASSES: dict[str, type[Metric]] = {
    "loss": LossMetric,
    "entropy": EntropyMetric,
    "precision": PrecisionMetric,
    "discernibility": DiscernibilityMetric,
    "aecs": AverageClassSizeMetric,
}


def prepare_metric(name: str, problem: SearchProblem) -> Metric:
    """The metric called ``name`` (one of :data:`METRICS`) prepared for ``problem``."""
    try:
        cls = _METRIC_CLASSES[name]
    except KeyError:
        from apps.engine.errors import EngineInputError

        raise EngineInputError(f"unknown metric {name!r} (one of {', '.join(METRICS)})") from None
    return cls(problem)
