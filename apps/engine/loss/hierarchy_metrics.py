"""The metrics read from the hierarchies: loss (Iyengar 2002) and precision (Sweeney 2002),
with the per-level tables they precompute; generalization entropy is in
:mod:`.entropy_metric`.
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
    geometric_mean_loss,
    loss_of_dimension,
    precision_value,
)
from apps.engine.loss.node import Metric, NodeClasses

if TYPE_CHECKING:
    from apps.engine.search.problem import SearchProblem


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
        """The geometric mean of ``1 + Loss_j`` less 1 (the product compiled,
        :func:`table_kernels.loss_static_products`; the root numpy's)."""
        d = self.problem.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        _, by_level, _ = _loss_arrays(self.problem)
        prod = table_kernels.loss_static_products(
            np.ascontiguousarray(levels, dtype=np.int16), by_level
        )
        out: NDArray[np.float64] = prod ** (1.0 / d) - 1.0
        return out

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Each suppressed row adds at least ``|H_j| - (most leaves of a value at l_j)``
        to ``S_j |H_j|`` (its share becomes 1). The product compiled
        (:func:`table_kernels.loss_products`), the root numpy's."""
        d = self.problem.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        weighted, penalty, rows, domain = self._bound_arrays
        prod = table_kernels.loss_products(
            np.ascontiguousarray(levels, dtype=np.int16),
            np.ascontiguousarray(suppressed, dtype=np.int64),
            weighted,
            penalty,
            rows,
            domain,
        )
        out: NDArray[np.float64] = prod ** (1.0 / d) - 1.0
        return out

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return float(
            kernels.loss_suppression_bound(
                np.asarray(levels, dtype=np.int16), suppressed, *self._bound_arrays
            )
        )

    def search_tables(self) -> dict[str, NDArray[np.float64] | NDArray[np.int64]]:
        """What the compiled search reads to value and bound nodes (``kernels/valuation.py``'s
        ``Valuation``): the arrays of :meth:`suppression_bound` and every value's leaves."""
        weighted, penalty, _, domain = self._bound_arrays
        leaves, offsets = self._leaves
        return {
            "weighted": weighted,
            "penalty": penalty,
            "domain": domain,
            "leaves": leaves,
            "offsets": offsets,
        }

    @cached_property
    def _bound_arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64], int, NDArray[np.int64]]:
        """``weighted``, ``penalty`` as ``[d x (H+1)]`` arrays, rows, domain sizes."""
        p = self.problem
        weighted, _, penalty = _loss_arrays(p)
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


def _loss_arrays(
    problem: SearchProblem,
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """:class:`LossMetric`'s ``weighted`` (per QI and level: the leaves covered by all rows,
    ``S_j |H_j|``), ``by_level`` (its Loss) and ``penalty`` (the least increase of
    ``S_j |H_j|`` per suppressed row: ``|H_j|`` less the most leaves a value present at
    that level covers), ``[d x (H+1)]`` each, per problem, in one compiled pass
    (:func:`kernels.loss_tables`)."""
    return problem.memoized(("metric", "loss", "arrays"), lambda: _loss_arrays_of(problem))


def _loss_arrays_of(
    problem: SearchProblem,
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    leaves, offsets = problem.memoized(("leaves", "flat"), lambda: _flat_leaves(problem))
    parts = [f for per_qi in problem.frequencies for f in per_qi]
    frequencies = (
        np.concatenate(parts).astype(np.int64, copy=False) if parts else np.zeros(0, np.int64)
    )
    heights = np.asarray(problem.heights, dtype=np.int64)
    weighted, by_level, penalty = kernels.loss_tables(
        frequencies,
        leaves,
        offsets,
        heights,
        problem.rows,
        np.array([lk.domain_size for lk in problem.lookups], dtype=np.int64),
    )
    return weighted, by_level, penalty


def _loss_tables(
    problem: SearchProblem,
) -> tuple[tuple[tuple[int, ...], ...], tuple[NDArray[np.float64], ...], tuple[list[int], ...]]:
    """:func:`_loss_arrays` per QI up to its height (``LossMetric``'s ``weighted``,
    ``by_level``, ``penalty``)."""
    weighted, by_level, penalty = _loss_arrays(problem)
    return (
        tuple(tuple(weighted[j, : h + 1].tolist()) for j, h in enumerate(problem.heights)),
        tuple(by_level[j, : h + 1].copy() for j, h in enumerate(problem.heights)),
        tuple(penalty[j, : h + 1].tolist() for j, h in enumerate(problem.heights)),
    )


#: No suppressed rows given: :meth:`PrecisionMetric.lower_bounds`.
_NO_ROWS = np.zeros(0, dtype=np.int64)


class PrecisionMetric(Metric):
    """Precision (Sweeney 2002): see :func:`precision_value`."""

    name: MetricName = "precision"
    exact_bound = True
    static_at_zero = True  # (no suppressed row: the same shares, added in the same order)

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        """The mean over QIs of ``l_j / h_j`` (compiled, :func:`table_kernels.precision_bounds`)."""
        return self._bounds(levels, _NO_ROWS)

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """``mean_j [s_j + (S/n)(1 - s_j)]`` is increasing in ``S``."""
        return self._bounds(levels, np.ascontiguousarray(suppressed, dtype=np.int64))

    def _bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        d, n = self.problem.dimensions, self.problem.rows
        if d == 0 or n == 0:
            return np.zeros(len(levels), dtype=np.float64)
        out: NDArray[np.float64] = table_kernels.precision_bounds(
            np.ascontiguousarray(levels, dtype=np.int16),
            suppressed,
            np.asarray(self.problem.heights, dtype=np.int64),
            n,
        )
        return out

    def search_tables(self) -> dict[str, NDArray[np.float64] | NDArray[np.int64]]:
        """What the compiled search reads (``kernels/valuation.py``'s ``Valuation``): the
        hierarchies' heights."""
        return {"heights": np.asarray(self.problem.heights, dtype=np.int64)}

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return precision_value(levels, self.problem.heights, self.problem.rows, suppressed)

    def _value(self, node: NodeClasses) -> float:
        return precision_value(
            node.levels, self.problem.heights, self.problem.rows, node.suppressed_rows
        )
