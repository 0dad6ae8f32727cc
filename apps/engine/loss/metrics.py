"""Metrics evaluated on a lattice node's classes, with the search's lower bounds.

Each ``*Metric`` applies one formula of :mod:`apps.engine.loss.formulas` to a node's
equivalence classes and gives the search a **lower bound** per node: the value it would
take with nothing suppressed. It is a lower bound because a suppressed row costs each
metric at least as much as the same row released (share 1 >= any share; |E| <= n; ...),
and it is monotone along the lattice (classes merge, values cover more leaves), which
the search uses to prune (ARX does the same with ``getLowerBound``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from apps.engine.loss.formulas import (
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
    from apps.engine.search.problem import I64, U32, SearchProblem


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """What a metric sees of a node: its levels, classes and which are suppressed."""

    levels: tuple[int, ...]
    columns: tuple[U32, ...]
    sizes: I64
    suppressed: NDArray[np.bool_]


class Metric(ABC):
    """An information-loss metric prepared for one problem (lower is better)."""

    name: MetricName
    #: True when the no-suppression value must be measured on classes (not from
    #: marginals): the search then propagates it upwards as a bound.
    dynamic_bound: bool = False

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

    #: True when the value with nothing suppressed equals the static bound exactly.
    exact_bound: bool = False

    def value(self, node: NodeClasses) -> float:
        """The metric's value on a node with its suppressed classes.

        With nothing suppressed, metrics whose static bound is exact return the bound
        itself, bit for bit, so that nodes valued either way compare consistently.
        """
        if self.exact_bound and not node.suppressed.any():
            return self.generalization_value(node)
        return self._value(node)

    @abstractmethod
    def _value(self, node: NodeClasses) -> float:
        """The metric's formula on a node with its suppressed classes."""

    def generalization_value(self, node: NodeClasses) -> float:
        """Value with nothing suppressed: a lower bound for this node and, with
        consistent hierarchies, for all its generalizations."""
        return float(self.lower_bounds(np.asarray([node.levels], dtype=np.int16))[0])

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """A lower bound of the value of this node and of every generalization of it
        (classes of size < ``k`` suppressed), with consistent hierarchies."""
        return self.generalization_value(node)


class LossMetric(Metric):
    """Loss (Iyengar 2002), ARX's default: see :func:`loss_of_dimension`."""

    name: MetricName = "loss"
    exact_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        # weighted[j][L] = sum over all rows of leaves covered at level L (= S_j |H_j|)
        self.weighted = tuple(
            tuple(int((f * lv).sum()) for f, lv in zip(fr, lk.leaves, strict=True))
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
        )
        self.by_level = tuple(
            np.array(
                [loss_of_dimension(w, problem.rows, lk.domain_size) for w in ws], dtype=np.float64
            )
            for ws, lk in zip(self.weighted, problem.lookups, strict=True)
        )
        # penalty[j][L]: least increase of S_j |H_j| per suppressed row at level L
        self.penalty = tuple(
            [
                lk.domain_size - (int(lv[f > 0].max()) if (f > 0).any() else lk.domain_size)
                for f, lv in zip(fr, lk.leaves, strict=True)
            ]
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
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
                prod *= 1.0 + np.maximum(0.0, (weighted - p.rows) / denominator)
        return prod ** (1.0 / d) - 1.0

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        p = self.problem
        dims = [
            loss_of_dimension(
                self.weighted[j][lv] + suppressed * self.penalty[j][lv], p.rows, lk.domain_size
            )
            for j, (lk, lv) in enumerate(zip(p.lookups, levels, strict=True))
        ]
        return geometric_mean_loss(dims)

    def _value(self, node: NodeClasses) -> float:
        p = self.problem
        supp_sizes = node.sizes[node.suppressed]
        s = int(supp_sizes.sum())
        dims = []
        for j, (lk, level) in enumerate(zip(p.lookups, node.levels, strict=True)):
            covered = int((supp_sizes * lk.leaves[level][node.columns[j][node.suppressed]]).sum())
            weighted = self.weighted[j][level] - covered + s * lk.domain_size
            dims.append(loss_of_dimension(weighted, p.rows, lk.domain_size))
        return geometric_mean_loss(dims)


class EntropyMetric(Metric):
    """Non-uniform entropy, non-monotonic variant (El Emam et al. 2009), summed over QIs."""

    name: MetricName = "entropy"
    exact_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.by_level = tuple(
            np.array(
                [
                    generalization_entropy(fr[0], fr[level], lk.maps[level])
                    for level in range(lk.height + 1)
                ],
                dtype=np.float64,
            )
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
        )

    def maximum(self) -> float:
        """Entropy at the top node of the hierarchies, nothing suppressed (the 100 %)."""
        return float(sum(e[-1] for e in self.by_level))

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        total = np.zeros(len(levels), dtype=np.float64)
        for j, e in enumerate(self.by_level):
            total += e[levels[:, j]]
        return total

    def _value(self, node: NodeClasses) -> float:
        total = 0.0
        for j, level in enumerate(node.levels):
            total += float(self.by_level[j][level])
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


class PrecisionMetric(Metric):
    """Precision (Sweeney 2002): see :func:`precision_value`."""

    name: MetricName = "precision"
    exact_bound = True

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
        s = int(node.sizes[node.suppressed].sum())
        return precision_value(node.levels, self.problem.heights, self.problem.rows, s)


class DiscernibilityMetric(Metric):
    """Discernibility: see :func:`discernibility_value`."""

    name: MetricName = "discernibility"
    dynamic_bound = True

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        # Classes are unions of the distinct tuples: sum |E|^2 >= sum count^2.
        floor = float(np.square(self.problem.counts.astype(np.float64)).sum())
        return np.full(len(levels), floor, dtype=np.float64)

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Released rows sit in classes of ``>= k`` rows, so ``sum |E|^2 >= k (n - S)``
        and the value is ``>= k n + (n - k) S`` (``n^2`` when ``n < k``)."""
        n = self.problem.rows
        floor = self.lower_bounds(levels)
        if n < k:
            return np.maximum(floor, float(n * n))
        return np.maximum(floor, (k * n + (n - k) * suppressed).astype(np.float64))

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        n = self.problem.rows
        return float(n * n if n < k else k * n + (n - k) * suppressed)

    def generalization_value(self, node: NodeClasses) -> float:
        return float(discernibility_value(node.sizes, 0, self.problem.rows))

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """``sum_{released E} |E|^2 + k |S|``. Going up, released classes only merge
        (squares are superadditive), and a row suppressed here costs at least ``k``
        there: ``n`` if still suppressed, and in a released class E = R + U (R from
        released classes, U of u such rows) ``|E|^2 >= sum R_i^2 + u(u + 2r) >= sum
        R_i^2 + u k`` since ``u + 2r >= |E| >= k``."""
        kept = node.sizes[~node.suppressed]
        s = int(node.sizes[node.suppressed].sum())
        return float(int(np.square(kept).sum()) + min(k, max(self.problem.rows, 1)) * s)

    def _value(self, node: NodeClasses) -> float:
        kept = node.sizes[~node.suppressed]
        s = int(node.sizes[node.suppressed].sum())
        return float(discernibility_value(kept, s, self.problem.rows))


class AverageClassSizeMetric(Metric):
    """Average equivalence class size: see :func:`average_class_size`."""

    name: MetricName = "aecs"
    dynamic_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.present = tuple(
            np.array([int((f > 0).sum()) for f in fr], dtype=np.float64)
            for fr in problem.frequencies
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

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Released classes have ``>= k`` rows: at most ``(n - S)/k`` of them."""
        n = self.problem.rows
        floor = self.lower_bounds(levels)
        if n == 0:
            return floor
        room = (n - suppressed).astype(np.float64)
        with np.errstate(divide="ignore"):
            bound = np.where(room > 0, n * max(k, 1) / np.maximum(room, 1.0), np.inf)
        return np.maximum(floor, bound)

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        n = self.problem.rows
        if n == 0:
            return 0.0
        return n * max(k, 1) / (n - suppressed) if suppressed < n else math.inf

    def generalization_value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, len(node.sizes))

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """Going up, released classes number at most the classes here, and at most the
        released classes here plus ``floor(|S| / k)`` (a new released class made only of
        rows suppressed here needs ``k`` of them)."""
        released = int((~node.suppressed).sum())
        s = int(node.sizes[node.suppressed].sum())
        most = min(len(node.sizes), released + s // max(k, 1))
        return average_class_size(self.problem.rows, most)

    def _value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, int((~node.suppressed).sum()))


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
