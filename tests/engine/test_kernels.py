"""The compiled kernels of the search against plain-Python oracles: lattice tagging against
the level-matrix masks, the store and its climb, the metric bounds against the formulas they
stand for, roll-ups (cached, from the bottom, through level-one codes), the table store under
eviction and the queue's total levels. (Grouping: ``test_grouping_kernels.py``; the rare
rows' bounds: ``test_rare_kernels.py``.)"""

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
from apps.engine.search.classes import TableCache, _arena, base_table, roll_up
from apps.engine.search.kernels import frontier, rollup
from tests.engine.test_search_properties import problems, raw_problems


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
    # raise_down on a search's state: rows certainly suppressed never grow upwards, and
    # the failing nodes are a down-set (test_raise_down_visits_only_what_rises)
    below = (lattice.levels.sum(axis=1).max() - lattice.levels.sum(axis=1)).astype(np.int64)
    at_least = 2 * below
    status = np.where(lattice.specializations_mask(0), 2, status % 2).astype(np.int8)
    expected = status.copy()
    kernels.raise_down(node, strides, status, 2, at_least, 5)
    expected[down] = 2
    assert np.array_equal(status, expected)
    assert np.array_equal(at_least, np.where(down, np.maximum(2 * below, 5), 2 * below))


def _down_closed(lattice: Lattice, nodes: list[int]) -> Any:
    mask = np.zeros(lattice.size, dtype=bool)
    for idx in nodes:
        mask |= lattice.specializations_mask(idx)
    return mask


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3), min_size=1, max_size=5), st.data())
def test_raise_down_visits_only_what_rises(tops: list[int], data: Any) -> None:
    """raise_down skips a box of the down-set whose top corner needs nothing; over a
    search's states (known suppression never growing upwards, failing nodes a down-set)
    a sequence of raises leaves what the plain definition leaves: every node of the
    down-set at the new status, its known suppression the larger of the two, and the
    memo forgotten exactly where that rose."""
    lattice = Lattice(tops)
    strides = np.asarray(lattice.strides, dtype=np.int64)
    draw = lambda n: data.draw(st.lists(st.integers(0, lattice.size - 1), max_size=n))  # noqa: E731
    # a start as raise_by_rare leaves it: a maximum of down-set indicators
    at_least = np.zeros(lattice.size, dtype=np.int64)
    for idx in draw(4):
        mask = lattice.specializations_mask(idx)
        at_least[mask] = np.maximum(at_least[mask], data.draw(st.integers(0, 9)))
    status = np.where(_down_closed(lattice, draw(2)), 2, 0).astype(np.int8)
    for idx in draw(6):
        to_status = data.draw(st.sampled_from([-1, 2]))
        value = data.draw(st.integers(0, 12))
        down = lattice.specializations_mask(idx)
        bound = np.zeros(lattice.size)
        want_status = status.copy()
        if to_status >= 0:
            want_status[down] = to_status
        rises = down & (at_least < value)
        want_least = np.where(rises, value, at_least)
        kernels.raise_down_memo(
            lattice.levels[idx], strides, status, to_status, at_least, value, bound
        )
        assert np.array_equal(status, want_status)
        assert np.array_equal(at_least, want_least)
        assert np.array_equal(np.isnan(bound), rises)


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


def _stored(cache: TableCache, d: int) -> set[tuple[int, ...]]:
    arena = cache._arena
    assert arena is not None
    meta = arena.meta[: int(arena.state[kernels.HIGH])]
    return {tuple(int(v) for v in row[:d]) for row in meta if row[0] >= 0}


def test_a_hub_as_large_as_the_bottom_is_not_made_again() -> None:
    """A ZIP-like QI keeps nearly every row distinct at level 1, so a hub holding it there
    has about as many classes as the bottom (cup-like's searches without suppression). The
    first such hub is made and stored; once one has had more than half the bottom's
    classes, a node whose hub would be hashed and whose own key is not is rolled straight
    from the bottom, and its hub is not made. Classes and summaries stay the bottom's."""
    from apps.engine.search.problem import QuasiLookup, build_problem

    rng = np.random.default_rng(7)
    rows = 5000
    zips = np.arange(20_000)
    a = rng.choice(20_000, rows, replace=False)  # (every row distinct on its own)
    b, c = rng.integers(0, 8, rows), rng.integers(0, 3, rows)
    lookups = [
        QuasiLookup.from_maps("a", (zips, zips // 2, zips // 200, np.zeros(20_000))),
        QuasiLookup.from_maps("b", (np.arange(8), np.arange(8) // 2, np.zeros(8))),
        QuasiLookup.from_maps("c", (np.arange(3), np.arange(3) // 2, np.zeros(3))),
    ]
    problem = build_problem(["a", "b", "c"], [a, b, c], np.ones(rows), lookups)
    cache = TableCache(problem, k=2)
    base = base_table(problem, 2)
    assert base.classes == rows

    def fetched(levels: tuple[int, ...]) -> None:
        where, count = cache.fetch(np.array(levels, dtype=np.int16))
        codes, sizes = cache.view(where, count)
        want = roll_up(problem, base, levels, 2)
        assert _grouped(codes, sizes) == _grouped(want.columns, want.sizes)
        assert np.array_equal(cache.summary, want.summary)

    arena = cache._arena
    assert arena is not None
    fetched((2, 1, 0))  # its hub (1, 1, 0): 10,000 x 4 x 3 keys, hashed
    assert (1, 1, 0) in _stored(cache, 3)
    assert arena.state[kernels.BIG_HUB] == 1  # (5,000 rows, at least 2,500 classes)
    fetched((2, 0, 0))  # nothing cached below it; its hub (1, 0, 0) would be hashed
    assert _stored(cache, 3) == {(1, 1, 0), (2, 1, 0), (2, 0, 0)}
    fetched((1, 0, 2))  # its own key is hashed too (10,000 x 8): its hub (1, 0, 1) is made
    assert (1, 0, 1) in _stored(cache, 3)
    _check_store(cache, problem, 2)


def test_small_hubs_are_made_and_kept() -> None:
    """Hubs that group the rows well (few values at level 1) never set ``BIG_HUB``: each
    is made once and serves the nodes above it."""
    from apps.engine.search.problem import QuasiLookup, build_problem

    rng = np.random.default_rng(8)
    rows = 4000
    values = np.arange(400)
    lookups = [
        QuasiLookup.from_maps(q, (values, values // 100, values // 200, np.zeros(400)))
        for q in ("a", "b")
    ]
    columns = [rng.integers(0, 400, rows), rng.integers(0, 400, rows)]
    problem = build_problem(["a", "b"], columns, np.ones(rows), lookups)
    cache = TableCache(problem, k=2)
    for levels in [(2, 1), (3, 2), (2, 2), (1, 2)]:
        cache.fetch(np.array(levels, dtype=np.int16))
    arena = cache._arena
    assert arena is not None
    assert arena.state[kernels.BIG_HUB] == 0
    assert (1, 1) in _stored(cache, 2)  # the hub of (2, 1), (2, 2) and (1, 2)
    _check_store(cache, problem, 2)


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
