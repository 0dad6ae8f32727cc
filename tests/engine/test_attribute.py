from __future__ import annotations

import polars as pl
import pytest

from apps.engine.attribute import l_diversity
from apps.engine.errors import EngineInputError

# Classes on (sex, age): (F,30) ×3, (M,30) ×2, (M,40) ×1.
DATA = pl.DataFrame(
    {
        "sex": ["F", "F", "F", "M", "M", "M"],
        "age": ["30", "30", "30", "30", "30", "40"],
        "diagnosis": ["flu", "flu", "flu", "flu", "HIV", "cold"],
        "income": ["low", "high", None, "low", "low", "mid"],
    }
)


def test_distinct_l_diversity_by_hand() -> None:
    diagnosis, income = l_diversity(DATA.lazy(), ["sex", "age"], ["diagnosis", "income"])
    # diagnosis: l = 1 (F,30 all flu), 2 (M,30), 1 (M,40 singleton)
    assert diagnosis.column == "diagnosis"
    assert (diagnosis.classes, diagnosis.rows, diagnosis.smallest_l) == (3, 6, 1)
    assert (diagnosis.homogeneous_classes, diagnosis.homogeneous_rows) == (2, 4)
    assert (diagnosis.homogeneous_shared_classes, diagnosis.homogeneous_shared_rows) == (1, 3)
    # income: l = 3 (low, high, missing), 1 (M,30 both low), 1 (singleton)
    assert income.smallest_l == 1
    assert (income.homogeneous_classes, income.homogeneous_rows) == (2, 3)
    assert (income.homogeneous_shared_classes, income.homogeneous_shared_rows) == (1, 2)


def test_empty_and_errors() -> None:
    (empty,) = l_diversity(DATA.clear(), ["sex"], ["diagnosis"])
    assert (empty.classes, empty.rows, empty.smallest_l) == (0, 0, 0)
    with pytest.raises(EngineInputError, match="both quasi-identifier and sensitive"):
        l_diversity(DATA, ["sex", "age"], ["age"])
    with pytest.raises(EngineInputError, match="unknown sensitive"):
        l_diversity(DATA, ["sex"], ["salary"])
