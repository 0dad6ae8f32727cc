"""The rare-row kernels against plain-Python oracles: the pair suppression bounds (capped,
with large cells, past the work budget, on wide domains), the rare rows with tuples merged
or not, and the rare-row bounds raised over the lattice (``lattice.raise_by_rare``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.lattice import Lattice
from apps.engine.search import kernels
from apps.engine.search.kernels import rare
from tests.engine.test_search_properties import problems, raw_problems


def _pair_bound_oracle(problem: Any, lattice: Lattice, k: int) -> np.ndarray:
    """Rows each node certainly suppresses (``bounds.py``), with plain Python: per node,
    the most rows in single-QI or QI-pair cells of fewer than ``k`` rows."""
    d = problem.dimensions
    codes = [[int(c) for c in problem.codes[j]] for j in range(d)]
    counts = [int(c) for c in problem.counts]
    lookups = problem.lookups

    def rare(qis: tuple[int, ...], levels: tuple[int, ...]) -> int:
        cells: Counter = Counter()
        for t, n in enumerate(counts):
            key = tuple(
                int(lookups[q].maps[lv][codes[q][t]]) for q, lv in zip(qis, levels, strict=True)
            )
            cells[key] += n
        return sum(n for n in cells.values() if n < k)

    out = np.zeros(lattice.size, dtype=np.int64)
    memo: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    for idx in range(lattice.size):
        node = lattice.node(idx)
        best = 0
        for qis in [(j,) for j in range(d)] + [(i, j) for i in range(d) for j in range(i + 1, d)]:
            key = (qis, tuple(node[q] for q in qis))
            if key not in memo:
                memo[key] = rare(*key)
            best = max(best, memo[key])
        out[idx] = best
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(problems(), raw_problems()), st.integers(1, 5))
def test_pair_suppression_bounds_match_the_oracle(problem: Any, k: int) -> None:
    from apps.engine.search.bounds import suppression_lower_bounds

    lattice = Lattice(problem.heights)
    expected = _pair_bound_oracle(problem, lattice, k) if k > 1 else np.zeros(lattice.size)
    assert np.array_equal(suppression_lower_bounds(problem, lattice, k), expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(problems(), raw_problems()), st.integers(2, 5), st.integers(0, 6), st.data())
def test_capped_pair_suppression_bounds(problem: Any, k: int, cap: int, data: Any) -> None:
    """With a cap (and maximum levels below the heights): a node's bound is exact up to
    the cap, and above it still exceeds the cap without exceeding the exact bound."""
    from apps.engine.search.bounds import suppression_lower_bounds

    tops = [data.draw(st.integers(0, h)) for h in problem.heights]
    lattice = Lattice(tops)
    full = suppression_lower_bounds(problem, lattice, k)
    assert np.array_equal(full, _pair_bound_oracle(problem, lattice, k))
    capped = suppression_lower_bounds(problem, lattice, k, cap)
    assert np.array_equal(capped[full <= cap], full[full <= cap])
    assert (capped[full > cap] > cap).all()
    assert (capped <= full).all()


def test_pair_suppression_bounds_with_large_cells() -> None:
    """Cells of thousands of rows and of a few rows, for small and large k; inconsistent
    hierarchies group every level pair from level 0."""
    from apps.engine.search.bounds import suppression_lower_bounds
    from apps.engine.search.problem import QuasiLookup, build_problem

    rng = np.random.default_rng(11)
    for consistent in (True, False):
        lookups, columns = [], []
        for q, values in (("a", 30), ("b", 12), ("c", 5)):
            maps = [np.arange(values), np.arange(values) // 3, np.zeros(values, dtype=np.int64)]
            if q == "b" and not consistent:
                maps[1] = (np.arange(values) + 1) // 3
                maps.insert(2, np.arange(values) // 4)
            lookups.append(QuasiLookup.from_maps(q, maps))
            columns.append(rng.integers(0, values, 200))
        counts = np.where(
            rng.random(200) < 0.2, rng.integers(1000, 3000, 200), 1 + (rng.random(200) < 0.5)
        )
        problem = build_problem(["a", "b", "c"], columns, counts, lookups)
        assert problem.consistent == consistent
        lattice = Lattice(problem.heights)
        for k in (2, 3, 50, 5000, 20000):
            got = suppression_lower_bounds(problem, lattice, k)
            assert np.array_equal(got, _pair_bound_oracle(problem, lattice, k))


def test_pairs_past_the_work_budget_keep_their_singles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pairs whose grouping would pass the work budget are not grouped: the bound is
    then the single QIs' (still a lower bound of the suppressed rows)."""
    from apps.engine.search import bounds
    from apps.engine.search.problem import QuasiLookup, build_problem

    monkeypatch.setattr(bounds, "PAIR_WORK_FLOOR", 0)
    monkeypatch.setattr(bounds, "PAIR_WORK_SHARE", 0.0)
    rng = np.random.default_rng(5)
    lookups, columns = [], []
    for q, values in (("a", 20), ("b", 9)):
        maps = (np.arange(values), np.arange(values) // 3, np.zeros(values, dtype=np.int64))
        lookups.append(QuasiLookup.from_maps(q, maps))
        columns.append(rng.integers(0, values, 60))
    problem = build_problem(["a", "b"], columns, rng.integers(1, 4, 60), lookups)
    lattice = Lattice(problem.heights)
    got = bounds.suppression_lower_bounds(problem, lattice, 5)
    singles = np.zeros(lattice.size, dtype=np.int64)
    for j in range(2):
        rare = [bounds._rare_rows(f, 5) for f in problem.frequencies[j]]
        singles = np.maximum(singles, np.asarray(rare)[lattice.levels[:, j]])
    assert np.array_equal(got, singles)
    assert (got <= _pair_bound_oracle(problem, lattice, 5)).all()


def test_pair_suppression_bounds_on_wide_domains() -> None:
    """Two QIs of 400 values (a pair key range of 160,000, beyond the dense count: the
    cells are hashed) and a third of 3; 500 tuples of random counts."""
    from apps.engine.search.bounds import suppression_lower_bounds
    from apps.engine.search.problem import QuasiLookup, build_problem

    rng = np.random.default_rng(7)
    lookups, columns = [], []
    for q, values in (("a", 400), ("b", 400), ("c", 3)):
        maps = (np.arange(values), np.arange(values) // 10, np.zeros(values, dtype=np.int64))
        lookups.append(QuasiLookup.from_maps(q, maps))
        columns.append(rng.integers(0, values, 500))
    problem = build_problem(["a", "b", "c"], columns, rng.integers(1, 4, 500), lookups)
    lattice = Lattice(problem.heights)
    for k in (2, 5):
        got = suppression_lower_bounds(problem, lattice, k)
        assert np.array_equal(got, _pair_bound_oracle(problem, lattice, k))
        assert got.max() > 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(problems(), raw_problems()), st.integers(2, 5), st.integers(0, 4))
def test_rare_rows_the_same_with_tuples_merged_or_not(problem: Any, k: int, cap: int) -> None:
    """The pair bounds do not depend on whether the tuples are merged at the pairs' first
    levels (``_fewer_tuples``, chosen by ``_merges_enough``): the kernel's own Python,
    with the choice forced either way, gives the compiled kernel's result."""
    heights = np.asarray(problem.heights, dtype=np.int64)
    frequencies = np.concatenate([f for per_qi in problem.frequencies for f in per_qi])
    args = (
        problem.codes, problem.counts, heights, frequencies.astype(np.int64), problem.maps,
        problem.consistent, k, cap, 1 << 40, 1 << 60,
    )  # fmt: skip
    compiled = rare.rare_rows(*args)
    for merge in (True, False):
        saved = rare._merges_enough
        rare._merges_enough = lambda radix, n, merge=merge: merge  # type: ignore[assignment]
        try:
            forced = rare.rare_rows.py_func(*args)
        finally:
            rare._merges_enough = saved
        for got, want in zip(forced, compiled, strict=True):
            assert np.array_equal(got, want)


def _raise_by_rare_node_by_node(
    tops: Any, first_qi: Any, second_qi: Any, base: Any, width: Any, rare: Any, cap: int,
    bound: Any,
) -> None:  # fmt: skip
    """``lattice.raise_by_rare`` as it was before it took the last QI's levels at once
    (the odometer node by node), the oracle of the test below."""
    d = len(tops)
    profiles = len(base)
    # Profiles grouped by their last QI.
    by_last = np.zeros(d + 1, dtype=np.int64)
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        by_last[last + 1] += 1
    for t in range(d):
        by_last[t + 1] += by_last[t]
    order = np.empty(profiles, dtype=np.int64)
    filled = by_last[:d].copy()
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        order[filled[last]] = p
        filled[last] += 1
    # Nodes under a prefix of t QIs: a block of block[t] consecutive indices.
    block = np.ones(d + 1, dtype=np.int64)
    for t in range(d - 1, -1, -1):
        block[t] = block[t + 1] * (tops[t] + 1)
    counter = np.zeros(d, dtype=np.int64)
    partial = np.zeros(d + 1, dtype=np.int64)  # partial[t]: max within QIs < t
    changed = 0
    idx = 0
    size = block[0]
    while idx < size:
        t = changed
        while t < d:
            best = partial[t]
            for q in range(by_last[t], by_last[t + 1]):
                p = order[q]
                s = base[p] + counter[first_qi[p]] * width[p]
                if second_qi[p] >= 0:
                    s += counter[t]
                r = rare[s]
                if r > best:
                    best = r
            partial[t + 1] = best
            t += 1
            if cap >= 0 and best > cap:
                break
        # t QIs fixed: the block of nodes under that prefix gets partial[t].
        end = idx + block[t]
        for i in range(idx, end):
            if bound[i] < partial[t]:
                bound[i] = partial[t]
        idx = end
        # Next prefix of t QIs: carry from digit t - 1.
        j = t - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                break
            counter[j] = 0
            j -= 1
        if j < 0:
            return
        for u in range(j + 1, d):
            counter[u] = 0
        changed = j


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=5), st.integers(-1, 12), st.integers(0, 2**32 - 1))
def test_raise_by_rare_equals_the_node_by_node_odometer(
    tops: list[int], cap: int, seed: int
) -> None:
    """Every node gets the same number, bounds past the cap included, with the last QI's
    levels taken at once."""
    rng = np.random.default_rng(seed)
    d = len(tops)
    first, second, base, width = [], [], [], []
    at = 0
    for j in range(d):
        first.append(j), second.append(-1), base.append(at), width.append(1)
        at += tops[j] + 1
    for i in range(d):
        for j in range(i + 1, d):
            if rng.random() < 0.8:  # (some pairs left out, as past the work budget)
                first.append(i), second.append(j), base.append(at), width.append(tops[j] + 1)
                at += (tops[i] + 1) * (tops[j] + 1)
    rare_ = rng.integers(0, 15, at).astype(np.int64)
    arrays = [np.array(a, dtype=np.int64) for a in (tops, first, second, base, width)]
    size = int(np.prod(np.array(tops) + 1))
    start = rng.integers(0, 5, size).astype(np.int64)
    got, expected = start.copy(), start.copy()
    kernels.raise_by_rare(*arrays, rare_, cap, got)
    _raise_by_rare_node_by_node(*arrays, rare_, cap, expected)
    assert got.tolist() == expected.tolist()
