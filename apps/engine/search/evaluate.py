"""Evaluating one lattice node: classes, suppression, verdict, risk and information loss."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import (
    Criterion,
    StrictAverageRisk,
    allowed_suppression,
    average_risk,
)
from apps.engine.lattice import Lattice
from apps.engine.loss import Metric, NodeClasses
from apps.engine.search import kernels
from apps.engine.search.classes import TableCache
from apps.engine.search.problem import SearchProblem
from apps.engine.search.sensitive import SensitiveTable
from apps.engine.sensitive import kernels as sk


@dataclass(frozen=True)
class NodeResult:
    """One evaluated lattice node (risk figures are those of the released rows)."""

    levels: tuple[int, ...]
    passes: bool
    suppressed_rows: int
    equivalence_classes: int  # released classes
    min_class_size: int  # smallest released class (0 when nothing is released)
    max_risk: float  # 1 / min_class_size (0 when nothing is released)
    average_risk: float  # released classes / released rows
    information_loss: float


@dataclass(frozen=True)
class NodeFacts:
    """What does not depend on the suppression limit (memoized across limits)."""

    suppressed_rows: int
    released_classes: int
    min_class_size: int
    released_rows: int
    value: float
    lift: tuple[float, ...]  # what it hands up to its generalizations (Metric.lift)
    #: Rows in classes smaller than the release size: the part of the suppression that
    #: never grows going up the lattice, whatever the sensitive models (= suppressed
    #: rows without them). Bounds and lifts are built on this part only.
    small_rows: int


_NO_MASK = np.zeros(0, dtype=bool)
_NO_CODES = np.zeros((0, 0), dtype=np.uint8)
_NO_SIZES = np.zeros(0, dtype=np.int64)


class Evaluator:
    """Evaluates nodes of one problem under one criterion and metric, memoizing facts."""

    def __init__(
        self,
        problem: SearchProblem,
        lattice: Lattice,
        criterion: Criterion,
        metric: Metric,
        cache: TableCache | None = None,
        sensitive: SensitiveTable | None = None,
        static: NDArray[np.float64] | None = None,
    ) -> None:
        self.problem = problem
        self.lattice = lattice
        self.criterion = criterion
        self.metric = metric
        self.sensitive = sensitive
        self.k = criterion.release_size if sensitive is None else sensitive.release_size(criterion)
        if sensitive is None:
            self.cache = cache or TableCache(problem, k=self.k)
            if self.cache.k != self.k:
                raise ValueError("the table cache summarizes classes under another k")
        else:
            # Cells (class x sensitive values) are cached; classes are judged per node.
            self.cache = cache or TableCache(sensitive.cells, k=1)
            if self.cache.problem is not sensitive.cells:
                raise ValueError("the table cache must hold the sensitive table's cells")
        #: The metric's static bound of the nodes that may be solutions
        #: (``Metric.lower_bounds``; NaN elsewhere), when the search has it: for a metric
        #: whose bound is exact, such a node suppressing nothing is valued by it, the
        #: very number its key was made of.
        self.static = static if metric.exact_bound else None
        self.facts: dict[int, NodeFacts] = {}
        self.evaluations = 0
        #: Nodes suppressing more rows than this get ``value = inf`` (not computed): the
        #: search sets it to its largest suppression allowance, above which no node
        #: can be a solution. None: always computed.
        self.value_limit: int | None = None

    def classes(self, index: int) -> NodeClasses:
        """The node's classes with the suppressed ones marked (copies)."""
        node, _, _ = self._classes(index, full=True)
        codes = np.array(node.columns)  # a copy: the view is valid until the next fetch
        return NodeClasses(node.levels, codes, node.sizes.copy(), node.suppressed, node.counts)

    def _classes(self, index: int, full: bool = False) -> tuple[NodeClasses, int, NodeClasses]:
        """The node's classes (views into the table cache, valid until its next fetch),
        its smallest released class size, and the classes as the bounds see them
        (suppressed: the classes smaller than k); codes and the suppressed mask only
        when ``full`` or the metric reads them."""
        if self.sensitive is not None:
            return self._judged(index, full)
        cache = self.cache
        where, count = cache.fetch(self.lattice.levels[index])
        summary = cache.summary
        counts = (
            int(summary[kernels.SUPPRESSED_ROWS]),
            int(summary[kernels.RELEASED]),
            int(summary[kernels.RELEASED_SQUARES]),
        )
        # Codes, sizes and the suppressed mask only for metrics that read them; the
        # others work from the summary's counts.
        if full or self.metric.reads_codes or self.metric.reads_sizes:
            codes, sizes = cache.view(where, count)
        else:
            codes, sizes = _NO_CODES, _NO_SIZES
        mask = sizes < self.k if full or self.metric.reads_codes else _NO_MASK
        node = NodeClasses(self.lattice.node(index), codes, sizes, mask, counts)
        return node, int(summary[kernels.MIN_RELEASED]), node

    def _judged(self, index: int, full: bool) -> tuple[NodeClasses, int, NodeClasses]:
        """:meth:`_classes` with sensitive models: the node's cells from the cache,
        grouped into classes and judged (``search/sensitive.py``)."""
        table = self.sensitive
        assert table is not None
        levels = self.lattice.levels[index]
        where, count = self.cache.fetch(table.cell_levels(levels))
        cells, cell_sizes = self.cache.view(where, count)
        radix = self.problem.level_values[np.arange(self.problem.dimensions), levels]
        verdict = table.judge(cells, cell_sizes, radix, self.k)
        s = verdict.summary
        d = self.problem.dimensions
        reads = full or self.metric.reads_codes
        codes = cells[:d, verdict.first] if reads else cells[:d, :0]
        node_levels = self.lattice.node(index)
        actual = NodeClasses(
            node_levels,
            codes,
            verdict.sizes,
            verdict.status != sk.RELEASED if reads else _NO_MASK,
            (
                int(s[sk.SUPPRESSED_ROWS]),
                int(s[sk.RELEASED_CLASSES]),
                int(s[sk.RELEASED_SQUARES]),
            ),
        )
        small = NodeClasses(
            node_levels,
            codes,
            verdict.sizes,
            _NO_MASK,
            (int(s[sk.SMALL_ROWS]), int(s[sk.LARGE_CLASSES]), int(s[sk.LARGE_SQUARES])),
        )
        return actual, int(s[sk.MIN_RELEASED]), small

    def facts_of(self, index: int) -> NodeFacts:
        hit = self.facts.get(index)
        if hit is not None:
            return hit
        self.evaluations += 1
        if self.sensitive is None:
            facts = self._plain_facts(index)
            self.facts[index] = facts
            return facts
        node, smallest, small = self._classes(index)
        suppressed = node.suppressed_rows
        facts = NodeFacts(
            suppressed_rows=suppressed,
            released_classes=node.released_classes,
            min_class_size=smallest,
            released_rows=self.problem.rows - suppressed,
            value=(
                math.inf
                if self.value_limit is not None and suppressed > self.value_limit
                else float(self.static[index])
                if self.static is not None
                and suppressed == 0
                and self.static[index] == self.static[index]
                else self.metric.value(node)
            ),
            lift=self.metric.lift(small, self.k),
            small_rows=small.suppressed_rows,
        )
        self.facts[index] = facts
        return facts

    def _plain_facts(self, index: int) -> NodeFacts:
        """:meth:`facts_of` without sensitive models, read from the summary of the
        fetched classes; the classes are handed to the metric (:meth:`_classes`) only
        when it values the node or lifts from it (per evaluated node, most of which
        suppress too many rows to be valued: no per-node objects for those)."""
        cache = self.cache
        where, count = cache.fetch(self.lattice.levels[index])
        summary = cache.summary.tolist()
        suppressed = summary[kernels.SUPPRESSED_ROWS]
        released = summary[kernels.RELEASED]
        metric = self.metric
        node: NodeClasses | None = None
        if self.value_limit is not None and suppressed > self.value_limit:
            value = math.inf
        elif (
            self.static is not None and suppressed == 0 and self.static[index] == self.static[index]
        ):
            value = float(self.static[index])
        else:
            node = self._node(index, where, count, summary)
            value = metric.value(node)
        lift: tuple[float, ...] = ()
        if metric.lift_width:
            node = node if node is not None else self._node(index, where, count, summary)
            lift = metric.lift(node, self.k)
        return NodeFacts(
            suppressed_rows=suppressed,
            released_classes=released,
            min_class_size=summary[kernels.MIN_RELEASED],
            released_rows=self.problem.rows - suppressed,
            value=value,
            lift=lift,
            small_rows=suppressed,
        )

    def _node(self, index: int, where: int, count: int, summary: list[int]) -> NodeClasses:
        """The fetched classes (:meth:`_plain_facts`) as the metric sees them: as
        :meth:`_classes` makes them (views, valid until the next fetch)."""
        metric = self.metric
        if metric.reads_codes or metric.reads_sizes:
            codes, sizes = self.cache.view(where, count)
        else:
            codes, sizes = _NO_CODES, _NO_SIZES
        mask = sizes < self.k if metric.reads_codes else _NO_MASK
        counts = (
            summary[kernels.SUPPRESSED_ROWS],
            summary[kernels.RELEASED],
            summary[kernels.RELEASED_SQUARES],
        )
        return NodeClasses(self.lattice.node(index), codes, sizes, mask, counts)

    def passes(self, facts: NodeFacts, limit: float) -> bool:
        if facts.suppressed_rows > allowed_suppression(self.problem.rows, limit):
            return False
        if isinstance(self.criterion, StrictAverageRisk):
            risk = average_risk(facts.released_classes, facts.released_rows)
            return risk <= self.criterion.threshold
        return True

    def result(self, index: int, limit: float) -> NodeResult:
        f = self.facts_of(index)
        return NodeResult(
            levels=self.lattice.node(index),
            passes=self.passes(f, limit),
            suppressed_rows=f.suppressed_rows,
            equivalence_classes=f.released_classes,
            min_class_size=f.min_class_size,
            max_risk=1.0 / f.min_class_size if f.min_class_size else 0.0,
            average_risk=average_risk(f.released_classes, f.released_rows),
            information_loss=f.value,
        )


def better(value: float, rank: int, best_value: float, best_rank: int) -> bool:
    """Strictly better under the search's order: lower loss, then lower tie rank
    (lowest total level, then lexicographic levels)."""
    return value < best_value or (value == best_value and rank < best_rank)


def exceeds(bound: float, best: float) -> bool:
    """True when a lower bound is certainly above ``best`` (a relative 1e-9 margin
    keeps float rounding from pruning a node that could tie)."""
    return bool(bound > best + 1e-9 * max(1.0, abs(best)))
