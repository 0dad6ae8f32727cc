"""The compiled search without suppression (``search/compiled_search.py``,
``kernels/solve.py``).

It must take the same nodes and choose the same one as ``optimal.py``'s search: checked
node for node (solution, nodes evaluated) on random problems and on adult, against
hand-computed optima on the tiny data of ``test_loss.py``, and its heap, chain and lifted
bounds on hand-made inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import Criterion, KAnonymity, MaxRisk
from apps.engine.loss import METRICS
from apps.engine.progress import SearchCancelled, SearchProgress
from apps.engine.search import (
    SearchProblem,
    bounds,
    build_problem,
    compiled_search,
    optimal,
    optimal_search,
)
from apps.engine.search.exhaustive import exhaustive_search
from apps.engine.search.kernels import frontier, probe, search_state, valuation
from apps.engine.search.kernels.valuation import ENTROPY
from apps.engine.search.problem import QuasiLookup, lattice_tops
from tests.engine.test_loss import tiny
from tests.engine.test_search_properties import problems


@contextmanager
def python_search() -> Iterator[None]:
    """``optimal_search`` without the compiled path (the reference)."""
    saved = optimal.COMPILED_ZERO_LIMIT
    optimal.COMPILED_ZERO_LIMIT = False
    try:
        yield
    finally:
        optimal.COMPILED_ZERO_LIMIT = saved


def both(problem: SearchProblem, criterion: Criterion, metric: str, **kw: Any) -> None:
    """The compiled and the Python search agree node for node."""
    fast = optimal_search(problem, criterion, metric=metric, suppression_limit=0.0, **kw)
    with python_search():
        slow = optimal_search(problem, criterion, metric=metric, suppression_limit=0.0, **kw)
    assert fast.solution == slow.solution
    assert fast.nodes_evaluated == slow.nodes_evaluated
    assert fast.nodes_total == slow.nodes_total
    assert fast.metric == slow.metric
    assert fast.pareto == slow.pareto
    assert fast.optimal and slow.optimal


# Tiny data (test_loss.py): (a1,b1) x2, (a2,b1), (a2,b2), (a3,b2) x2; a: a1,a2 -> a12 -> *,
# a3 -> a3 -> *; b: b1,b2 -> *. Without suppression, k = 2: (0,0) and (1,0) fail, (0,1)
# (three classes of 2) is the lowest passing node; (2,0) (two classes of 3) ties it on
# loss and precision, loses on total level. k = 3: (2,0) alone below the top passes
# ((0,1): classes of 2; (1,1): a3 x2). k = 4: only the top.
SQRT2 = math.sqrt(2.0) - 1.0  # loss of (0,1) and (2,0): shares 0 and 1 -> sqrt(1 x 2) - 1
TINY_OPTIMA = {
    (2, "loss"): ((0, 1), SQRT2),
    (2, "precision"): ((0, 1), 0.5),
    (2, "discernibility"): ((0, 1), 12.0),  # 2^2 x 3
    (2, "aecs"): ((0, 1), 2.0),  # 6 rows / 3 classes
    (3, "loss"): ((2, 0), SQRT2),
    (3, "precision"): ((2, 0), 0.5),
    (3, "discernibility"): ((2, 0), 18.0),  # 3^2 x 2
    (3, "aecs"): ((2, 0), 3.0),
    (4, "loss"): ((2, 1), 1.0),  # shares 1 and 1 -> sqrt(2 x 2) - 1
    (4, "precision"): ((2, 1), 1.0),
    (4, "discernibility"): ((2, 1), 36.0),
    (4, "aecs"): ((2, 1), 6.0),
}


@pytest.mark.parametrize(("k", "metric"), sorted(TINY_OPTIMA))
def test_tiny_optima_by_hand(k: int, metric: str) -> None:
    levels, value = TINY_OPTIMA[(k, metric)]
    result = optimal_search(tiny(), KAnonymity(k), metric=metric, suppression_limit=0.0)
    assert result.solution is not None
    assert result.solution.levels == levels
    assert result.solution.information_loss == pytest.approx(value, abs=1e-12)
    assert result.solution.suppressed_rows == 0
    assert result.nodes_total == 6
    both(tiny(), KAnonymity(k), metric)


def test_tiny_without_solution() -> None:
    # k = 7 > 6 rows: even the top node suppresses everything; one node evaluated.
    result = optimal_search(tiny(), KAnonymity(7), metric="loss", suppression_limit=0.0)
    assert result.solution is None
    assert result.nodes_evaluated == 1
    assert result.pareto == ()
    both(tiny(), KAnonymity(7), "loss")


def test_front_without_suppression_is_the_solution() -> None:
    result = optimal_search(
        tiny(), KAnonymity(2), metric="loss", suppression_limit=0.0, pareto=(0.5, 0.0)
    )
    assert result.pareto == (result.solution,)
    both(tiny(), KAnonymity(2), "discernibility", pareto=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    k=st.integers(1, 6),
    metric=st.sampled_from(METRICS),
    cap=st.booleans(),
)
def test_same_search_as_python(problem: SearchProblem, k: int, metric: str, cap: bool) -> None:
    max_levels = {problem.quasi[0]: 1} if cap else None
    both(problem, KAnonymity(k), metric, max_levels=max_levels)


def _consistent(rng: np.random.Generator, values: int, height: int) -> list[np.ndarray]:
    """Level maps of a random consistent hierarchy: each level merges groups of the one
    below, the top level a single value."""
    maps = [np.arange(values)]
    current = np.arange(values)
    groups = values
    for level in range(1, height + 1):
        if level == height:
            parents = np.zeros(groups, dtype=np.int64)
        else:
            parents = np.sort(rng.integers(0, max(1, groups // 2), groups))
            _, parents = np.unique(parents, return_inverse=True)
        current = parents[current]
        groups = int(current.max()) + 1
        maps.append(current.copy())
    return maps


def random_problem(seed: int) -> SearchProblem:
    """Thousands of rows, five or six QIs of up to 40 values: long enough searches that
    nodes are re-queued, chains climbed and tables evicted."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(5, 7))
    lookups, codes = [], []
    for j in range(d):
        values = int(rng.integers(2, 40))
        height = int(rng.integers(1, 4))
        lookups.append(QuasiLookup.from_maps(f"q{j}", _consistent(rng, values, height)))
        skew = rng.random(values) ** 3 + 0.01
        codes.append(rng.choice(values, 3000, p=skew / skew.sum()))
    counts = rng.integers(1, 4, 3000)
    return build_problem([f"q{j}" for j in range(d)], codes, counts, lookups)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", METRICS)
def test_same_search_as_python_on_larger_problems(seed: int, metric: str) -> None:
    problem = random_problem(seed)
    for k in (2, 5, 11):
        both(problem, KAnonymity(k), metric)
    both(problem, MaxRisk(0.2), metric)
    # a small table cache: tables are evicted and rolled up again
    both(problem, KAnonymity(3), metric, cache_bytes=1 << 16)


def test_heap_pops_in_key_then_rank_order() -> None:
    keys = np.empty(8)
    totals = np.empty(8, dtype=np.int64)
    nodes = np.empty(8, dtype=np.int64)
    size = 0
    # (key, total level, node): ties on key go to the lower total, then the lower node
    entries = [(2.0, 3, 7), (1.0, 5, 4), (2.0, 1, 9), (1.0, 5, 2), (0.5, 9, 1), (2.0, 1, 8)]
    for key, total, node in entries:
        size = frontier.push(keys, totals, nodes, size, key, total, node)
    popped = []
    while size:
        popped.append(int(nodes[0]))
        size = frontier.pop(keys, totals, nodes, size)
    assert popped == [1, 2, 4, 8, 9, 7]


def _state(
    tops: list[int], at_least: list[int], keys: list[float], lifted: list[list[float]] | None = None
) -> search_state.State:
    size = int(np.prod(np.asarray(tops) + 1))
    strides = [int(np.prod(np.asarray(tops[j + 1 :]) + 1)) for j in range(len(tops))]
    return search_state.State(
        tops=np.asarray(tops, dtype=np.int64),
        strides=np.asarray(strides, dtype=np.int64),
        status=np.zeros(size, dtype=np.int8),
        at_least=np.asarray(at_least, dtype=np.int64),
        keys=np.asarray(keys, dtype=np.float64),
        bounds=np.zeros(size),
        lifted=np.array(lifted if lifted is not None else [], dtype=np.float64).reshape(-1, size),
        no_lift=np.zeros((0, size)),
        slot=np.full(size, -1, dtype=np.int64),
        facts=np.zeros((size, 3), dtype=np.int64),
        values=np.zeros(size),
        counters=np.zeros(2, dtype=np.int64),
        node=np.zeros(len(tops), dtype=np.int16),
        summary=np.zeros(5, dtype=np.int64),
        lift=np.zeros(2),
    )


def test_chain_climbs_to_most_suppressed_then_least_key() -> None:
    # Lattice (1, 1): nodes 0 = (0,0), 1 = (0,1), 2 = (1,0), 3 = (1,1).
    state = _state([1, 1], [0, 0, 0, 0], [0.0, 2.0, 1.0, 3.0])
    assert probe.chain(state, 0).tolist() == [0, 2, 3]  # (1,0) has the smaller key
    state.at_least[1] = 5  # (0,1) is known to suppress more: it goes first
    assert probe.chain(state, 0).tolist() == [0, 1, 3]
    state.status[3] = search_state.TOO_MANY  # only unknown nodes: the chain stops below
    assert probe.chain(state, 0).tolist() == [0, 1]


def test_lifted_bounds_by_hand() -> None:
    # Discernibility, 100 rows, k = 5 (least cost 5): lifted + (100 - 5) x suppressed.
    state = _state([1, 1], [0, 0, 0, 0], [0.0] * 4, [[10.0, 20.0, 30.0, 40.0]])
    disc = search_state.Metric(kind=search_state.DISCERNIBILITY, rows=100, k=5, least_cost=5)
    assert search_state._lifted_bound(disc, state.lifted, 1, 0) == 20.0
    assert search_state._lifted_bound(disc, state.lifted, 1, 2) == 20.0 + 95.0 * 2
    # AECS, 100 rows, k = 5; lifted (-classes, -(k released + suppressed)) of node 1:
    # (-30, -67): at most min(30, 67 // 5, 100 // 5) = 13 released classes: 100 / 13;
    # knowing 10 rows suppressed: min(30, 57 // 5, 90 // 5) = 11: 100 / 11.
    lifted = [[-1.0, -30.0, -1.0, -1.0], [-3.0, -67.0, -1.0, -1.0]]
    state = _state([1, 1], [0, 0, 0, 0], [0.0] * 4, lifted)
    aecs = search_state.Metric(kind=search_state.AECS, rows=100, k=5, least_cost=5)
    assert search_state._lifted_bound(aecs, state.lifted, 1, 0) == 100 / 13
    assert search_state._lifted_bound(aecs, state.lifted, 1, 10) == 100 / 11
    # node 0: 3 // 5 = 0 classes can be released: no finite bound
    assert search_state._lifted_bound(aecs, state.lifted, 0, 0) == math.inf
    # the key is the larger of the static key and the lifted bound without suppression
    state.keys[1] = 9.0
    assert search_state._order_key(aecs, state.keys, state.lifted, state.at_least, 1) == 9.0
    state.keys[1] = 1.0
    assert search_state._order_key(aecs, state.keys, state.lifted, state.at_least, 1) == 100 / 13
    # the bound reads the rows known suppressed: 10 of them, 100 / 11; cheap_bound is
    # the same for discernibility and AECS, and defers to bound() (NaN) only for loss,
    # entropy and precision when more rows are known suppressed than the key assumed
    state.at_least[1] = 10
    args = (state.keys, state.lifted, state.at_least)
    assert search_state._current_bound(aecs, *args, 1) == 100 / 11
    assert valuation.cheap_bound(aecs, *args, np.zeros(0, dtype=np.int64), 1, False) == 100 / 11
    assert valuation.cheap_bound(aecs, *args, np.zeros(0, dtype=np.int64), 1, True) == 100 / 13
    loss = search_state.Metric(kind=valuation.LOSS, rows=100, k=5, least_cost=5)
    least = np.array([0, 10, 0, 0], dtype=np.int64)
    assert valuation.cheap_bound(loss, *args, least, 1, True) == 1.0
    least[1] = 9
    assert math.isnan(valuation.cheap_bound(loss, *args, least, 1, False))


@pytest.fixture(scope="module")
def adult() -> SearchProblem:
    from tests.engine.test_adult_search import load_adult

    return load_adult()


@pytest.mark.parametrize("metric", METRICS)
def test_same_search_as_python_on_adult(adult: SearchProblem, metric: str) -> None:
    for k in (2, 5, 11, 20):
        both(adult, KAnonymity(k), metric)


def test_layout_by_hand() -> None:
    # Lattice (1, 1): node 0 = (0,0) is known to suppress 3 rows, the others nothing.
    least = np.array([3, 0, 0, 0], dtype=np.int64)
    tops, strides = np.array([1, 1], dtype=np.int64), np.array([2, 1], dtype=np.int64)
    may, levels, totals, status, bounds, keys, slot = search_state.layout(least, tops, strides, 0)
    assert may.tolist() == [1, 2, 3]
    assert levels.tolist() == [[0, 1], [1, 0], [1, 1]]
    assert totals.tolist() == [1, 1, 2]
    assert status.tolist() == [
        search_state.TOO_MANY,
        search_state.UNKNOWN,
        search_state.UNKNOWN,
        search_state.UNKNOWN,
    ]
    assert np.isnan(bounds).all() and np.isinf(keys).all() and (slot == -1).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), k=st.integers(1, 6), allowed=st.integers(0, 3))
def test_start_is_the_bounds_then_the_layout(problem: SearchProblem, k: int, allowed: int) -> None:
    """search_state.start (one call, issue #26) gives what the bounds
    (lattice_suppression_bounds), layout and the lifted numbers' rows gave, call by call."""
    tops = lattice_tops(problem, None)
    size, strides = compiled_search.lattice_shape(tops)
    tops_, strides_ = np.asarray(tops, dtype=np.int64), np.asarray(strides, dtype=np.int64)
    least = bounds.lattice_suppression_bounds(problem, tops, size, k, allowed)
    expected = search_state.layout(least, tops_, strides_, allowed)
    rare = bounds.rare_profiles(problem, k, allowed)
    for lift in (compiled_search._NO_LIFT, np.array([2.5, -1.0])):
        got = search_state.start(
            tops_, strides_, rare.first_qi, rare.second_qi, rare.base, rare.width, rare.rare,
            allowed, lift,
        )  # fmt: skip
        np.testing.assert_array_equal(got[0], least)
        for a, b in zip(got[1:8], expected, strict=True):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
        np.testing.assert_array_equal(got[8], np.repeat(lift[:, None], size, axis=1))
        assert got[8].shape == (len(lift), size)


# ---------------------------------------------------------------- slices (issue #26)
# The compiled search runs in slices (compiled_search.SLICE_SECONDS) between which it reports,
# checks the cancel signal and the deadline: slices of any size must take the same nodes
# in the same order as one call.


@contextmanager
def slices(budget: int) -> Iterator[list[np.ndarray]]:
    """Every slice of ``budget`` evaluations (no sizing by time); yields the evaluation
    order of each search made meanwhile (``State.slot``: a node's row is its rank among
    the nodes evaluated, -1 for those not evaluated), read when the search is over."""
    states: list[search_state.State] = []
    orders: list[np.ndarray] = []
    saved = (compiled_search.FIRST_SLICE, compiled_search._next_slice, compiled_search.solve_slice)
    original = compiled_search.solve_slice

    def recording(state: search_state.State, metric: search_state.Metric, *args: Any) -> bool:
        # (the searches valued from the class summary: test_compiled_suppressed.py
        # records the others)
        if metric.kind < ENTROPY and (not states or states[-1] is not state):
            states.append(state)
        return original(state, metric, *args)

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


def sliced(
    problem: SearchProblem, criterion: Criterion, metric: str, budget: int, **kw: Any
) -> tuple[Any, np.ndarray, list[SearchProgress]]:
    """The compiled search in slices of ``budget`` evaluations: result, evaluation order,
    progress reports."""
    seen: list[SearchProgress] = []
    with slices(budget) as orders:
        result = optimal_search(
            problem, criterion, metric=metric, suppression_limit=0.0, progress=seen.append, **kw
        )
    assert len(orders) == 1
    return result, orders[0], seen


BUDGETS = (1, 2, 7, 1 << 40)


def same_in_slices(problem: SearchProblem, criterion: Criterion, metric: str) -> None:
    """Slices of every budget: the same nodes evaluated in the same order, the same
    solution, as one call and as the Python search; the reports in order."""
    if not compiled_search.applies(problem, criterion, 0, metric):  # (Python: not sliced)
        return
    one, order, _ = sliced(problem, criterion, metric, 1 << 40)
    with python_search():
        slow = optimal_search(problem, criterion, metric=metric, suppression_limit=0.0)
    assert (one.solution, one.nodes_evaluated) == (slow.solution, slow.nodes_evaluated)
    for budget in BUDGETS:
        result, evaluated, seen = sliced(problem, criterion, metric, budget)
        assert result.optimal
        assert result.solution == one.solution
        assert result.nodes_evaluated == one.nodes_evaluated
        assert evaluated.tolist() == order.tolist()
        # one report per slice not the last, and the last at the end
        assert seen[-1].nodes_evaluated == result.nodes_evaluated
        assert seen[-1].best_levels == (None if one.solution is None else one.solution.levels)
        counts = [p.nodes_evaluated for p in seen]
        assert counts == sorted(counts)
        assert all(p.nodes_total == one.nodes_total for p in seen)
        losses = [p.best_loss for p in seen if p.best_loss is not None]
        assert losses == sorted(losses, reverse=True)  # the best so far only improves
        if budget == 1:  # the first slice stops at the first node after the top
            assert len(seen) >= (2 if result.nodes_evaluated > 1 else 1)
        if budget == 1 << 40:  # one slice: the report at the end only
            assert len(seen) == 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), k=st.integers(1, 6), metric=st.sampled_from(METRICS))
def test_slices_take_the_same_nodes(problem: SearchProblem, k: int, metric: str) -> None:
    same_in_slices(problem, KAnonymity(k), metric)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("metric", METRICS)
def test_slices_take_the_same_nodes_on_larger_problems(seed: int, metric: str) -> None:
    problem = random_problem(seed)
    for k in (2, 11):
        same_in_slices(problem, KAnonymity(k), metric)
    same_in_slices(problem, MaxRisk(0.2), metric)


def test_slices_on_adult(adult: SearchProblem) -> None:
    for metric in ("loss", "discernibility"):
        same_in_slices(adult, KAnonymity(5), metric)


def test_cancel_between_slices() -> None:
    problem = random_problem(0)
    full, _, _ = sliced(problem, KAnonymity(2), "loss", 1)
    assert full.nodes_evaluated > 3  # (a search of several slices)
    seen: list[SearchProgress] = []
    with slices(1), pytest.raises(SearchCancelled):
        optimal_search(
            problem,
            KAnonymity(2),
            suppression_limit=0.0,
            progress=seen.append,
            cancel=lambda: len(seen) >= 2,
        )
    assert len(seen) == 2  # cancelled before the third slice
    assert seen[-1].nodes_evaluated < full.nodes_evaluated
    # a signal set before the search: nothing is evaluated
    with pytest.raises(SearchCancelled):
        compiled_search.find_optimum(
            problem, KAnonymity(2), "loss", lattice_tops(problem, None), cancel=lambda: True
        )


class Stop(Exception):
    pass


def test_a_listener_that_raises_ends_the_search() -> None:
    # (as the job's listener does when the job was cancelled: JobCancelled)
    problem = random_problem(0)
    seen: list[SearchProgress] = []

    def listen(report: SearchProgress) -> None:
        seen.append(report)
        if len(seen) == 2:
            raise Stop

    with slices(1), pytest.raises(Stop):
        optimal_search(problem, KAnonymity(2), suppression_limit=0.0, progress=listen)
    assert len(seen) == 2
    # the table cache was released: the next search is whole
    full, _, _ = sliced(problem, KAnonymity(2), "loss", 1)
    with python_search():
        slow = optimal_search(problem, KAnonymity(2), suppression_limit=0.0)
    assert (full.solution, full.nodes_evaluated) == (slow.solution, slow.nodes_evaluated)


def _where(report: SearchProgress) -> tuple[Any, ...]:
    """A report but for the time it was made."""
    return (report.nodes_evaluated, report.nodes_total, report.best_levels, report.best_loss)


class Reports:
    """A clock that reads the slices reported so far (a deadline of ``n - 0.5`` passes
    after ``n`` slices), whatever the time they take."""

    def __init__(self) -> None:
        self.seen: list[SearchProgress] = []

    def __call__(self) -> float:
        return float(len(self.seen))


@pytest.mark.parametrize("metric", ["loss", "discernibility", "precision"])
@pytest.mark.parametrize("after", [1, 2, 5, 9, 40])
def test_deadline_returns_the_best_so_far(metric: str, after: int) -> None:
    # random_problem(0), k = 2: 14 to 33 nodes evaluated in slices of one; with
    # discernibility the best so far improves from the fifth slice on.
    problem, criterion = random_problem(0), KAnonymity(2)
    full, _, reports = sliced(problem, criterion, metric, 1)
    _, every = exhaustive_search(problem, criterion, metric=metric, suppression_limit=0.0)
    by_levels = {r.levels: r for r in every}
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
                progress=clock.seen.append,
                deadline=after - 0.5,
            )
    finally:
        compiled_search._now = saved
    if after >= len(reports):  # the search finished first: the optimum
        assert found.optimal
        assert (found.solution, found.evaluated) == (full.solution, full.nodes_evaluated)
        return
    # stopped after ``after`` slices: the best node then, with its own facts (evaluated
    # at the end if it was valued unevaluated)
    then = reports[after - 1]
    assert not found.optimal
    assert [_where(p) for p in clock.seen[:-1]] == [_where(p) for p in reports[:after]]
    assert found.evaluated in (then.nodes_evaluated, then.nodes_evaluated + 1)
    assert clock.seen[-1].nodes_evaluated == found.evaluated
    if then.best_levels is None:
        assert found.solution is None
    else:
        assert found.solution is not None and found.solution.levels == then.best_levels
        assert found.solution == by_levels[then.best_levels]
        assert found.solution.information_loss == then.best_loss
        assert found.solution.information_loss >= full.solution.information_loss


def test_a_spent_time_budget_stops_where_the_python_search_does() -> None:
    # (both evaluate the top node, then stop at the first node taken from the queue)
    problem = random_problem(2)
    fast = optimal_search(problem, KAnonymity(2), suppression_limit=0.0, time_budget=0.0)
    with python_search():
        slow = optimal_search(problem, KAnonymity(2), suppression_limit=0.0, time_budget=0.0)
    assert not fast.optimal and not slow.optimal
    assert fast.solution is None and slow.solution is None
    assert fast.nodes_evaluated == slow.nodes_evaluated == 1
    assert fast.pareto == ()


def test_bounds_in_a_thread_as_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``PARALLEL_TUPLES`` (50,000 distinct tuples) the caller computes the pair
    bounds; with the threshold lowered a thread computes them while the metric and the
    cache are made: the same nodes evaluated and the same optimum, with and without
    suppression."""
    from apps.engine.search import best_first
    from apps.engine.search.bounds import PARALLEL_TUPLES

    assert PARALLEL_TUPLES == 50_000
    problem = random_problem(3)
    assert len(problem.counts) < PARALLEL_TUPLES
    configurations = [(2, "loss", 0.0), (5, "discernibility", 0.0), (5, "entropy", 0.05)]
    alone = [
        optimal_search(problem, KAnonymity(k), metric=m, suppression_limit=s)
        for k, m, s in configurations
    ]
    monkeypatch.setattr(compiled_search, "PARALLEL_TUPLES", 1)
    monkeypatch.setattr(best_first, "PARALLEL_TUPLES", 1)
    threaded = [
        optimal_search(problem, KAnonymity(k), metric=m, suppression_limit=s)
        for k, m, s in configurations
    ]
    for a, b in zip(alone, threaded, strict=True):
        assert a.solution is not None and b.solution is not None
        assert b.solution.levels == a.solution.levels
        assert b.solution.information_loss == a.solution.information_loss
        assert b.nodes_evaluated == a.nodes_evaluated
