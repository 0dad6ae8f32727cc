"""Microaggregation: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques.microaggregation import (
    MicroaggregationParams,
    _standardised,
    mdav_groups,
    mdav_univariate,
    microaggregate,
)


def test_mdav_by_hand() -> None:
    # n = 10 ≥ 3k: centroid 13.2; farthest r = 30; farthest from r: s = 1.
    # r's group {30, 22, 21}; s's group {1, 2, 3}; 4 left < 2k: one group {10, 11, 12, 20}.
    values = [1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 20.0, 21.0, 22.0, 30.0]
    labels = mdav_groups(np.array(values)[:, None], 3)
    assert labels.tolist() == [1, 1, 1, 2, 2, 2, 2, 0, 0, 0]
    result = microaggregate(pl.DataFrame({"x": values}), MicroaggregationParams(("x",), k=3))
    assert result.data["x"].to_list() == pytest.approx([2.0] * 3 + [13.25] * 4 + [73 / 3] * 3)
    assert result.smallest_group == 3


def test_mdav_two_to_three_k_left() -> None:
    # 5 records, k = 2: 5 < 3k; ≥ 2k: farthest from centroid 4.4 is 10, with 5 → {5, 10};
    # the rest {1, 2, 4} form the last group.
    labels = mdav_groups(np.array([1.0, 2.0, 4.0, 5.0, 10.0])[:, None], 2)
    assert labels.tolist() == [1, 1, 1, 0, 0]


def test_microaggregation_refuses_missing_values() -> None:
    with pytest.raises(EngineInputError, match="missing values"):
        microaggregate(pl.DataFrame({"x": [1.0, None, 3.0]}), MicroaggregationParams(("x",), 2))


# --- one variable in O(n log n) (issue 23, item 7: about 6.6 h for a million rows) --------


def test_univariate_mdav_by_hand() -> None:
    # the same data as test_mdav_by_hand, given in another order: the same groups
    values = np.array([20.0, 1.0, 30.0, 11.0, 2.0, 22.0, 3.0, 12.0, 21.0, 10.0])
    labels = mdav_univariate(values, 3).tolist()
    # r = 30 (farther from 13.2 than 1) with 22, 21; s = 1 with 2, 3; the rest
    assert labels == [2, 1, 0, 2, 1, 0, 1, 2, 0, 2]
    assert labels == mdav_groups(values[:, None], 3).tolist()


def test_univariate_mdav_ties_go_to_the_earliest_row() -> None:
    # 1..6, k = 2: the centroid 3.5 is as far from 1 as from 6: the earlier row, 1's, is r
    assert mdav_univariate(np.array([1.0, 2, 3, 4, 5, 6]), 2).tolist() == [0, 0, 2, 2, 1, 1]
    # reversed, 6 is on the earlier row: r = 6
    assert mdav_univariate(np.array([6.0, 5, 4, 3, 2, 1]), 2).tolist() == [0, 0, 2, 2, 1, 1]
    # equal values: groups take the earliest rows first; 7 < 3k, ≥ 2k: r's group, then rest
    assert mdav_univariate(np.full(7, 5.0), 3).tolist() == [0, 0, 0, 1, 1, 1, 1]


def test_univariate_mdav_splits_a_run_of_equal_values_by_row() -> None:
    # three 1s and seven 9s, k = 3: centroid 6.6 is farther from 1: r = 1 with the other 1s;
    # s = 9 with the two earliest other 9s (rows 3, 4, 5); four left: one group
    values = np.array([1.0, 1, 1, 9, 9, 9, 9, 9, 9, 9])
    assert mdav_univariate(values, 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]
    # shuffled ties: 3,1,3,2,1,3 with k = 2: centroid 13/6 is farther from 1 (rows 1 and 4);
    # s = 3 takes its earliest rows 0 and 2; 2 and the last 3 are left
    values = np.array([3.0, 1, 3, 2, 1, 3])
    assert mdav_univariate(values, 2).tolist() == [1, 0, 1, 2, 0, 2]


@pytest.mark.parametrize("seed", range(12))
def test_univariate_mdav_gives_mdav_s_groups(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 400))
    k = int(rng.integers(2, max(3, min(8, n // 2 + 1))))
    values = rng.normal(50, 15, n) if seed % 2 else rng.exponential(3.0, n) * 1000
    expected = mdav_groups(_standardised(values[:, None]), k)
    assert mdav_univariate(values, k).tolist() == expected.tolist()


def test_microaggregation_of_one_variable_keeps_its_results() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(40, 12, 300).round(1)
    result = microaggregate(pl.DataFrame({"x": values}), MicroaggregationParams(("x",), k=4))
    labels = mdav_groups(_standardised(values[:, None]), 4)
    means = {g: values[labels == g].mean() for g in set(labels.tolist())}
    assert result.data["x"].to_list() == pytest.approx([means[g] for g in labels])
    assert result.smallest_group >= 4


def test_several_variables_together_are_refused_past_the_measured_size(monkeypatch) -> None:
    from apps.engine.techniques import microaggregation

    monkeypatch.setattr(microaggregation, "MULTIVARIATE_MAX_ROWS", 50)
    frame = pl.DataFrame({"x": np.arange(60.0), "y": np.arange(60.0) % 7})
    with pytest.raises(EngineInputError) as refused:
        microaggregate(frame, MicroaggregationParams(("x", "y"), k=3))
    assert str(refused.value) == (
        "microaggregation of 2 variables together: at most 50 rows (this data has 60); its "
        "time grows with the square of the rows. Aggregate each variable on its own."
    )
    assert (
        microaggregate(frame.head(50), MicroaggregationParams(("x", "y"), k=3)).smallest_group >= 3
    )
