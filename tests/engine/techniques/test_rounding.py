"""Rounding, top/bottom: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques.rounding import (
    RoundingParams,
    TopBottomParams,
    base_rounding,
    round_to_base,
    top_bottom_code,
)


def test_base_x_rounding() -> None:
    values = np.array([0.0, 2.0, 2.5, 7.49, 12.0, np.nan])
    assert round_to_base(values, 5)[:5].tolist() == [0.0, 0.0, 5.0, 5.0, 10.0]
    data = pl.DataFrame({"income": [41_300, 38_499, 38_500]})
    result = base_rounding(data, RoundingParams(("income",), 1000))
    assert result.data["income"].to_list() == [41_000, 38_000, 39_000]
    assert result.data["income"].dtype == pl.Int64
    assert result.changed == {"income": 3}


def test_ages_over_89_are_top_coded_as_90_plus() -> None:
    data = pl.DataFrame({"age": [34, 89, 90, 97, None, 12]})
    labelled = top_bottom_code(data, TopBottomParams("age", top=90, bottom=15, labels=True))
    assert labelled.data["age"].to_list() == ["34", "89", "90+", "90+", None, "<=15"]
    assert (labelled.top_coded, labelled.bottom_coded) == (2, 1)
    numeric = top_bottom_code(data, TopBottomParams("age", top=90))
    assert numeric.data["age"].to_list() == [34, 89, 90, 90, None, 12]


def test_rounding_errors_are_named() -> None:
    with pytest.raises(EngineInputError, match="base must be positive"):
        base_rounding(pl.DataFrame({"x": [1]}), RoundingParams(("x",), 0))
    with pytest.raises(EngineInputError, match="must be numeric"):
        base_rounding(pl.DataFrame({"x": ["a"]}), RoundingParams(("x",), 5))
    with pytest.raises(EngineInputError, match="bottom must be below"):
        top_bottom_code(pl.DataFrame({"x": [1]}), TopBottomParams("x", top=5, bottom=5))
