"""A heuristic search for lattices too large for the exact one, with a bound on how far
from the optimum its answer can be.

With many quasi-identifiers the lattice (the product of the hierarchies' heights + 1)
outgrows what the exact search holds in its memory budget (``lattice.max_nodes``). Then
two greedy walks run on nodes evaluated one at a time (:mod:`points`), in the spirit of ARX's
heuristic ("Lightning") and of the bottom-up / top-down walks of the generalization
literature (Sweeney's Datafly; El Emam et al. 2009 discuss why they are not optimal):

* bottom-up: from the lowest node that is not known to fail, raise one quasi-identifier at a
  time, always the step that suppresses the fewest records (then loses the least), until the
  node meets the target within the suppression limit;
* top-down: from the top node, lower one quasi-identifier at a time, always the step that
  still meets the target and loses the least, until no step does.

The better of the two is returned. **Bound on optimality:** every node that meets the
target lies above the per-variable minimum levels ``m`` (below ``m_j``, variable ``j`` on its
own already leaves more records in classes under ``k`` than may be suppressed, and adding
variables only splits classes). Each metric's static lower bound (``Metric.lower_bounds``,
valid for every node whatever it suppresses) combines one term per quasi-identifier with a
sum or product that grows in each term, so its least value over the box above ``m`` is
reached by minimizing each variable's term on its own: the optimum is at least that. The
result reports the bound and the **ratio** ``found / bound``: the optimum lies between the
bound and the answer, so the answer is at most that many times the optimum (a ratio of 1
proves the answer optimal; with a bound of 0 no ratio bounds it). The ratio is a multiple,
never a percentage above the optimum: a loss of 0.74 over a bound of 0.0075 is "at most
99 times the bound", which says little, and is said so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from apps.engine.criteria import Criterion, allowed_suppression
from apps.engine.loss import prepare_metric
from apps.engine.search.bounds import _rare_rows
from apps.engine.search.evaluate import NodeResult
from apps.engine.search.points import PointEvaluator
from apps.engine.search.problem import SearchProblem, lattice_tops


@dataclass(frozen=True)
class HeuristicResult:
    quasi: tuple[str, ...]
    metric: str
    suppression_limit: float
    solution: NodeResult | None
    minimum_levels: tuple[int, ...] | None  # None: no node can meet the target
    lower_bound: float | None  # the optimum is at least this (None: no solution)
    ratio: float | None  # found / lower_bound; None: no solution, or a bound of 0
    nodes_total: int
    nodes_evaluated: int
    seconds: float
    method: str

    @property
    def levels(self) -> dict[str, int] | None:
        if self.solution is None:
            return None
        return dict(zip(self.quasi, self.solution.levels, strict=True))


def minimum_levels(
    problem: SearchProblem, k: int, allowed: int, tops: list[int]
) -> tuple[int, ...] | None:
    """Per quasi-identifier, the lowest level at which that variable alone leaves at most
    ``allowed`` records in classes under ``k``; None when one never does within its cap."""
    levels = []
    for j, top in enumerate(tops):
        for level in range(top + 1):
            if _rare_rows(problem.frequencies[j][level].astype(np.float64), k) <= allowed:
                levels.append(level)
                break
        else:
            return None
    return tuple(levels)


def bound_ratio(found: float, bound: float) -> float | None:
    """How many times the lower bound the answer's loss is at most: ``found / bound``
    (1.0 when the answer reaches the bound: it is optimal); None when the bound is 0 and
    the answer is not (no multiple of 0 bounds it)."""
    if found <= bound:
        return 1.0
    if bound <= 0:
        return None
    return found / bound


def _better(a: NodeResult, b: NodeResult | None) -> bool:
    return b is None or (a.information_loss, sum(a.levels)) < (b.information_loss, sum(b.levels))


def heuristic_search(
    problem: SearchProblem,
    criterion: Criterion,
    *,
    metric: str = "loss",
    suppression_limit: float = 0.05,
    max_levels: Mapping[str, int] | None = None,
) -> HeuristicResult:
    """The better of a bottom-up and a top-down greedy walk, with a bound (module docstring)."""
    started = time.perf_counter()
    tops = lattice_tops(problem, max_levels)
    total = math.prod(t + 1 for t in tops)
    allowed = allowed_suppression(problem.rows, suppression_limit)
    lowest = minimum_levels(problem, criterion.release_size, allowed, tops)
    points = PointEvaluator(problem, criterion, metric)

    def done(solution: NodeResult | None, bound: float | None) -> HeuristicResult:
        return HeuristicResult(
            quasi=problem.quasi,
            metric=metric,
            suppression_limit=suppression_limit,
            solution=solution,
            minimum_levels=lowest,
            lower_bound=bound,
            ratio=bound_ratio(solution.information_loss, bound)
            if solution is not None and bound is not None
            else None,
            nodes_total=total,
            nodes_evaluated=points.evaluations,
            seconds=time.perf_counter() - started,
            method="heuristic: best of a bottom-up and a top-down greedy walk",
        )

    if lowest is None:
        return done(None, None)

    def at(levels: list[int] | tuple[int, ...]) -> NodeResult:
        return points.result(levels, suppression_limit)

    # Bottom-up: climb from the minimum levels, fewest suppressed records first.
    current = list(lowest)
    node = at(current)
    upward: NodeResult | None = None
    while True:
        if node.passes:
            upward = node
            break
        steps = []
        for j in range(len(tops)):
            if current[j] < tops[j]:
                raised = list(current)
                raised[j] += 1
                steps.append((raised, at(raised)))
        if not steps:
            break
        current, node = min(
            steps, key=lambda s: (s[1].suppressed_rows, s[1].information_loss, sum(s[0]))
        )

    # Top-down: descend from the top while the target is met, least loss first.
    current = list(tops)
    node = at(current)
    downward: NodeResult | None = node if node.passes else None
    while downward is not None:
        steps = []
        for j in range(len(tops)):
            if current[j] > lowest[j]:
                lowered = list(current)
                lowered[j] -= 1
                result = at(lowered)
                if result.passes:
                    steps.append((lowered, result))
        if not steps:
            break
        current, node = min(steps, key=lambda s: (s[1].information_loss, sum(s[0])))
        downward = node

    best = None
    for candidate in (upward, downward):
        if candidate is not None and _better(candidate, best):
            best = candidate
    return done(best, box_lower_bound(problem, metric, lowest, tops))


def box_lower_bound(
    problem: SearchProblem, metric: str, lowest: tuple[int, ...], tops: list[int]
) -> float:
    """The least static lower bound of the metric over the nodes between ``lowest`` and
    ``tops``: each variable's level chosen on its own (module docstring)."""
    prepared = prepare_metric(metric, problem)
    chosen = list(lowest)
    for j in range(len(tops)):
        probe = np.repeat(np.asarray([lowest], dtype=np.int16), tops[j] - lowest[j] + 1, axis=0)
        probe[:, j] = np.arange(lowest[j], tops[j] + 1)
        chosen[j] = lowest[j] + int(np.argmin(prepared.lower_bounds(probe)))
    return float(prepared.lower_bounds(np.asarray([chosen], dtype=np.int16))[0])
