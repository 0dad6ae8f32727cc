"""The generalization lattice: numbering, neighbours, up-/down-sets, tie order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.lattice import Lattice, max_nodes, node_bytes, search_memory, set_search_memory


def test_size_and_numbering_is_lexicographic() -> None:
    lat = Lattice([2, 1, 3])
    assert lat.size == 3 * 2 * 4
    nodes = [lat.node(i) for i in range(lat.size)]
    assert nodes == sorted(itertools.product(range(3), range(2), range(4)))
    assert all(lat.index(n) == i for i, n in enumerate(nodes))
    assert lat.node(lat.bottom) == (0, 0, 0)
    assert lat.node(lat.top) == (2, 1, 3)


def test_neighbours() -> None:
    lat = Lattice([2, 1, 3])
    i = lat.index((1, 0, 3))
    assert sorted(lat.node(p) for p in lat.predecessors(i)) == [(0, 0, 3), (1, 0, 2)]
    assert sorted(lat.node(s) for s in lat.successors(i)) == [(1, 1, 3), (2, 0, 3)]
    assert lat.predecessors(lat.bottom) == []
    assert lat.successors(lat.top) == []


def test_up_and_down_sets() -> None:
    lat = Lattice([2, 1, 3])
    i = lat.index((1, 0, 2))
    up = {lat.node(int(j)) for j in np.flatnonzero(lat.generalizations_mask(i))}
    down = {lat.node(int(j)) for j in np.flatnonzero(lat.specializations_mask(i))}
    assert up == {n for n in itertools.product(range(1, 3), range(2), range(2, 4))}
    assert down == {n for n in itertools.product(range(2), range(1), range(3))}


def test_tie_order_total_level_then_lexicographic() -> None:
    lat = Lattice([1, 2])
    rank = lat.tie_order()
    ordered = sorted(range(lat.size), key=lambda i: rank[i])
    assert [lat.node(i) for i in ordered] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (0, 2),
        (1, 1),
        (1, 2),
    ]


def test_no_quasi_identifiers_is_one_node() -> None:
    lat = Lattice([])
    assert lat.size == 1
    assert lat.node(0) == ()
    assert lat.generalizations_mask(0).tolist() == [True]


def test_bad_levels() -> None:
    lat = Lattice([1, 1])
    with pytest.raises(EngineInputError):
        lat.index((2, 0))
    with pytest.raises(EngineInputError):
        Lattice([-1])
    with pytest.raises(EngineInputError, match="lattice has"):
        Lattice([9] * 9)


def test_the_node_limit_follows_the_memory_budget() -> None:
    # 600 + 2 x 9 = 618 measured bytes a node (bench/bench_lattice_memory.py): 2 GiB hold
    # 2^31 // 618 = 3,474,892 nodes with 9 QIs, no longer the round 2,000,000.
    assert node_bytes(9) == 618
    assert max_nodes(9, 2048 << 20) == (2048 << 20) // 618 == 3_474_892
    before = search_memory()
    try:
        set_search_memory(node_bytes(2) * 6)  # room for 6 nodes with 2 QIs
        assert max_nodes(2) == 6
        assert Lattice([2, 1]).size == 6
        with pytest.raises(EngineInputError, match=r"more than the 6 its memory budget"):
            Lattice([2, 2])
        with pytest.raises(EngineInputError, match="must be positive"):
            set_search_memory(0)
    finally:
        set_search_memory(before)
