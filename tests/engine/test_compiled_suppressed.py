"""The compiled search with suppression for loss, entropy and precision
(``search/compiled_search.py``, ``kernels/solve.py``; issue #26).

It must take the same nodes in the same order and choose the same node with the same
value as the Python search (``best_first.py``): checked node for node on random small
problems (random tables, hierarchies, k, limits, each metric), on larger random problems
and on adult, in slices of any size; the nodes' values and bounds themselves on every
node of random problems; and the dispatch (which searches take this path).
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
from apps.engine.lattice import Lattice
from apps.engine.loss import prepare_metric
from apps.engine.progress import SearchCancelled, SearchProgress
from apps.engine.search import SearchProblem, compiled_search, optimal, optimal_search
from apps.engine.search.best_first import BestFirst
from apps.engine.search.evaluate import Evaluator
from apps.engine.search.kernels import search_state
from apps.engine.search.kernels.valuation import ENTROPY, bound, facts
from apps.engine.search.problem import lattice_tops
from tests.engine.test_compiled_suppression import compiled_levels
from tests.engine.test_search_properties import problems, raw_problems
from tests.engine.test_zero_limit import random_problem

#: The metrics of this path.
METRICS = ("entropy", "loss", "precision")
#: Suppression limits: 1 %, 5 %, 20 %, every row.
LIMITS = (0.01, 0.05, 0.2, 1.0)


@contextmanager
def recorded(budget: int) -> Iterator[list[np.ndarray]]:
    """Slices of ``budget`` evaluations (no sizing by time); yields the evaluation order
    of each compiled search made meanwhile (``State.slot``), read when it is over."""
    states: list[search_state.State] = []
    orders: list[np.ndarray] = []
    saved = (compiled_search.FIRST_SLICE, compiled_search._next_slice, compiled_search.solve_slice)
    original = compiled_search.solve_slice

    def recording(state: search_state.State, metric: search_state.Metric, *args: Any) -> bool:
        # (the searches valued from suppressed classes: test_zero_limit.py records the
        # others)
        if metric.kind >= ENTROPY and (not states or states[-1] is not state):
            states.append(state)
        return bool(original(state, metric, *args))

    compiled_search.FIRST_SLICE = budget
    compiled_search._next_slice = lambda last, evaluated, seconds: budget  # type: ignore[assignment]
    compiled_search.solve_slice = recording
    try:
        yield orders
    finally:
        compiled_search.FIRST_SLICE, compiled_search._next_slice, compiled_search.solve_slice = (
            saved
        )
        orders.extend(s.slot.copy() for s in states)


@contextmanager
def python_orders() -> Iterator[list[BestFirst]]:
    """The Python search (the reference), its searches kept to read the nodes they
    evaluated, in order (``Evaluator.facts``, filled as nodes are evaluated)."""
    made: list[BestFirst] = []

    class Kept(BestFirst):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            made.append(self)

    saved = optimal.COMPILED_SUPPRESSED
    optimal.BestFirst = Kept  # type: ignore[misc]
    optimal.COMPILED_SUPPRESSED = False
    try:
        yield made
    finally:
        optimal.BestFirst = BestFirst  # type: ignore[misc]
        optimal.COMPILED_SUPPRESSED = saved


def agree(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float, **kw: Any
) -> Any:
    """The compiled and the Python search with ``limit``: the same nodes evaluated in the
    same order, the same solution (node, value bit for bit, suppressed rows); returns
    the compiled search's result."""
    with recorded(1 << 40) as orders:
        fast = optimal_search(problem, criterion, metric=metric, suppression_limit=limit, **kw)
    with python_orders() as made:
        slow = optimal_search(problem, criterion, metric=metric, suppression_limit=limit, **kw)
    allowed = allowed_suppression(problem.rows, limit)
    compiled = (
        compiled_search.applies(problem, criterion, allowed, metric)
        and compiled_search.values_suppressed_classes(metric, allowed)
        and not kw.get("pareto")
    )
    assert len(orders) == (1 if compiled else 0)
    assert fast.solution == slow.solution
    assert fast.nodes_evaluated == slow.nodes_evaluated
    assert (fast.nodes_total, fast.metric, fast.pareto, fast.optimal) == (
        slow.nodes_total,
        slow.metric,
        slow.pareto,
        slow.optimal,
    )
    if compiled:
        (search,) = made
        python = [search.lattice.node(i) for i in search.evaluator.facts]
        tops = list(lattice_tops(problem, kw.get("max_levels")))
        assert compiled_levels(orders[0], tops) == python
    return fast


def test_dispatch() -> None:
    # compiled: loss, entropy, precision with suppression, no Pareto front; not without
    # suppression (valued from the class summary), nor with a front, nor for the summary metrics
    problem = random_problem(0)
    for metric, limit, pareto, compiled in (
        ("entropy", 0.05, False, True),
        ("loss", 0.05, False, True),
        ("precision", 0.05, False, True),
        ("entropy", 0.0, False, False),
        ("loss", 0.05, True, False),
        ("discernibility", 0.05, False, False),
    ):
        with recorded(1 << 40) as orders:
            optimal_search(
                problem, KAnonymity(5), metric=metric, suppression_limit=limit, pareto=pareto
            )
        assert len(orders) == (1 if compiled else 0), (metric, limit, pareto)


def test_tiny_by_hand() -> None:
    # Tiny data (test_loss.py): (a1,b1) x2, (a2,b1), (a2,b2), (a3,b2) x2. k = 2 with
    # every row allowed: the bottom node (0,0) suppresses (a2,b1) and (a2,b2), 2 rows:
    # precision 2/6 on each QI (levels 0) = 1/3, below (0,1)'s 1/2: the optimum.
    from tests.engine.test_loss import tiny

    result = agree(tiny(), KAnonymity(2), "precision", 1.0)
    assert result.solution is not None
    assert result.solution.levels == (0, 0)
    assert result.solution.suppressed_rows == 2
    assert result.solution.information_loss == pytest.approx(1 / 3, abs=1e-15)
    for metric in METRICS:
        for limit in (1 / 6, 2 / 6, 1.0):
            agree(tiny(), KAnonymity(2), metric, limit)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=st.one_of(problems(), raw_problems()),
    k=st.integers(1, 6),
    metric=st.sampled_from(METRICS),
    limit=st.sampled_from(LIMITS),
    cap=st.booleans(),
)
def test_same_search_as_python(
    problem: SearchProblem, k: int, metric: str, limit: float, cap: bool
) -> None:
    max_levels = {problem.quasi[0]: 1} if cap else None
    agree(problem, KAnonymity(k), metric, limit, max_levels=max_levels)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", METRICS)
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


@pytest.mark.parametrize("metric", METRICS)
def test_same_search_as_python_on_adult(adult: SearchProblem, metric: str) -> None:
    for limit in (0.01, 0.05, 0.2):
        for k in (2, 5, 11, 20):
            agree(adult, KAnonymity(k), metric, limit)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metric", METRICS)
def test_values_and_bounds_of_every_node(seed: int, metric: str) -> None:
    """The compiled value of every node (``valuation.facts``) is ``Metric.value`` bit for bit,
    and its suppression bound (``valuation.bound``, the node known to suppress more rows
    than the search started with) is ``Metric.suppression_bound``'s."""
    problem = random_problem(seed)
    tops = lattice_tops(problem, None)
    lattice = Lattice(tops)
    prepared = prepare_metric(metric, problem)
    k = 5
    python = Evaluator(problem, lattice, KAnonymity(k), prepared)
    static = prepared.lower_bounds(lattice.levels)
    with recorded(1 << 40) as orders:
        optimal_search(problem, KAnonymity(k), metric=metric, suppression_limit=0.05)
    assert len(orders) == 1
    # every node evaluated by the compiled kernels, nothing beyond the limit
    size = lattice.size
    least = np.zeros(size, dtype=np.int64)
    valuation = compiled_search._valuation(prepared.search_tables(), least, len(tops))
    from apps.engine.search.classes import TableCache

    cache = TableCache(problem, None, k)
    strides = np.asarray(lattice.strides, dtype=np.int64)
    tops_ = np.asarray(tops, dtype=np.int64)
    state = search_state.State(
        tops=tops_,
        strides=strides,
        status=np.zeros(size, dtype=np.int8),
        at_least=least.copy(),
        keys=np.zeros(size, dtype=np.float64),
        bounds=static.copy(),
        lifted=np.zeros((0, size), dtype=np.float64),
        no_lift=np.zeros((0, size), dtype=np.float64),
        slot=np.full(size, -1, dtype=np.int64),
        facts=np.empty((size, 3), dtype=np.int64),
        values=np.empty(size, dtype=np.float64),
        counters=np.zeros(2, dtype=np.int64),
        node=np.zeros(len(tops), dtype=np.int16),
        summary=np.zeros(len(cache.summary), dtype=np.int64),
        lift=np.zeros(1, dtype=np.float64),
    )
    spec = search_state.Metric(
        kind=compiled_search._CLASS_KINDS[metric],
        rows=problem.rows,
        k=k,
        least_cost=0,
        allowed=problem.rows,
    )
    tables = cache.compiled_tables
    try:
        for idx in range(size):
            row = facts(state, spec, valuation, idx, *tables)
            known = python.facts_of(idx)
            assert state.facts[row, 0] == known.suppressed_rows
            want = python.metric.value(python.classes(idx))
            assert state.values[row] == want, (idx, lattice.node(idx))
            # the bound of a node known to suppress s rows more than it started with
            for s in (1, 7, problem.rows // 3):
                state.at_least[idx] = s
                state.keys[idx] = -np.inf
                assert bound(state, spec, valuation, idx) == prepared.suppression_bound(
                    lattice.node(idx), s, k
                )
    finally:
        cache.release()


@pytest.mark.parametrize("metric", METRICS)
def test_slices_take_the_same_nodes(metric: str) -> None:
    problem = random_problem(1)
    with recorded(1 << 40) as orders:
        one = optimal_search(problem, KAnonymity(5), metric=metric, suppression_limit=0.05)
    (order,) = orders
    for budget in (1, 2, 7):
        seen: list[SearchProgress] = []
        with recorded(budget) as again:
            result = optimal_search(
                problem,
                KAnonymity(5),
                metric=metric,
                suppression_limit=0.05,
                progress=seen.append,
            )
        assert result.optimal
        assert (result.solution, result.nodes_evaluated) == (one.solution, one.nodes_evaluated)
        assert again[0].tolist() == order.tolist()
        assert seen[-1].nodes_evaluated == result.nodes_evaluated
        counts = [p.nodes_evaluated for p in seen]
        assert counts == sorted(counts)
        assert len(seen) > 2


def test_cancel_between_slices() -> None:
    problem = random_problem(0)
    seen: list[SearchProgress] = []
    with recorded(1), pytest.raises(SearchCancelled):
        optimal_search(
            problem,
            KAnonymity(2),
            metric="entropy",
            suppression_limit=0.05,
            progress=seen.append,
            cancel=lambda: len(seen) >= 2,
        )
    assert len(seen) == 2
