"""The compiled search with suppression (``search/compiled_search.py``, ``kernels/solve.py``):
discernibility and AECS under a suppression limit above 0 (issue #26).

It must take the same nodes in the same order and choose the same node as the Python
search (``best_first.py``): checked node for node on random problems, on larger random
problems and on adult, for limits of 1 %, 5 %, 20 % and one that allows every row; in
slices of any size; with a deadline and a cancel signal; and the dispatch itself
(which searches take the compiled path).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import Criterion, KAnonymity, MaxRisk, allowed_suppression
from apps.engine.progress import SearchCancelled, SearchProgress
from apps.engine.search import SearchProblem, compiled_search, optimal, optimal_search
from apps.engine.search.best_first import BestFirst
from apps.engine.search.problem import lattice_tops
from tests.engine.test_search_properties import problems, raw_problems
from tests.engine.test_zero_limit import Reports, _where, python_search, random_problem, slices

#: The metrics valued from the class summary, compiled with suppression.
SUMMARY_METRICS = ("discernibility", "aecs")
#: Suppression limits: 1 %, 5 %, 20 %, every row.
LIMITS = (0.01, 0.05, 0.2, 1.0)


@contextmanager
def python_orders() -> Iterator[list[BestFirst]]:
    """The Python search (the reference), its searches kept to read the nodes they
    evaluated, in order (``Evaluator.facts``, filled as nodes are evaluated)."""
    made: list[BestFirst] = []

    class Kept(BestFirst):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            made.append(self)

    optimal.BestFirst = Kept  # type: ignore[attr-defined]
    try:
        with python_search():
            yield made
    finally:
        optimal.BestFirst = BestFirst  # type: ignore[attr-defined]


def compiled_levels(slot: np.ndarray, tops: list[int]) -> list[tuple[int, ...]]:
    """The nodes a compiled search evaluated, in order, as levels (``State.slot``: a node's
    row is its rank among the nodes evaluated)."""
    evaluated = np.flatnonzero(slot >= 0)
    order = evaluated[np.argsort(slot[evaluated], kind="stable")]
    strides = [int(np.prod(np.asarray(tops[j + 1 :]) + 1)) for j in range(len(tops))]
    levels = (order[:, None] // np.asarray(strides)) % (np.asarray(tops) + 1)
    return [tuple(int(v) for v in row) for row in levels]


def agree(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float, **kw: Any
) -> Any:
    """The compiled and the Python search with ``limit``: the same nodes evaluated in the
    same order, the same solution (node, value, suppressed rows); returns the result."""
    with slices(1 << 40) as orders:
        fast = optimal_search(problem, criterion, metric=metric, suppression_limit=limit, **kw)
    with python_orders() as made:
        slow = optimal_search(problem, criterion, metric=metric, suppression_limit=limit, **kw)
    allowed = allowed_suppression(problem.rows, limit)
    compiled = compiled_search.applies(problem, criterion, allowed, metric)
    assert len(orders) == (1 if compiled else 0)
    assert fast.solution == slow.solution
    assert fast.nodes_evaluated == slow.nodes_evaluated
    assert (fast.nodes_total, fast.metric, fast.pareto) == (
        slow.nodes_total,
        slow.metric,
        slow.pareto,
    )
    assert fast.optimal and slow.optimal
    if compiled:
        (search,) = made
        python = [search.lattice.node(i) for i in search.evaluator.facts]
        tops = list(lattice_tops(problem, kw.get("max_levels")))
        assert compiled_levels(orders[0], tops) == python
    if fast.solution is not None:
        assert fast.solution.suppressed_rows <= allowed
    return fast


# Tiny data (test_loss.py): (a1,b1) x2, (a2,b1), (a2,b2), (a3,b2) x2; a: a1,a2 -> a12 -> *,
# a3 -> a3 -> *; b: b1,b2 -> *. k = 2 with one row allowed (limit 1/6): (0,0) releases
# (a1,b1) x2 and (a3,b2) x2 and suppresses two rows: fails; (1,0) releases (a12,b1) x3,
# (a3,b2) x2 and suppresses (a12,b2): 3^2 + 2^2 + 1 x 6 = 19 against (0,1)'s 12 (three
# classes of 2, nothing suppressed): (0,1) is the optimum; AECS 6 / 3 = 2 there too.
def test_tiny_with_one_row_allowed_by_hand() -> None:
    from tests.engine.test_loss import tiny

    for metric, value in (("discernibility", 12.0), ("aecs", 2.0)):
        result = agree(tiny(), KAnonymity(2), metric, 1 / 6)
        assert result.solution is not None
        assert result.solution.levels == (0, 1)
        assert result.solution.information_loss == value
        assert result.solution.suppressed_rows == 0
    # every row may go: the bottom node suppresses 2 rows, 2^2 + 2^2 + 2 x 6 = 20 > 12
    result = agree(tiny(), KAnonymity(2), "discernibility", 1.0)
    assert result.solution is not None and result.solution.levels == (0, 1)


def test_discernibility_with_suppression_is_compiled() -> None:
    # (the dispatch: the compiled path for discernibility and AECS with suppression, the
    # Python search for a Pareto front with suppression and for the other metrics)
    problem = random_problem(0)
    for metric, pareto, compiled in (
        ("discernibility", False, True),
        ("aecs", False, True),
        ("discernibility", True, False),
        ("loss", False, False),
    ):
        with slices(1 << 40) as orders:
            optimal_search(
                problem, KAnonymity(5), metric=metric, suppression_limit=0.05, pareto=pareto
            )
        assert len(orders) == (1 if compiled else 0), (metric, pareto)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=st.one_of(problems(), raw_problems()),
    k=st.integers(1, 6),
    metric=st.sampled_from(SUMMARY_METRICS),
    limit=st.sampled_from(LIMITS),
    cap=st.booleans(),
)
def test_same_search_as_python(
    problem: SearchProblem, k: int, metric: str, limit: float, cap: bool
) -> None:
    max_levels = {problem.quasi[0]: 1} if cap else None
    agree(problem, KAnonymity(k), metric, limit, max_levels=max_levels)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", SUMMARY_METRICS)
def test_same_search_as_python_on_larger_problems(seed: int, metric: str) -> None:
    problem = random_problem(seed)
    for limit in LIMITS:
        for k in (2, 5, 11):
            agree(problem, KAnonymity(k), metric, limit)
        agree(problem, MaxRisk(0.2), metric, limit)
    # a small table cache: tables are evicted and rolled up again
    agree(problem, KAnonymity(3), metric, 0.05, cache_bytes=1 << 16)


@pytest.fixture(scope="module")
def adult() -> SearchProblem:
    from tests.engine.test_adult_search import load_adult

    return load_adult()


@pytest.mark.parametrize("metric", SUMMARY_METRICS)
def test_same_search_as_python_on_adult(adult: SearchProblem, metric: str) -> None:
    for limit in LIMITS:
        for k in (2, 5, 11, 20):
            agree(adult, KAnonymity(k), metric, limit)


def sliced(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float, budget: int
) -> tuple[Any, np.ndarray, list[SearchProgress]]:
    """The compiled search in slices of ``budget`` evaluations: result, evaluation order
    (``State.slot``), progress reports."""
    seen: list[SearchProgress] = []
    with slices(budget) as orders:
        result = optimal_search(
            problem, criterion, metric=metric, suppression_limit=limit, progress=seen.append
        )
    assert len(orders) == 1
    return result, orders[0], seen


@pytest.mark.parametrize("metric", SUMMARY_METRICS)
@pytest.mark.parametrize("limit", [0.01, 0.05, 1.0])
def test_slices_take_the_same_nodes(metric: str, limit: float) -> None:
    problem = random_problem(1)
    one, order, _ = sliced(problem, KAnonymity(5), metric, limit, 1 << 40)
    for budget in (1, 2, 7):
        result, evaluated, seen = sliced(problem, KAnonymity(5), metric, limit, budget)
        assert result.optimal
        assert (result.solution, result.nodes_evaluated) == (one.solution, one.nodes_evaluated)
        assert evaluated.tolist() == order.tolist()
        assert seen[-1].nodes_evaluated == result.nodes_evaluated
        counts = [p.nodes_evaluated for p in seen]
        assert counts == sorted(counts)
        losses = [p.best_loss for p in seen if p.best_loss is not None]
        assert losses == sorted(losses, reverse=True)


def test_cancel_between_slices() -> None:
    problem = random_problem(0)
    full, _, _ = sliced(problem, KAnonymity(2), "discernibility", 0.05, 1)
    assert full.nodes_evaluated > 3
    seen: list[SearchProgress] = []
    with slices(1), pytest.raises(SearchCancelled):
        optimal_search(
            problem,
            KAnonymity(2),
            metric="discernibility",
            suppression_limit=0.05,
            progress=seen.append,
            cancel=lambda: len(seen) >= 2,
        )
    assert len(seen) == 2  # cancelled before the third slice
    assert seen[-1].nodes_evaluated < full.nodes_evaluated


@pytest.mark.parametrize("metric", SUMMARY_METRICS)
@pytest.mark.parametrize("after", [1, 2, 5, 9])
def test_deadline_returns_the_best_so_far(metric: str, after: int) -> None:
    problem, criterion = random_problem(0), KAnonymity(2)
    allowed = allowed_suppression(problem.rows, 0.05)
    full, _, reports = sliced(problem, criterion, metric, 0.05, 1)
    clock = Reports()
    saved = compiled_search._now
    compiled_search._now = clock
    try:
        with slices(1):
            found = compiled_search.find_optimum(
                problem,
                criterion,
                metric,
                lattice_tops(problem, None),
                allowed=allowed,
                progress=clock.seen.append,
                deadline=after - 0.5,
            )
    finally:
        compiled_search._now = saved
    if after >= len(reports):
        assert found.optimal
        assert (found.solution, found.evaluated) == (full.solution, full.nodes_evaluated)
        return
    then = reports[after - 1]
    assert not found.optimal
    assert [_where(p) for p in clock.seen[:-1]] == [_where(p) for p in reports[:after]]
    # (with suppression every chosen node was evaluated: nothing to settle at the end)
    assert found.evaluated == then.nodes_evaluated
    if then.best_levels is None:
        assert found.solution is None
    else:
        assert found.solution is not None and found.solution.levels == then.best_levels
        assert found.solution.information_loss == then.best_loss
        assert found.solution.suppressed_rows <= allowed
        assert full.solution is not None
        assert found.solution.information_loss >= full.solution.information_loss
