"""Evaluating nodes one by one, without building the lattice they belong to.

The exact search holds the whole lattice in memory (``lattice.max_nodes``); a feasibility
check looks at a handful of nodes and a heuristic walk at a few hundred, in lattices of any
size. :class:`NodeSet` numbers nodes as they are met and stands in for the
:class:`~apps.engine.lattice.Lattice` where the :class:`Evaluator` only needs a node's
levels, so every figure comes from the same code path as the exact search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import Criterion
from apps.engine.loss import prepare_metric
from apps.engine.search.classes import TableCache
from apps.engine.search.evaluate import Evaluator, NodeResult
from apps.engine.search.problem import SearchProblem
from apps.engine.search.sensitive import SensitiveTable


class NodeSet:
    """Nodes numbered in the order they are met (``levels[i]``, ``node(i)``)."""

    def __init__(self) -> None:
        self.levels: list[NDArray[np.int16]] = []
        self._index: dict[tuple[int, ...], int] = {}

    @property
    def size(self) -> int:
        return len(self.levels)

    def index(self, levels: Sequence[int]) -> int:
        key = tuple(int(v) for v in levels)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.levels)
            self.levels.append(np.asarray(key, dtype=np.int16))
        return found

    def node(self, index: int) -> tuple[int, ...]:
        return tuple(int(v) for v in self.levels[index])


class PointEvaluator:
    """Evaluates any node given by its levels (memoized), under one criterion and metric,
    and the privacy models on sensitive columns (``sensitive``) as the exact search does."""

    def __init__(
        self,
        problem: SearchProblem,
        criterion: Criterion,
        metric: str = "loss",
        cache_bytes: int | None = None,
        sensitive: SensitiveTable | None = None,
    ) -> None:
        self.problem = problem
        self.criterion = criterion
        self.nodes = NodeSet()
        self.evaluator = Evaluator(
            problem,
            self.nodes,  # type: ignore[arg-type]  # duck-types the Lattice (levels, node)
            criterion,
            prepare_metric(metric, problem),
            TableCache(problem, cache_bytes, criterion.release_size)
            if sensitive is None
            else TableCache(sensitive.cells, cache_bytes, 1),
            sensitive,
        )

    @property
    def evaluations(self) -> int:
        return self.evaluator.evaluations

    def result(self, levels: Sequence[int], suppression_limit: float) -> NodeResult:
        return self.evaluator.result(self.nodes.index(levels), suppression_limit)
