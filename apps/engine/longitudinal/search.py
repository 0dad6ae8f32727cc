"""Step 7 on longitudinal data: the optimal node of one lattice over person-level and
event-level hierarchies (LONGITUDINAL.md §3.2).

At each node: generalize, count per person, suppress events then persons within their own
budgets (``evaluate.Workspace.evaluate``); the node passes when every kept person meets
``k`` (``criteria``: k-anonymity, maximum risk, or strict average risk with its cap).
The solution is the passing node of least information loss; ties go to the lowest total
level, then the lexicographically smallest levels (as in ``search.optimal``).

The search is a best-first branch and bound that evaluates nodes in increasing order of
their loss lower bound (``Workspace.lower_bound``: the loss with nothing suppressed) and
stops as soon as the next bound cannot beat the best passing node. No other pruning is
used: suppression makes pass/fail non-monotone along the lattice (a heuristic chooses
what to suppress), and the interval levels of anchored dates do not nest, so strict
counts need not be monotone either. A node's figures are those of its release
(``released.settle``: the event count and a shifted anchor read after event suppression),
which only removes more persons: the loss stays at least the lower bound, and the certain
failures stay certain. Two certain failures are decided without counting:
more persons in person-level classes smaller than k than the person budget allows, and
(in the kernel) more failing persons than both budgets together can fix. The result is
therefore the exhaustive optimum (:func:`exhaustive_search` is the reference the tests
hold it to).

A node whose exact count would exceed the subset budget is skipped; when such a node could
have beaten the solution (its lower bound is below the solution's loss, or there is no
solution), the search stops with the budget's message instead of returning a result it
cannot prove optimal.

Alternatives (``pareto``): the optima under smaller budgets (a grid of fractions of both
limits), kept when no other alternative is at least as good in persons suppressed, events
suppressed and information loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from apps.engine.criteria import (
    DEFAULT_SUPPRESSION_LIMIT,
    Criterion,
    StrictAverageRisk,
    allowed_suppression,
)
from apps.engine.errors import EngineInputError
from apps.engine.lattice import Lattice
from apps.engine.longitudinal.evaluate import (
    DEFAULT_SUBSET_BUDGET,
    CountingBudgetExceeded,
    NodeOutcome,
    Workspace,
)
from apps.engine.longitudinal.formulas import DEFAULT_POWER, Power, parse_power
from apps.engine.longitudinal.problem import LongitudinalProblem
from apps.engine.progress import (
    CancelSignal,
    ProgressListener,
    SearchCancelled,
    SearchProgress,
    is_cancelled,
)

#: Event-suppression limit by default: 5 % of events (LONGITUDINAL.md §3.2 step 4).
DEFAULT_EVENT_SUPPRESSION_LIMIT = 0.05
#: Fractions of (event limit, person limit) whose optima are the alternatives.
PARETO_FRACTIONS = (1.0, 0.5, 0.0)


@dataclass(frozen=True)
class NodeResult:
    """A node's outcome, by QI name."""

    levels: dict[str, int]
    passes: bool
    suppressed_persons: int
    suppressed_events: int
    events_of_suppressed_persons: int
    min_class_size: int
    max_risk: float
    average_risk: float
    information_loss: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": self.levels,
            "passes": self.passes,
            "suppressed_persons": self.suppressed_persons,
            "suppressed_events": self.suppressed_events,
            "events_of_suppressed_persons": self.events_of_suppressed_persons,
            "min_class_size": self.min_class_size,
            "max_risk": self.max_risk,
            "average_risk": self.average_risk,
            "information_loss": self.information_loss,
        }


def _result(space: Workspace, outcome: NodeOutcome) -> NodeResult:
    return NodeResult(
        levels=space.named(outcome.levels),
        passes=outcome.passes,
        suppressed_persons=outcome.suppressed_persons,
        suppressed_events=outcome.suppressed_events,
        events_of_suppressed_persons=outcome.events_of_suppressed_persons,
        min_class_size=outcome.min_class_size,
        max_risk=outcome.max_risk,
        average_risk=outcome.average_risk,
        information_loss=outcome.information_loss,
    )


@dataclass(frozen=True)
class LongitudinalSearchResult:
    """Outcome of a search; ``solution`` is None when no node passes."""

    names: tuple[str, ...]
    criterion: str
    power: Power
    k: int
    suppression_limit: float
    event_suppression_limit: float
    person_budget: int
    event_budget: int
    solution: NodeResult | None
    pareto: tuple[NodeResult, ...]
    nodes_total: int
    nodes_evaluated: int
    nodes_over_budget: int
    optimal: bool  # False when the time budget ran out first
    seconds: float

    @property
    def levels(self) -> dict[str, int] | None:
        return None if self.solution is None else self.solution.levels


@dataclass(frozen=True)
class _Space:
    """The searched part of the lattice: per dimension, levels lo..hi."""

    lattice: Lattice
    low: tuple[int, ...]

    def levels(self, index: int) -> tuple[int, ...]:
        return tuple(
            int(v) + lo for v, lo in zip(self.lattice.levels[index], self.low, strict=True)
        )


def _space(
    problem: LongitudinalProblem,
    min_levels: Mapping[str, int] | None,
    max_levels: Mapping[str, int] | None,
) -> _Space:
    names = problem.names
    for given in (min_levels or {}, max_levels or {}):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise EngineInputError(
                f"levels given for unknown quasi-identifier(s) {', '.join(unknown)}; "
                f"known: {', '.join(names)}"
            )
    low, high = [], []
    for d in problem.dimensions:
        lo = max(d.min_level, int((min_levels or {}).get(d.name, d.min_level)))
        hi = min(d.height, int((max_levels or {}).get(d.name, d.height)))
        if lo > hi or lo > d.height:
            raise EngineInputError(
                f"no level of {d.name!r} lies between its minimum {lo} and maximum {hi}"
            )
        low.append(lo)
        high.append(hi)
    return _Space(Lattice([h - lo for h, lo in zip(high, low, strict=True)]), tuple(low))


def _better(loss: float, rank: int, best_loss: float, best_rank: int) -> bool:
    return loss < best_loss or (loss == best_loss and rank < best_rank)


class _Evaluations:
    """Node outcomes under several budgets, reused where provably identical."""

    def __init__(
        self,
        space: Workspace,
        power: Power,
        k: int,
        average_target: float | None,
        budget: int,
    ) -> None:
        self.space, self.power, self.k = space, power, k
        self.average_target, self.budget = average_target, budget
        self.done: dict[tuple[int, ...], tuple[int, int, NodeOutcome]] = {}
        self.evaluated = 0

    def outcome(self, levels: tuple[int, ...], events: int, persons: int) -> NodeOutcome:
        known = self.done.get(levels)
        if known is not None:
            e0, p0, outcome = known
            if (e0, p0) == (events, persons):
                return outcome
            if events <= e0 and persons <= p0:
                # at full budgets the event phase finished within `events`: identical run
                if (
                    outcome.passes
                    and not outcome.truncated
                    and outcome.suppressed_events <= events
                    and outcome.suppressed_persons <= persons
                ):
                    return outcome
                # certain failures stay certain with smaller budgets
                if outcome.decided_early:
                    return outcome
        self.evaluated += 1
        outcome = self.space.evaluate(
            levels,
            power=self.power,
            k=self.k,
            event_budget=events,
            person_budget=persons,
            average_target=self.average_target,
            budget=self.budget,
        )
        if known is None or (events >= known[0] and persons >= known[1]):
            self.done[levels] = (events, persons, outcome)
        return outcome


def _solve(
    space: Workspace,
    searched: _Space,
    order: np.ndarray[Any, Any],
    bounds: np.ndarray[Any, Any],
    rank: np.ndarray[Any, Any],
    evaluations: _Evaluations,
    events: int,
    persons: int,
    *,
    deadline: float | None,
    progress: ProgressListener | None,
    cancel: CancelSignal | None,
    started: float,
) -> tuple[NodeOutcome | None, int, bool, int]:
    """One branch-and-bound solve: (best, its rank, finished, nodes over budget)."""
    best: NodeOutcome | None = None
    best_loss, best_rank = math.inf, searched.lattice.size
    skipped: list[tuple[float, int, CountingBudgetExceeded]] = []
    finished = True
    for n, index in enumerate(order):
        bound, node_rank = float(bounds[index]), int(rank[index])
        if not _better(bound, node_rank, best_loss, best_rank):
            break  # every remaining node is bounded at least as high
        if is_cancelled(cancel):
            raise SearchCancelled("the search was cancelled")
        if deadline is not None and time.perf_counter() > deadline:
            finished = False
            break
        levels = searched.levels(int(index))
        try:
            outcome = evaluations.outcome(levels, events, persons)
        except CountingBudgetExceeded as exc:
            skipped.append((bound, node_rank, exc))
            continue
        if outcome.passes and _better(outcome.information_loss, node_rank, best_loss, best_rank):
            best, best_loss, best_rank = outcome, outcome.information_loss, node_rank
        if progress is not None:
            progress(
                SearchProgress(
                    nodes_evaluated=n + 1,
                    nodes_total=searched.lattice.size,
                    best_levels=None if best is None else best.levels,
                    best_loss=None if best is None else best_loss,
                    seconds=time.perf_counter() - started,
                )
            )
    for bound, node_rank, error in skipped:
        if _better(bound, node_rank, best_loss, best_rank):
            # this node could beat the solution: the optimum cannot be proven
            raise error
    return best, best_rank, finished, len(skipped)


def optimal_search(
    problem: LongitudinalProblem,
    criterion: Criterion,
    *,
    power: Power = DEFAULT_POWER,
    suppression_limit: float = DEFAULT_SUPPRESSION_LIMIT,
    event_suppression_limit: float = DEFAULT_EVENT_SUPPRESSION_LIMIT,
    min_levels: Mapping[str, int] | None = None,
    max_levels: Mapping[str, int] | None = None,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
    pareto: bool = False,
    time_budget: float | None = None,
    progress: ProgressListener | None = None,
    cancel: CancelSignal | None = None,
    workspace: Workspace | None = None,
) -> LongitudinalSearchResult:
    """The passing node of least information loss (module docstring).

    ``suppression_limit`` caps the removed persons (share of persons),
    ``event_suppression_limit`` the suppressed events (share of events).
    """
    started = time.perf_counter()
    chosen = parse_power(power)
    space = workspace or Workspace(problem)
    searched = _space(problem, min_levels, max_levels)
    person_budget = allowed_suppression(problem.persons, suppression_limit)
    event_budget = allowed_suppression(problem.events, event_suppression_limit)
    average_target = criterion.threshold if isinstance(criterion, StrictAverageRisk) else None
    k = criterion.release_size
    levels = np.asarray(searched.lattice.levels, dtype=np.int64) + np.asarray(
        searched.low, dtype=np.int64
    )
    bounds = space.lower_bounds(levels)
    rank = searched.lattice.tie_order()
    order = np.lexsort((rank, bounds))
    evaluations = _Evaluations(space, chosen, k, average_target, subset_budget)
    deadline = None if time_budget is None else started + time_budget
    best, _, finished, over = _solve(
        space,
        searched,
        order,
        bounds,
        rank,
        evaluations,
        event_budget,
        person_budget,
        deadline=deadline,
        progress=progress,
        cancel=cancel,
        started=started,
    )
    alternatives: list[NodeOutcome] = []
    if pareto and best is not None and finished:
        for e_share in PARETO_FRACTIONS:
            for p_share in PARETO_FRACTIONS:
                if (e_share, p_share) == (1.0, 1.0):
                    continue
                found, _, _, _ = _solve(
                    space,
                    searched,
                    order,
                    bounds,
                    rank,
                    evaluations,
                    math.floor(event_budget * e_share),
                    math.floor(person_budget * p_share),
                    deadline=deadline,
                    progress=None,
                    cancel=cancel,
                    started=started,
                )
                if found is not None:
                    alternatives.append(found)
        alternatives = _non_dominated([best, *alternatives])
    return LongitudinalSearchResult(
        names=problem.names,
        criterion=criterion.describe(),
        power=chosen,
        k=k,
        suppression_limit=suppression_limit,
        event_suppression_limit=event_suppression_limit,
        person_budget=person_budget,
        event_budget=event_budget,
        solution=None if best is None else _result(space, best),
        pareto=tuple(_result(space, o) for o in alternatives),
        nodes_total=searched.lattice.size,
        nodes_evaluated=evaluations.evaluated,
        nodes_over_budget=over,
        optimal=finished,
        seconds=time.perf_counter() - started,
    )


def _non_dominated(outcomes: Sequence[NodeOutcome]) -> list[NodeOutcome]:
    """Distinct outcomes no other one beats or equals in (persons, events, loss)."""
    unique: dict[tuple[Any, ...], NodeOutcome] = {}
    for o in outcomes:
        unique.setdefault((o.levels, o.suppressed_persons, o.suppressed_events), o)
    kept = []
    items = list(unique.values())
    for o in items:
        key = (o.suppressed_persons, o.suppressed_events, o.information_loss)
        dominated = any(
            other is not o
            and (other.suppressed_persons, other.suppressed_events, other.information_loss) != key
            and other.suppressed_persons <= o.suppressed_persons
            and other.suppressed_events <= o.suppressed_events
            and other.information_loss <= o.information_loss
            for other in items
        )
        if not dominated:
            kept.append(o)
    kept.sort(key=lambda o: (o.information_loss, o.suppressed_persons, o.suppressed_events))
    return kept


def exhaustive_search(
    problem: LongitudinalProblem,
    criterion: Criterion,
    *,
    power: Power = DEFAULT_POWER,
    suppression_limit: float = DEFAULT_SUPPRESSION_LIMIT,
    event_suppression_limit: float = DEFAULT_EVENT_SUPPRESSION_LIMIT,
    min_levels: Mapping[str, int] | None = None,
    max_levels: Mapping[str, int] | None = None,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
) -> tuple[NodeResult | None, list[NodeResult]]:
    """Evaluate every node (the reference for tests): (optimum, all nodes in index order)."""
    chosen = parse_power(power)
    space = Workspace(problem)
    searched = _space(problem, min_levels, max_levels)
    person_budget = allowed_suppression(problem.persons, suppression_limit)
    event_budget = allowed_suppression(problem.events, event_suppression_limit)
    average_target = criterion.threshold if isinstance(criterion, StrictAverageRisk) else None
    rank = searched.lattice.tie_order()
    results: list[NodeResult] = []
    best, best_loss, best_rank = None, math.inf, searched.lattice.size
    for index in range(searched.lattice.size):
        outcome = space.evaluate(
            searched.levels(index),
            power=chosen,
            k=criterion.release_size,
            event_budget=event_budget,
            person_budget=person_budget,
            average_target=average_target,
            budget=subset_budget,
        )
        result = _result(space, outcome)
        results.append(result)
        if outcome.passes and _better(
            outcome.information_loss, int(rank[index]), best_loss, best_rank
        ):
            best, best_loss, best_rank = result, outcome.information_loss, int(rank[index])
    return best, results
