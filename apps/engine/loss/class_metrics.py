"""The metrics read from the classes' sizes: discernibility and the average equivalence
class size (AECS), with bounds lifted from evaluated specializations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from apps.engine.loss.formulas import (
    MetricName,
    average_class_size,
    discernibility_value,
)
from apps.engine.loss.node import Metric, NodeClasses

if TYPE_CHECKING:
    from apps.engine.search.problem import SearchProblem


class DiscernibilityMetric(Metric):
    """Discernibility: see :func:`discernibility_value`.

    Bounds count a cost per row: ``|E|`` for a row released in class ``E``, ``n`` for a
    suppressed row (the value is their sum). Going up the lattice (consistent
    hierarchies) a row's class only grows, and a released class stays released.
    """

    name: MetricName = "discernibility"
    lift_width = 1

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        return np.full(len(levels), self._floor, dtype=np.float64)

    @cached_property
    def _floor(self) -> float:
        """Classes are unions of the distinct tuples: sum |E|^2 >= sum count^2 (one pass
        over the tuples per metric: a search asks for it twice, keys and bounds)."""
        return float(np.square(self.problem.counts.astype(np.float64)).sum())

    def _least_cost(self, k: int) -> int:
        """Least cost of a row in a class of fewer than ``k`` rows: ``min(k, n)``
        (released in a class of ``>= k`` rows, or suppressed at cost ``n``)."""
        return min(max(k, 1), max(self.problem.rows, 1))

    def lift_base(self, k: int) -> NDArray[np.float64]:
        """Bottom node: a row of a tuple of ``c`` rows costs ``>= max(c, min(k, n))``."""
        c = self.problem.counts.astype(np.int64, copy=False)
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
        extra = self._extra.get(k)
        if extra is None:
            extra = self._extra[k] = float(self.problem.rows - self._least_cost(k))
        return float(lifted[0]) + extra * suppressed

    @cached_property
    def _extra(self) -> dict[int, float]:
        """Per ``k``, ``float(n - min(k, n))`` of :meth:`lifted_bound` (read for many of
        the nodes the search takes from its queue)."""
        return {}

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """The bottom node's lifted number bounds every node (:meth:`lift_base`)."""
        base = np.broadcast_to(self.base_lift(k), (len(levels), 1))
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
        base = np.broadcast_to(self.base_lift(k), (len(levels), 2))
        return np.maximum(self.lower_bounds(levels), self.lifted_bounds(base, suppressed, k))

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return self.lifted_bound(self._base(k), suppressed, k)

    def generalization_value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, len(node.sizes))

    def _value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, node.released_classes)
