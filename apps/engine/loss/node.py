"""What every node metric shares: a node's classes as the search sees them
(:class:`NodeClasses`) and the base :class:`Metric` with its value, lower bounds and the
bounds raised by known suppression or by measured specializations.
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

from apps.engine.loss.formulas import (
    MetricName,
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

    # (``counts`` read first: the search hands them over for every node it values or
    # lifts from, and a cached property's first read costs more than the sums)
    @property
    def suppressed_rows(self) -> int:
        counts = self.counts
        return (counts if counts is not None else self._counts)[0]

    @property
    def released_classes(self) -> int:
        counts = self.counts
        return (counts if counts is not None else self._counts)[1]

    @property
    def released_squares(self) -> int:
        """Sum of the squared sizes of the released classes."""
        counts = self.counts
        return (counts if counts is not None else self._counts)[2]


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
        at = np.flatnonzero(suppressed > 0)
        if 2 * len(at) >= len(suppressed) and len(at):
            # (most nodes suppress rows, as with a limit above 0: their bounds at once,
            # the others' equal to their static bounds bit for bit, without the copies)
            return np.maximum(bounds, self._suppression_bounds_of(levels, suppressed, k))
        keys = bounds.copy()
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

    def search_tables(self) -> dict[str, NDArray[np.float64] | NDArray[np.int64]]:
        """The arrays the compiled search with suppression reads to value and bound this
        metric's nodes (``search/kernels/valuation.py``'s ``Valuation``), by field name; loss,
        entropy and precision have them (``search/compiled_search.py``)."""
        return {}

    def _base(self, k: int) -> list[float]:
        """:meth:`lift_base` as a list, memoized per ``k``."""
        memo: dict[int, list[float]] = self.__dict__.setdefault("_base_memo", {})
        if k not in memo:
            memo[k] = [float(v) for v in self.base_lift(k)]
        return memo[k]

    def base_lift(self, k: int) -> NDArray[np.float64]:
        """:meth:`lift_base`, memoized per ``k`` (read-only): a search reads it for the
        suppression keys of its nodes and for the lifted numbers it starts from, each a
        pass over the distinct tuples."""
        memo: dict[int, NDArray[np.float64]] = self.__dict__.setdefault("_lift_memo", {})
        if k not in memo:
            base = self.lift_base(k)
            base.flags.writeable = False
            memo[k] = base
        return memo[k]
