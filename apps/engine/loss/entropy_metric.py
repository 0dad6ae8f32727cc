"""Generalization entropy (Sweeney 2002), the non-uniform entropy ARX computes, read from
the hierarchies and the input's marginal frequencies, with the per-level tables it
precomputes and its bounds for a node known to suppress rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from apps.engine.loss import kernels, table_kernels
from apps.engine.loss.formulas import (
    MetricName,
    suppression_entropy,
)
from apps.engine.loss.node import Metric, NodeClasses

if TYPE_CHECKING:
    from apps.engine.search.problem import SearchProblem


class EntropyMetric(Metric):
    """Non-uniform entropy, non-monotonic variant (El Emam et al. 2009), summed over QIs."""

    name: MetricName = "entropy"
    exact_bound = True
    reads_codes = True
    static_at_zero = True  # (no suppressed row: nothing added to the static bound)

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        #: Per QI and level, the generalization entropy (``[d x (H+1)]``), and as one row
        #: per QI up to its height.
        self.by_level_table = problem.memoized(
            ("metric", self.name), lambda: _entropy_by_level(problem)
        )
        self.by_level = tuple(
            self.by_level_table[j, : h + 1] for j, h in enumerate(problem.heights)
        )

    @cached_property
    def _cum(self) -> list[list[tuple[NDArray[np.float64], NDArray[np.float64]]]]:
        """Per QI and level, the value frequencies in decreasing order, their running
        sums and the running sums of f log2 f (for the least suppression entropy; made
        when a bound first needs them: searches that suppress nothing never do), as
        slices of :meth:`_running` arrays."""
        cum, cum_flogf, start, length = self._running
        return [
            [
                (cum[a : a + n], cum_flogf[a : a + n])
                for a, n in zip(
                    start[j, : h + 1].tolist(), length[j, : h + 1].tolist(), strict=True
                )
            ]
            for j, h in enumerate(self.problem.heights)
        ]

    @cached_property
    def _running(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
        """The running sums of every QI and level in one array each, with their start
        and length per QI and level (:func:`_entropy_cums`, per problem)."""
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
        return (self.by_level_table, *self._running)

    def search_tables(self) -> dict[str, NDArray[np.float64] | NDArray[np.int64]]:
        """What the compiled search reads to value and bound nodes (``kernels/valuation.py``'s
        ``Valuation``): the arrays of :meth:`suppression_bound` and the values per QI and
        level (``[d x (H+1)]``)."""
        by_level, cum, cum_flogf, start, length = self._bound_arrays
        return {
            "by_level": by_level,
            "cum": cum,
            "cum_flogf": cum_flogf,
            "start": start,
            "length": length,
            "values": self.problem.level_values,
        }

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        """The generalization entropy of every node: its QIs' ``by_level`` added in QI
        order (compiled, :func:`table_kernels.entropy_lower_bounds`)."""
        out: NDArray[np.float64] = table_kernels.entropy_lower_bounds(
            np.ascontiguousarray(levels, dtype=np.int16), self.by_level_table
        )
        return out

    def _value(self, node: NodeClasses) -> float:
        total = 0.0
        for j, level in enumerate(node.levels):
            total += float(self.by_level[j][level])
        columns = node.columns
        if not node.suppressed.any():
            return total
        if isinstance(columns, np.ndarray) and columns.ndim == 2:
            # Rows per suppressed value counted and each QI's terms summed in one
            # compiled pass (the compiled search values nodes with the same kernel).
            values = self.problem.level_values
            return float(
                kernels.add_suppression_entropy(
                    total,
                    np.ascontiguousarray(columns),
                    np.ascontiguousarray(node.sizes, dtype=np.int64),
                    np.ascontiguousarray(node.suppressed),
                    values[np.arange(len(node.levels)), np.asarray(node.levels, dtype=np.int64)],
                )
            )
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


def _entropy_by_level(problem: SearchProblem) -> NDArray[np.float64]:
    """:class:`EntropyMetric`'s ``by_level_table`` (per problem): every QI's
    ``formulas.generalization_entropies`` bit for bit, the same operations on the same
    floats (numpy's ``log2`` on all the quotients at once, the sums compiled)."""
    heights = np.asarray(problem.heights, dtype=np.int64)
    f, ratio, at, present = table_kernels.entropy_ratios(
        problem.flat_frequencies,
        problem.frequency_at,
        problem.level_values,
        heights,
        problem.flat_maps,
        problem.map_offsets,
    )
    out: NDArray[np.float64] = table_kernels.entropy_by_level(
        f * np.log2(ratio), at, present, heights
    )
    return out


def _entropy_cums(
    problem: SearchProblem,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """:class:`EntropyMetric`'s ``_running`` (per problem): per QI and level the rows of
    its values present in decreasing order, their running sums and those of ``f log2 f``
    (numpy's ``log2`` on all of them at once), in one array each, with each QI's and
    level's start and length."""
    desc, cum, start, length = table_kernels.descending_frequencies(
        problem.flat_frequencies,
        problem.frequency_at,
        problem.level_values,
        np.asarray(problem.heights, dtype=np.int64),
    )
    return cum, table_kernels.running_sums(desc * np.log2(desc), start, length), start, length
