"""Globally optimal search of the generalization lattice (METHOD.md Step 7.2-7.3).

Goal (El Emam et al. 2009, OLA; ARX's Flash): among the nodes that meet the criterion
with at most the allowed suppressed rows, the one of least information loss; ties go to
the lowest total level, then the lexicographically smallest levels.

With record suppression most metrics are not monotone along the lattice, so the optimum
may lie above the minimal passing nodes (ARX handles this by checking many more nodes
for non-monotonic metrics). This search is a best-first branch-and-bound instead:

1. Every node gets a cheap **lower bound** of its metric: its value with nothing
   suppressed (``loss.py``, from per-QI marginals), raised by the cost of the rows the
   node certainly suppresses (rows in QI *pairs* rarer than k, ``bounds.py``).
2. Nodes come out in increasing bound order. When the next bound exceeds the best
   passing value found, every remaining node is bounded at least as high: the best is
   optimal and the search stops. Ties: lowest total level, then lexicographic levels.
3. **Predictive tagging** on the monotone part of every criterion (suppressed rows
   within the limit, ``criteria.py``): a node with too many suppressed rows tags all its
   specializations, one within the limit all its generalizations. A node of unknown
   status is settled by a binary search on a chain of generalizations above it (Flash,
   OLA), climbing to a maximal failing node when nothing may be suppressed.
4. Evaluated nodes raise bounds as the search goes: their suppressed rows bound their
   specializations' suppression (hence metric: e.g. the least suppression entropy of
   that many rows), and, for discernibility and AECS, numbers measured on their
   classes (``Metric.lift``) bound their generalizations' metric, combined with the
   rows those certainly suppress (``Metric.lifted_bound``); a heap re-queues raised
   nodes.
5. With a zero suppression limit a node known to pass has nothing suppressed, so its
   value is its bound and it needs no evaluation (loss, entropy, precision).

The search itself (set-up and loop) is ``best_first.py``; this module runs it, or its
compiled form, and collects the solution and the Pareto front.

What depends on the problem alone (the lattice, the metric's static bounds, the pair
profiles of the suppression bounds, the bottom node's classes, the table cache's memory)
is computed once per problem and reused by its later searches (``SearchProblem.memo``).
Nodes that suppress more rows than allowed get no key (they are never taken).

Without suppression, or with it without a Pareto front (monotone criterion, consistent
hierarchies, no sensitive models) the same search runs compiled (``compiled_search.py``,
``kernels/solve.py``), in slices of a few milliseconds between which it reports progress
and checks the cancel signal and the time budget: the same nodes in the same order, the
same solution, without Python per node.

Classes of a node are rolled up from the cached node below it with the fewest classes
(``classes.py``, one compiled call per node), never recomputed from raw rows. Values of nodes suppressing more rows
than allowed are not computed (no solve of the search can use them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apps.engine.criteria import (
    DEFAULT_SUPPRESSION_LIMIT,
    Criterion,
    allowed_suppression,
)
from apps.engine.loss import MetricName
from apps.engine.progress import CancelSignal, ProgressListener
from apps.engine.search import compiled_search
from apps.engine.search.best_first import BestFirst
from apps.engine.search.evaluate import NodeResult
from apps.engine.search.problem import SearchProblem, lattice_tops
from apps.engine.search.sensitive import SensitiveTable

#: Whether searches take the compiled path when it applies (``compiled_search.py``) and
#: values nodes from their class summary (every metric without suppression, and
#: discernibility and AECS with it); the tests turn it off to compare it with this
#: module's search node for node.
COMPILED_ZERO_LIMIT = True
#: Whether loss, entropy and precision searches with suppression take the compiled path
#: when it applies (``compiled_search.py``); the tests turn it off to compare.
COMPILED_SUPPRESSED = True


@dataclass(frozen=True)
class SearchResult:
    """Outcome of a search. ``solution`` is None when no node meets the criterion."""

    quasi: tuple[str, ...]
    criterion: str
    metric: MetricName
    suppression_limit: float
    solution: NodeResult | None
    nodes_total: int
    nodes_evaluated: int
    optimal: bool  # False when the time budget ran out first
    seconds: float
    pareto: tuple[NodeResult, ...]  # loss vs suppressed rows, fewest suppressed last

    @property
    def levels(self) -> dict[str, int] | None:
        if self.solution is None:
            return None
        return dict(zip(self.quasi, self.solution.levels, strict=True))


def optimal_search(
    problem: SearchProblem,
    criterion: Criterion,
    *,
    metric: MetricName | str = "loss",
    suppression_limit: float = DEFAULT_SUPPRESSION_LIMIT,
    max_levels: Mapping[str, int] | None = None,
    time_budget: float | None = None,
    progress: ProgressListener | None = None,
    cancel: CancelSignal | None = None,
    pareto: bool | Sequence[float] = False,
    pareto_points: int = 25,
    cache_bytes: int | None = None,
    sensitive: SensitiveTable | None = None,
) -> SearchResult:
    """Find the globally optimal node (module docstring) and, optionally, the Pareto set.

    ``sensitive``: privacy models on sensitive columns (l-diversity, t-closeness) that
    every released class must meet besides ``criterion``; classes failing any of them
    are suppressed too (``search/sensitive.py``).

    ``time_budget`` (seconds): when it runs out the best node found so far is returned
    with ``optimal=False``. ``cancel`` (an Event or a callable) is checked between nodes
    and raises :class:`SearchCancelled`. ``progress`` is called after each evaluated node
    (on the compiled search: after each slice, ``compiled_search.py``).

    Alternatives (``pareto``), each the optimum under a smaller suppression budget, so
    each is on the Pareto front of information loss vs suppressed rows (METHOD.md 7.3):

    * ``True``: the exact front: the optimum under the limit, then the optimum allowing
      strictly fewer suppressed rows than that, and so on down to none suppressed or no
      solution (at most ``pareto_points`` points);
    * a sequence of fractions of the limit, e.g. ``(0.5, 0.25, 0)``: the optimum under
      each of those budgets (a readable subset of the front).

    Dominated or repeated points are dropped; the solution itself comes first.

    ``cache_bytes`` bounds the memory of cached class tables (default:
    :func:`~apps.engine.search.classes.default_cache_bytes`).
    """
    started = time.perf_counter()
    deadline = started + time_budget if time_budget is not None else None
    allowed = allowed_suppression(problem.rows, suppression_limit)
    tops = lattice_tops(problem, max_levels)
    compiled = (
        sensitive is None
        and compiled_search.applies(problem, criterion, allowed, str(metric))
        and (allowed == 0 or not _wants_front(pareto))
        and (
            COMPILED_SUPPRESSED
            if compiled_search.values_suppressed_classes(str(metric), allowed)
            else COMPILED_ZERO_LIMIT
        )
    )
    if compiled:
        # (the search compiled, in slices between which it reports and checks; with
        # nothing suppressed the Pareto front is the solution)
        found = compiled_search.find_optimum(
            problem, criterion, str(metric), tops, cache_bytes, allowed=allowed,
            progress=progress, cancel=cancel, deadline=deadline,
        )  # fmt: skip
        solution, alternatives = found.solution, _wants_front(pareto) and found.optimal
        return SearchResult(
            quasi=problem.quasi,
            criterion=describe(criterion, sensitive),
            metric=found.metric.name,
            suppression_limit=suppression_limit,
            solution=solution,
            nodes_total=found.size,
            nodes_evaluated=found.evaluated,
            optimal=found.optimal,
            seconds=time.perf_counter() - started,
            pareto=(solution,) if alternatives and solution is not None else (),
        )
    search = BestFirst(
        problem,
        criterion,
        metric,
        tops,
        progress,
        cancel,
        cache_bytes,
        sensitive,
        most_allowed=allowed,  # (later solves, for the Pareto front, allow fewer)
    )
    # Later solves (Pareto) allow fewer suppressed rows: values above never matter.
    search.evaluator.value_limit = allowed
    try:
        best, _, optimal = search.solve(allowed, deadline)
        solution = search.evaluator.result(best, suppression_limit) if best >= 0 else None
        seconds = time.perf_counter() - started
        front: list[NodeResult] = []
        if pareto is True and solution is not None and optimal:
            front = _pareto(search, solution, pareto_points, deadline)
        elif pareto and not isinstance(pareto, bool) and solution is not None and optimal:
            front = _budgets(search, solution, allowed, pareto, deadline)
        search._report(best)
    finally:
        search.evaluator.cache.release()
    return SearchResult(
        quasi=problem.quasi,
        criterion=describe(criterion, sensitive),
        metric=search.metric.name,
        suppression_limit=suppression_limit,
        solution=solution,
        nodes_total=search.lattice.size,
        nodes_evaluated=search.evaluator.evaluations,
        optimal=optimal,
        seconds=seconds,
        pareto=tuple(front),
    )


def _wants_front(pareto: bool | Sequence[float]) -> bool:
    """Whether ``optimal_search`` computes alternatives (``pareto``)."""
    return pareto is True or (not isinstance(pareto, bool) and len(pareto) > 0)


def describe(criterion: Criterion, sensitive: SensitiveTable | None) -> str:
    """The criterion with its sensitive models, in the method's words."""
    if sensitive is None:
        return criterion.describe()
    return f"{criterion.describe()}; {sensitive.describe()}"


def _pareto(
    search: BestFirst, first: NodeResult, points: int, deadline: float | None
) -> list[NodeResult]:
    rows = search.problem.rows
    front = [first]
    while len(front) < points and front[-1].suppressed_rows > 0:
        best, _, optimal = search.solve(front[-1].suppressed_rows - 1, deadline)
        if best < 0 or not optimal:
            break
        limit = front[-1].suppressed_rows / rows
        front.append(search.evaluator.result(best, limit))
    # A point with the same loss as a later one but more suppression is dominated.
    return [
        p
        for i, p in enumerate(front)
        if not any(q.information_loss <= p.information_loss for q in front[i + 1 :])
    ]


def _budgets(
    search: BestFirst,
    first: NodeResult,
    allowed: int,
    fractions: Sequence[float],
    deadline: float | None,
) -> list[NodeResult]:
    rows = search.problem.rows
    points = [first]
    for fraction in sorted(set(fractions), reverse=True):
        budget = min(int(allowed * fraction), points[-1].suppressed_rows - 1)
        if budget < 0 or (points and budget >= points[-1].suppressed_rows):
            continue
        best, _, optimal = search.solve(budget, deadline)
        if best < 0 or not optimal:
            break
        points.append(search.evaluator.result(best, budget / rows if rows else 0.0))
    return [
        p
        for i, p in enumerate(points)
        if not any(q.information_loss <= p.information_loss for q in points[i + 1 :])
    ]
