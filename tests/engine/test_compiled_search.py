"""The compiled search's driver (``search/compiled_search.py``) and the table cache it
runs on: one compiled loop for every metric of a code width, and an arena sized for the
lattice it searches (issue #26: a search of a small table pays per run for what it
allocates and types)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import typeof

from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS, prepare_metric
from apps.engine.search import bounds, compiled_search
from apps.engine.search.classes import TableCache
from apps.engine.search.problem import lattice_tops
from tests.engine.test_loss import tiny
from tests.engine.test_zero_limit import random_problem


@pytest.mark.parametrize("metric", METRICS)
def test_every_valuation_has_the_type_of_none(metric: str) -> None:
    """The metric's tables go to the loop as arrays of the same numba types as the empty
    valuation of the metrics valued from the class summary: one compiled loop serves
    every metric (one specialization per code width, loaded by the preload)."""
    problem = random_problem(1)
    prepared = prepare_metric(metric, problem)
    size = math.prod(t + 1 for t in lattice_tops(problem, None))
    least = np.zeros(size, dtype=np.int64)
    valuation = compiled_search._valuation(prepared.search_tables(), least, problem.dimensions)
    assert typeof(tuple(valuation)) == typeof(compiled_search._NO_VALUATION_FIELDS)
    # (the metric's own tables, not copies of the empty ones, where it has them)
    for name, table in prepared.search_tables().items():
        np.testing.assert_array_equal(getattr(valuation, name), table)
    assert valuation.least is not least and np.array_equal(valuation.least, least)


def test_the_arena_has_a_slot_per_node_at_most() -> None:
    """A cached table takes a slot, and a node has at most one: the arena of a problem
    whose lattice has fewer nodes than its ring could hold tables has a slot per node
    (before: 65,536 slots, 6 MB of slot rows for a lattice of a few hundred nodes)."""
    problem = random_problem(0)
    nodes = math.prod(t + 1 for t in lattice_tops(problem, None))
    assert 64 < nodes < 1 << 16
    cache = TableCache(problem, None, 2)
    try:
        arena = cache.compiled_tables.arena
        assert arena.meta.shape[0] == nodes
        assert arena.summaries.shape[0] == nodes
    finally:
        cache.release()
    # a tiny lattice keeps the floor of 64 slots
    small = TableCache(tiny(), None, 2)
    try:
        assert small.compiled_tables.arena.meta.shape[0] == 64
    finally:
        small.release()


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("seed", range(4))
def test_keys_are_the_metrics_suppression_keys(metric: str, seed: int) -> None:
    """The driver's keys (``_keys``: for the metrics with lifted numbers without
    suppression, one floor for every node) are ``Metric.suppression_keys`` bit for bit,
    with and without suppression: the static order and every pruning of the search are
    the Python search's."""
    problem = random_problem(seed)
    tops = lattice_tops(problem, None)
    lattice = Lattice(tops)
    prepared = prepare_metric(metric, problem)
    for k in (2, 5, 11):
        static = prepared.lower_bounds(lattice.levels)
        for allowed in (0, 30):
            least = bounds.lattice_suppression_bounds(problem, tops, lattice.size, k, allowed)
            may = np.flatnonzero(least <= allowed)
            levels = lattice.levels[may]
            want = prepared.suppression_keys(levels, static[may], least[may], k)
            got = compiled_search._keys(prepared, levels, static[may], least[may], k, allowed)
            assert got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()


def test_the_released_cache_has_no_tables() -> None:
    cache = TableCache(tiny(), None, 2)
    cache.release()
    with pytest.raises(RuntimeError, match="released"):
        cache.compiled_tables  # noqa: B018
