"""The compiled kernels of the search against plain-Python oracles.

Grouping is checked on all three of its paths (direct addressing, hash of the mixed-radix
key, hash of the code tuple when the key exceeds 62 bits), with one scratch array reused
across calls as the search does; lattice tagging against the level-matrix masks; the
metric bounds against the formulas they stand for.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.lattice import Lattice, lattice_shape
from apps.engine.loss import prepare_metric
from apps.engine.loss.formulas import geometric_mean_loss, loss_of_dimension
from apps.engine.search import kernels
from apps.engine.search.classes import Scratch, TableCache, _arena, base_table, roll_up
from apps.engine.search.kernels import frontier, grouping, rare, rollup
from tests.engine.test_search_properties import problems, raw_problems


def _oracle(codes: np.ndarray, sizes: np.ndarray, maps: list[np.ndarray | None]) -> Counter:
    """Group sizes keyed by mapped code tuple, with plain Python."""
    out: Counter = Counter()
    for i in range(codes.shape[1]):
        key = tuple(
            int(codes[j, i]) if maps[j] is None else int(maps[j][codes[j, i]])
            for j in range(codes.shape[0])
        )
        out[key] += int(sizes[i])
    return out


def _group(
    codes: np.ndarray,
    sizes: np.ndarray,
    maps: list[np.ndarray | None],
    radix: list[int],
    k: int,
    scratch: Scratch,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts, offsets, at = [], [], 0
    for m in maps:
        if m is None:
            offsets.append(-1)
        else:
            offsets.append(at)
            parts.append(m.astype(np.uint32))
            at += len(m)
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    work, epoch = scratch.take(codes.shape[1])
    return kernels.roll_up_group(
        np.ascontiguousarray(codes, dtype=np.uint32),
        sizes.astype(np.int64),
        flat,
        np.array(offsets, dtype=np.int64),
        np.array(radix, dtype=np.int64),
        k,
        work,
        epoch,
    )


def _check(
    codes: np.ndarray,
    sizes: np.ndarray,
    maps: list[np.ndarray | None],
    radix: list[int],
    k: int,
    scratch: Scratch,
) -> None:
    out, out_sizes, summary = _group(codes, sizes, maps, radix, k, scratch)
    expected = _oracle(codes, sizes, maps)
    got = Counter(
        {tuple(int(c) for c in out[:, g]): int(out_sizes[g]) for g in range(out.shape[1])}
    )
    assert len(got) == out.shape[1]  # no tuple twice
    assert got == expected
    released = [s for s in expected.values() if s >= k]
    assert summary[kernels.CLASSES] == len(expected)
    assert summary[kernels.RELEASED] == len(released)
    assert summary[kernels.SUPPRESSED_ROWS] == sum(s for s in expected.values() if s < k)
    assert summary[kernels.MIN_RELEASED] == (min(released) if released else 0)
    assert summary[kernels.RELEASED_SQUARES] == sum(s * s for s in released)
    # groups come in the order of their first source row
    firsts = []
    for key in (tuple(int(c) for c in out[:, g]) for g in range(out.shape[1])):
        firsts.append(
            next(
                i
                for i in range(codes.shape[1])
                if tuple(
                    int(codes[j, i]) if maps[j] is None else int(maps[j][codes[j, i]])
                    for j in range(codes.shape[0])
                )
                == key
            )
        )
    assert firsts == sorted(firsts)


@st.composite
def tables(draw: Any, wide: bool) -> tuple[np.ndarray, np.ndarray, list, list[int], int]:
    d = draw(st.integers(1, 6 if wide else 4))
    m = draw(st.integers(0, 300))
    domain = [draw(st.integers(1, 1 << 14 if wide else 12)) for _ in range(d)]
    codes = np.array(
        [[draw(st.integers(0, domain[j] - 1)) if m else 0 for _ in range(m)] for j in range(d)],
        dtype=np.uint32,
    ).reshape(d, m)
    if m and not wide:  # repeat some rows so that groups merge
        codes[:, : m // 2] = codes[:, m - m // 2 :][:, : m // 2]
    sizes = np.array([draw(st.integers(1, 9)) for _ in range(m)], dtype=np.int64)
    maps: list[np.ndarray | None] = []
    radix = []
    for j in range(d):
        if draw(st.booleans()):
            maps.append(None)
            radix.append(domain[j])
        else:
            width = draw(st.integers(1, domain[j]))
            maps.append(
                np.array([draw(st.integers(0, width - 1)) for _ in range(domain[j])])
                if domain[j] <= 64
                else np.arange(domain[j]) % width
            )
            radix.append(width)
    return codes, sizes, maps, radix, draw(st.integers(1, 6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(wide=False))
def test_grouping_matches_the_oracle_on_small_key_ranges(case: Any) -> None:
    _check(*case, Scratch())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(wide=True))
def test_grouping_matches_the_oracle_on_wide_key_ranges(case: Any) -> None:
    _check(*case, Scratch())


def test_each_grouping_path_and_a_reused_scratch() -> None:
    rng = np.random.default_rng(3)
    scratch = Scratch()  # shared: stale entries of earlier calls must be ignored
    m = 2_000
    # direct addressing: span 6 * 7 = 42
    dense = rng.integers(0, 6, (2, m)).astype(np.uint32)
    dense[1] %= 7
    # hashed key: span 1000**2 > 4 m
    hashed = rng.integers(0, 1000, (2, m)).astype(np.uint32)
    # code tuple: five columns of 2**13 values, span 2**65 > 2**62
    wide = rng.integers(0, 50, (5, m)).astype(np.uint32)
    wide[:, m // 2 :] = wide[:, : m // 2]
    sizes = rng.integers(1, 5, m)
    assert grouping._span(np.array([1 << 13] * 5, dtype=np.int64)) == -1
    for _ in range(3):
        _check(dense, sizes, [None, None], [6, 7], 3, scratch)
        _check(hashed, sizes, [None, None], [1000, 1000], 2, scratch)
        _check(wide, sizes, [None] * 5, [1 << 13] * 5, 4, scratch)
        _check(hashed, sizes, [None, np.arange(1000) // 100], [1000, 10], 5, scratch)


def test_scratch_epochs_wrap_around() -> None:
    scratch = Scratch()
    codes = np.array([[0, 1, 0, 1]], dtype=np.uint32)
    sizes = np.array([1, 2, 3, 4])
    _check(codes, sizes, [None], [2], 1, scratch)
    scratch._epoch = (1 << 31) - 2
    for _ in range(4):  # crosses the limit: the array is renewed, epochs restart at 1
        _check(codes, sizes, [None], [2], 1, scratch)
    assert scratch._epoch < 10


def test_roll_up_refuses_lower_levels() -> None:
    from tests.engine.test_loss import make_problem

    problem = make_problem(
        [["a", "x"], ["b", "y"]],
        {"q0": [["a", "ab", "*"], ["b", "ab", "*"]], "q1": [["x", "*"], ["y", "*"]]},
    )
    top = roll_up(problem, base_table(problem), (2, 1))
    with pytest.raises(ValueError, match="lower level"):
        roll_up(problem, top, (1, 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.data())
def test_raise_up_and_down_cover_the_up_set_and_down_set(tops: list[int], data: Any) -> None:
    lattice = Lattice(tops)
    idx = data.draw(st.integers(0, lattice.size - 1))
    node = lattice.levels[idx]
    t = np.asarray(lattice.tops, dtype=np.int64)
    strides = np.asarray(lattice.strides, dtype=np.int64)
    status = np.array(
        data.draw(st.lists(st.integers(0, 2), min_size=lattice.size, max_size=lattice.size)),
        dtype=np.int8,
    )
    lifted = np.zeros((2, lattice.size))
    up, down = lattice.generalizations_mask(idx), lattice.specializations_mask(idx)
    expected = status.copy()
    expected[up & (status == 0)] = 1
    kernels.raise_up(node, t, strides, status, 0, 1, lifted, np.array([2.5, -1.0]))
    assert np.array_equal(status, expected)
    assert np.array_equal(lifted[0], np.where(up, 2.5, 0.0))
    assert np.array_equal(lifted[1], np.zeros(lattice.size))  # -1 < 0: no rise
    at_least = np.arange(lattice.size, dtype=np.int64)
    kernels.raise_down(node, strides, status, 2, at_least, 5)
    expected[down] = 2
    assert np.array_equal(status, expected)
    assert np.array_equal(
        at_least, np.where(down, np.maximum(np.arange(lattice.size), 5), np.arange(lattice.size))
    )


def test_store_lookup_and_climb_chain() -> None:
    lattice = Lattice([1, 2, 1])
    # store slots: levels, then start, count (classes), sequence; slot 4 is empty
    meta = np.zeros((5, 6), dtype=np.int64)
    meta[:, :3] = [[0, 1, 0], [1, 1, 1], [0, 0, 0], [0, 2, 1], [-1, 0, 0]]
    meta[:, 3 + kernels.COUNT] = [30, 5, 99, 7, 1]
    node = lambda *v: np.array(v, dtype=np.int16)  # noqa: E731
    assert kernels.find_slot(meta, 5, node(1, 2, 1)) == (-1, 1)  # fewest classes below
    assert kernels.find_slot(meta, 5, node(0, 2, 1)) == (3, 3)  # the node itself
    assert kernels.find_slot(meta, 5, node(0, 1, 1)) == (-1, 0)
    assert kernels.find_slot(meta[1:2], 1, node(0, 2, 1)) == (-1, -1)
    assert kernels.find_slot(meta, 1, node(1, 2, 1)) == (-1, 0)  # only slots below ``high``
    status = np.zeros(lattice.size, dtype=np.int8)
    at_least = np.zeros(lattice.size, dtype=np.int64)
    keys = np.zeros(lattice.size)
    t = np.asarray(lattice.tops, dtype=np.int64)
    s = np.asarray(lattice.strides, dtype=np.int64)
    # all equal: the first QI first, up to the top
    chain = kernels.climb_chain(0, lattice.levels, t, s, status, 0, at_least, keys)
    assert [lattice.node(int(i)) for i in chain] == [
        (0, 0, 0),
        (1, 0, 0),
        (1, 1, 0),
        (1, 2, 0),
        (1, 2, 1),
    ]
    # most rows known suppressed first, then the least key; known nodes end the chain
    at_least[lattice.index((0, 1, 0))] = 9
    keys[lattice.index((0, 0, 1))] = -1.0
    status[lattice.index((0, 2, 0))] = 1
    status[lattice.index((1, 1, 0))] = 1
    chain = kernels.climb_chain(0, lattice.levels, t, s, status, 0, at_least, keys)
    assert [lattice.node(int(i)) for i in chain] == [
        (0, 0, 0),
        (0, 1, 0),
        (0, 1, 1),
        (1, 1, 1),
        (1, 2, 1),
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(1, 4), st.data())
def test_metric_bound_kernels_match_their_formulas(problem: Any, k: int, data: Any) -> None:
    lattice = Lattice(problem.heights)
    idx = data.draw(st.integers(0, lattice.size - 1))
    levels = lattice.node(idx)
    s = data.draw(st.integers(0, problem.rows))
    loss = prepare_metric("loss", problem)
    expected = geometric_mean_loss(
        [
            loss_of_dimension(
                loss.weighted[j][lv] + s * loss.penalty[j][lv], problem.rows, lk.domain_size
            )
            for j, (lk, lv) in enumerate(zip(problem.lookups, levels, strict=True))
        ]
    )
    assert loss.suppression_bound(levels, s, k) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    entropy = prepare_metric("entropy", problem)
    arr = np.asarray([levels], dtype=np.int16)
    vector = (
        float(entropy.suppression_bounds(arr, np.array([s]), k)[0])
        if s
        else float(entropy.lower_bounds(arr)[0])
    )
    assert entropy.suppression_bound(levels, s, k) == pytest.approx(vector, rel=1e-12, abs=1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(1, 4))
def test_cached_roll_ups_equal_roll_ups_from_the_bottom(problem: Any, k: int) -> None:
    """Whatever the cache hands as a source (hubs included), classes are the bottom's;
    the top node first (nothing cached: where every QI has one value, the one class of
    every row is made without grouping), and again after the others."""
    lattice = Lattice(problem.heights)
    cache = TableCache(problem, k=k)
    base = base_table(problem, k)
    some = np.random.default_rng(0).permutation(lattice.size)[:30]
    for idx in [lattice.top, *some, lattice.top]:
        levels = lattice.node(int(idx))
        got = cache.table(levels)
        want = roll_up(problem, base, levels, k)
        key = lambda t: Counter(  # noqa: E731
            {tuple(int(c) for c in t.columns[:, g]): int(t.sizes[g]) for g in range(t.classes)}
        )
        assert key(got) == key(want)
        assert np.array_equal(got.summary, want.summary)
        assert math.isclose(float(got.sizes.sum()), float(problem.rows))


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


def _grouped(columns: np.ndarray, sizes: np.ndarray) -> Counter:
    return Counter({tuple(int(c) for c in columns[:, g]): int(sizes[g]) for g in range(len(sizes))})


def _check_store(cache: TableCache, problem: Any, k: int) -> None:
    """Invariants of the store: live tables lie in the ring, never overlap, and hold the
    classes and summary of their node rolled up from the bottom."""
    d = problem.dimensions
    arena = cache._arena
    assert arena is not None
    meta, high = arena.meta, int(arena.state[kernels.HIGH])
    live = [s for s in range(high) if meta[s, 0] >= 0]
    spans = sorted((int(meta[s, d + kernels.START]), int(meta[s, d + kernels.COUNT])) for s in live)
    for (a, n), (b, _) in zip(spans, spans[1:], strict=False):
        assert a + n <= b
    assert all(cache._base <= a and a + n <= len(arena.sizes) for a, n in spans)
    base = base_table(problem, k)
    for s in live:
        levels = tuple(int(v) for v in meta[s, :d])
        want = roll_up(problem, base, levels, k)
        codes, sizes = cache.view(int(meta[s, d + kernels.START]), int(meta[s, d + kernels.COUNT]))
        assert _grouped(codes, sizes) == _grouped(want.columns, want.sizes)
        assert np.array_equal(arena.summaries[s], want.summary)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(problems(), raw_problems()), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_the_store_under_eviction_hands_the_bottoms_classes(
    problem: Any, k: int, seed: int
) -> None:
    """The smallest store (a ring of four bottom tables) evicts and moves tables all the
    time; every fetch still gives the classes and summary of a roll-up from the bottom
    (inconsistent hierarchies: nothing cached, every node from the bottom)."""
    lattice = Lattice(problem.heights)
    cache = TableCache(problem, max_bytes=1, k=k)
    base = base_table(problem, k)
    rng = np.random.default_rng(seed)
    for idx in rng.integers(0, lattice.size, 3 * min(lattice.size, 30)):
        want = roll_up(problem, base, lattice.node(int(idx)), k)
        where, count = cache.fetch(lattice.levels[int(idx)])
        codes, sizes = cache.view(where, count)
        assert _grouped(codes, sizes) == _grouped(want.columns, want.sizes)
        assert np.array_equal(cache.summary, want.summary)
    _check_store(cache, problem, k)
    if not problem.consistent:
        assert cache._arena is not None and cache._arena.state[kernels.HIGH] == 0


def test_the_store_evicts_old_tables_and_moves_used_sources() -> None:
    """Three QIs of 12 values with 4 levels each (64 nodes), every combination of values
    once (1,728 tuples); a ring of four bottom tables. Fetching every node in a random
    order, twice, wraps the ring: tables are evicted, and sources the head is about to
    reach are moved (more stores than nodes); the invariants hold throughout."""
    from apps.engine.search.problem import QuasiLookup, build_problem

    values = 12
    maps = (np.arange(values), np.arange(values) // 2, np.arange(values) // 4, np.zeros(values))
    lookups = [QuasiLookup.from_maps(q, maps) for q in ("a", "b", "c")]
    grid = np.array(np.meshgrid(*[np.arange(values)] * 3, indexing="ij")).reshape(3, -1)
    problem = build_problem(["a", "b", "c"], list(grid), np.ones(grid.shape[1]), lookups)
    lattice = Lattice(problem.heights)
    cache = TableCache(problem, max_bytes=1, k=2)
    order = np.random.default_rng(1).permutation(lattice.size)
    for idx in [*order, *order]:
        cache.fetch(lattice.levels[int(idx)])
        _check_store(cache, problem, 2)
    arena = cache._arena
    assert arena is not None
    stored = int(arena.state[kernels.NEXT_SEQ])
    live = int((arena.meta[: int(arena.state[kernels.HIGH]), 0] >= 0).sum())
    assert live < lattice.size - 1  # evicted (the bottom is not stored)
    assert stored > lattice.size - 1  # evicted nodes stored again
    assert arena.state[kernels.MOVES] > 0  # used sources moved ahead of the head


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(1, 4), st.data())
def test_roll_ups_from_the_bottom_through_level_one_codes(problem: Any, k: int, data: Any) -> None:
    """A node whose QIs are at level 0 or 1 or have one value (a hub) is grouped from
    the bottom on the level-1 codes (``rollup._bottom_into_stage``): the same classes in
    the same order, with the same codes, sizes and summary, as the roll-up that maps
    each code (``rollup._roll_into_stage``)."""
    base = base_table(problem, k)
    heights = problem.heights
    maps = problem.maps
    fast_arena = _arena(problem, base, 1 << 20)
    slow_arena = _arena(problem, base, 1 << 20)
    m = base.classes
    for _ in range(6):
        levels = np.array([data.draw(st.integers(0, h)) for h in heights], dtype=np.int16)
        # a hub: every QI at level 0 or 1, unless it has one value at its level
        hub = np.array(
            [
                lv if problem.level_values[j, lv] == 1 else min(int(lv), 1)
                for j, lv in enumerate(levels)
            ],
            dtype=np.int16,
        )
        assert rollup._from_level_one(hub, maps)
        fast_summary = np.zeros(kernels.SUMMARY, dtype=np.int64)
        slow_summary = np.zeros(kernels.SUMMARY, dtype=np.int64)
        fast = rollup._bottom_into_stage(fast_arena, m, hub, maps, k, fast_summary)
        slow = rollup._roll_into_stage(
            slow_arena, 0, m, np.zeros(len(hub), dtype=np.int64), hub, maps, k, slow_summary
        )
        assert fast == slow
        assert np.array_equal(fast_arena.stage[:, :fast], slow_arena.stage[:, :slow])
        assert np.array_equal(fast_arena.grouped[:fast], slow_arena.grouped[:slow])
        assert np.array_equal(fast_summary, slow_summary)
    # the level-1 codes were made once, by the first of these roll-ups
    assert fast_arena.state[kernels.LEVEL_ONE] == 1
    above = [j for j, h in enumerate(heights) if h >= 2 and problem.level_values[j, 2] > 1]
    if above:
        node = np.zeros(len(heights), dtype=np.int16)
        node[above[0]] = 2
        assert not rollup._from_level_one(node, maps)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_fewer_tuples_merges_equal_rows_in_order_of_first_appearance(
    n: int, d: int, seed: int
) -> None:
    """``rare._fewer_tuples``: the distinct rows with their summed counts, in order of
    first appearance (a plain-Python oracle), codes of one-value QIs included."""
    rng = np.random.default_rng(seed)
    radix = rng.integers(1, 4, d).astype(np.int64)
    codes = np.stack([rng.integers(0, r, n) for r in radix]).astype(np.uint8).reshape(d, n)
    counts = rng.integers(1, 9, n).astype(np.int64)
    want: dict[tuple[int, ...], int] = {}
    for i in range(n):
        key = tuple(int(v) for v in codes[:, i])
        want[key] = want.get(key, 0) + int(counts[i])
    got_codes, got_counts = rare._fewer_tuples(codes, counts, radix)
    assert [tuple(int(v) for v in got_codes[:, g]) for g in range(len(got_counts))] == list(want)
    assert got_counts.tolist() == list(want.values())


def test_fewer_tuples_hand_computed() -> None:
    codes = np.array([[1, 0, 1, 1], [2, 2, 2, 0]], dtype=np.uint8)
    counts = np.array([3, 1, 4, 2], dtype=np.int64)
    got_codes, got_counts = rare._fewer_tuples(codes, counts, np.array([2, 3], dtype=np.int64))
    assert got_codes.tolist() == [[1, 0, 1], [2, 2, 0]]
    assert got_counts.tolist() == [7, 1, 2]


def test_tuples_merged_only_when_their_key_range_is_small() -> None:
    """``rare._merges_enough``: the key range (the product of the radices above 1) at
    most ``FEWER_RANGE`` (500) times the tuples; a range past 62 bits never."""
    assert rare.FEWER_RANGE == 500
    merges = rare._merges_enough
    assert merges(np.array([20, 1, 14], dtype=np.int64), 1)  # 280 <= 500
    assert merges(np.array([500, 10], dtype=np.int64), 10)  # 5,000 <= 5,000
    assert not merges(np.array([500, 10], dtype=np.int64), 9)  # 5,000 > 4,500
    assert not merges(np.array([1 << 31, 1 << 31, 4], dtype=np.int64), 1 << 40)  # (overflow)


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


@settings(deadline=None)
@given(st.lists(st.integers(0, 6), max_size=7), st.data())
def test_the_queue_holds_each_nodes_total_level(tops: list[int], data: Any) -> None:
    """Total levels read from two tables (``frontier._total_tables``) equal the levels'
    sum of each node, whatever the lattice's shape and the nodes' order."""
    size, strides = lattice_shape(tops)
    order = np.array(
        data.draw(st.lists(st.integers(0, size - 1), max_size=300, unique=True)), dtype=np.int64
    )
    tops_, strides_ = np.array(tops, dtype=np.int64), np.array(strides, dtype=np.int64)
    queue = frontier.queue(order, np.zeros(size), tops_, strides_)
    radix = np.array(tops, dtype=np.int64) + 1
    expected = [int(((idx // strides_) % radix).sum()) for idx in order.tolist()]
    assert queue.order_totals.tolist() == expected


def test_totals_without_a_mixed_radix_numbering_are_computed_node_by_node() -> None:
    tops, strides = np.array([1, 2], dtype=np.int64), np.array([1, 2], dtype=np.int64)
    block, _, _ = frontier._total_tables(tops, strides)
    assert block == 0
    queue = frontier.queue(np.arange(6, dtype=np.int64), np.zeros(6), tops, strides)
    assert queue.order_totals.tolist() == [
        frontier.total_level(idx, tops, strides) for idx in range(6)
    ]


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
