"""Microaggregation: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques.microaggregation import (
    MicroaggregationParams,
    mdav_groups,
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
