"""The memo of the search with suppression (``best_first.py``): the compiled raises
forget exactly the memoized numbers whose inputs rose, and after a whole search (with
its Pareto solves) every memoized bound and order key equals the one computed afresh;
the table cache's direct call of the compiled look-up equals numba's dispatch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity
from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS
from apps.engine.search import kernels
from apps.engine.search.best_first import BestFirst
from apps.engine.search.classes import TableCache
from apps.engine.search.optimal import lattice_tops
from apps.engine.search.problem import SearchProblem
from tests.engine.test_loss import make_problem
from tests.engine.test_search_properties import problems


def test_raise_up_memo_forgets_where_lifted_numbers_rise() -> None:
    lattice = Lattice([1, 2])
    at = {lattice.node(i): i for i in range(lattice.size)}
    tops = np.asarray(lattice.tops, dtype=np.int64)
    strides = np.asarray(lattice.strides, dtype=np.int64)
    status = np.zeros(lattice.size, dtype=np.int8)
    lifted = np.zeros((1, lattice.size))
    lifted[0, at[(0, 2)]] = 5.0  # above the lift: no rise there
    order = np.full(lattice.size, 7.0)
    bound = np.full(lattice.size, 8.0)
    node = lattice.levels[at[(0, 1)]]
    kernels.raise_up_memo(node, tops, strides, status, 0, 1, lifted, np.array([3.0]), order, bound)
    risen = [at[(0, 1)], at[(1, 1)], at[(1, 2)]]  # the up-set but (0, 2)
    for i in range(lattice.size):
        assert math.isnan(order[i]) == (i in risen)
        assert math.isnan(bound[i]) == (i in risen)
    assert lifted[0].tolist() == [3.0 if i in risen else 5.0 if i == at[(0, 2)] else 0.0
                                  for i in range(lattice.size)]  # fmt: skip
    assert [int(s) for s in status] == [
        1 if i in [*risen, at[(0, 2)]] else 0 for i in range(lattice.size)
    ]


def test_raise_down_memo_forgets_where_known_suppression_rises() -> None:
    lattice = Lattice([1, 2])
    at = {lattice.node(i): i for i in range(lattice.size)}
    strides = np.asarray(lattice.strides, dtype=np.int64)
    status = np.zeros(lattice.size, dtype=np.int8)
    at_least = np.zeros(lattice.size, dtype=np.int64)
    at_least[at[(1, 0)]] = 9  # above the value: no rise there
    bound = np.full(lattice.size, 8.0)
    kernels.raise_down_memo(lattice.levels[at[(1, 1)]], strides, status, 2, at_least, 4, bound)
    risen = [at[(0, 0)], at[(0, 1)], at[(1, 1)]]  # the down-set but (1, 0)
    for i in range(lattice.size):
        assert math.isnan(bound[i]) == (i in risen)
    assert at_least.tolist() == [
        4 if i in risen else 9 if i == at[(1, 0)] else 0 for i in range(lattice.size)
    ]
    down = [*risen, at[(1, 0)]]
    assert status.tolist() == [2 if i in down else 0 for i in range(lattice.size)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    metric=st.sampled_from(METRICS),
    k=st.integers(1, 5),
    limit=st.sampled_from([0.05, 0.1, 0.3, 1.0]),
)
def test_memoized_bounds_equal_fresh_ones_after_a_search(
    problem: SearchProblem, metric: str, k: int, limit: float
) -> None:
    allowed = int(problem.rows * limit)
    search = BestFirst(
        problem, KAnonymity(k), metric, lattice_tops(problem, None), None, None, None,
        most_allowed=allowed,
    )  # fmt: skip
    search.evaluator.value_limit = allowed
    try:
        best, _, _ = search.solve(allowed, None)
        if best >= 0 and search.evaluator.facts[best].suppressed_rows > 0:
            search.solve(search.evaluator.facts[best].suppressed_rows - 1, None)  # (Pareto)
    finally:
        search.evaluator.cache.release()
    memos = [search._bound_memo.copy(), search._order_memo.copy()]
    for idx in range(search.lattice.size):
        if math.isinf(search.keys[idx]):
            continue  # (never bounded: suppresses more than any solve allows)
        search._bound_memo[idx] = search._order_memo[idx] = math.nan
        fresh = [search._current_bound(idx), search._order_key(idx)]
        for memo, value in zip(memos, fresh, strict=True):
            assert math.isnan(memo[idx]) or memo[idx] == value


def test_direct_fetch_equals_dispatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fetches of a row of the lattice's levels (the direct call of the machine code)
    and of a strided copy (numba's dispatch) find the same classes, as counted by hand."""
    hier = [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]]
    # 13 of the 16 pairs: aa ab ac ad ba bb bc bd ca cb cc cd da
    rows = [[x, y] for x in "abcd" for y in "abcd"][:13]
    problem = make_problem(rows, {"x": hier, "y": hier})
    lattice = Lattice(lattice_tops(problem, None))
    # (classes, released, suppressed rows, smallest released, sum of squares), k = 2:
    # the bottom has 13 single rows; at (1, 1) classes of 4, 4, 3 (ca cb da), 2 (cc cd)
    expected = {(0, 0): [13, 0, 13, 0, 0], (1, 1): [4, 4, 0, 2, 45], (2, 2): [1, 1, 0, 13, 169]}
    direct, dispatched = TableCache(problem, k=2), TableCache(problem, k=2)
    dispatch = kernels.fetch
    try:
        # (the machine code is found at the first fetch, not when the cache is made: the
        # compiled search never fetches through it; found, no fetch dispatches)
        assert direct._entry is None
        direct.fetch(lattice.levels[0])
        assert direct._entry is not None
        for idx in range(lattice.size):
            with monkeypatch.context() as patch:  # (the direct call does not dispatch)
                patch.setattr(kernels, "fetch", None)
                where, count = direct.fetch(lattice.levels[idx])
            assert kernels.fetch is dispatch
            codes, sizes = direct.view(where, count)
            strided = np.repeat(lattice.levels[idx], 2)[::2]  # (not contiguous)
            assert not strided.flags.c_contiguous
            where2, count2 = dispatched.fetch(strided)
            codes2, sizes2 = dispatched.view(where2, count2)
            assert direct.summary.tolist() == dispatched.summary.tolist()
            assert sorted(zip(codes.T.tolist(), sizes.tolist(), strict=True)) == sorted(
                zip(codes2.T.tolist(), sizes2.tolist(), strict=True)
            )
            if lattice.node(idx) in expected:
                assert direct.summary.tolist() == expected[lattice.node(idx)]
    finally:
        direct.release()
        dispatched.release()
