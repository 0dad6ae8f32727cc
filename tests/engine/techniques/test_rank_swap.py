"""Rank swapping: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl

from apps.engine.techniques.rank_swap import RankSwapParams, rank_swap, rank_swap_values


def test_rank_swap_with_a_window_of_one_swaps_neighbours() -> None:
    # Ranks: 1 (row 1), 2 (row 3), 3 (row 4), 4 (row 2), 5 (row 0); pairs (1,2), (3,4);
    # 5 has no partner left.
    out = rank_swap_values(np.array([5.0, 1.0, 4.0, 2.0, 3.0]), 1, np.random.default_rng(0))
    assert out.tolist() == [5.0, 2.0, 3.0, 1.0, 4.0]


def test_rank_swap_keeps_the_distribution_and_is_seeded() -> None:
    data = pl.DataFrame({"x": list(range(200))})
    first = rank_swap(data, RankSwapParams(("x",), percent=5, seed=3))
    assert first.data.equals(rank_swap(data, RankSwapParams(("x",), percent=5, seed=3)).data)
    swapped = first.data["x"].to_numpy()
    assert sorted(swapped) == list(range(200))
    assert np.abs(swapped - np.arange(200)).max() <= 10  # 5 % of 200 ranks
    assert first.swapped["x"] >= 198  # every value has a partner but perhaps the last
