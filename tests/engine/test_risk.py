from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.engine.context import insider_attack, overall_risk
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode, encode_file
from apps.engine.risk import (
    average_risk,
    class_size_counts,
    class_size_histogram,
    data_risk,
    encoded_class_sizes,
    equivalence_class_sizes,
    max_risk,
    records_at_risk,
    risk_profile,
    smallest_class_size,
    strict_average_risk,
    uniques,
)
from tests.engine.conftest import ADULT_COLUMNS, adult_class_sizes

# Ten rows in four classes of sizes 1, 2, 3, 4 (computed by hand below).
TINY = pl.DataFrame(
    {
        "sex": ["F", "F", "F", "M", "M", "M", "M", "M", "M", "M"],
        "age": ["30", "30", "40", "30", "30", "30", "40", "40", "40", "40"],
    }
)


def tiny_sizes() -> list[int]:
    return sorted(encoded_class_sizes(encode(TINY, ["sex", "age"])).tolist())


def test_tiny_table_by_hand() -> None:
    sizes = tiny_sizes()
    assert sizes == [1, 2, 3, 4]  # (F,40) (F,30) (M,30) (M,40)
    assert smallest_class_size(sizes) == 1
    assert uniques(sizes) == 1
    assert max_risk(sizes) == 1.0  # 1 / 1
    assert average_risk(sizes) == pytest.approx(0.4)  # 4 classes / 10 rows
    # mean of p_i over rows: (1·1 + 2·1/2 + 3·1/3 + 4·1/4) / 10 = 4/10
    assert strict_average_risk(sizes) == 1.0  # max 1 > cap 0.33 → max risk
    assert data_risk(sizes, "public") == 1.0
    assert data_risk(sizes, "non_public") == 1.0


def test_strict_average_uses_average_below_cap() -> None:
    sizes = [3, 3, 4]  # 10 rows, 3 classes: max 1/3 = 0.333… > 0.33, average 0.3
    assert strict_average_risk(sizes, 0.33) == pytest.approx(1 / 3)
    assert strict_average_risk(sizes, 0.5) == pytest.approx(0.3)  # 1/3 ≤ 0.5 → average
    assert strict_average_risk([5, 5, 10], 0.33) == pytest.approx(3 / 20)  # max 0.2 ≤ 0.33
    with pytest.raises(EngineInputError, match="cap"):
        strict_average_risk(sizes, 0.4)


def test_release_model_rule() -> None:
    sizes = [5, 5, 10]  # max 0.2, average 3/20 = 0.15
    assert data_risk(sizes, "public") == pytest.approx(0.2)
    assert data_risk(sizes, "semi_public") == pytest.approx(0.2)
    assert data_risk(sizes, "non_public") == pytest.approx(0.15)
    with pytest.raises(EngineInputError, match="release model"):
        data_risk(sizes, "private")


def test_records_at_risk() -> None:
    # sizes 1,2,3,4: target 0.3 → rows with 1/f > 0.3 are f ≤ 3: 1 + 2 + 3 = 6 of 10
    result = records_at_risk([1, 2, 3, 4], 0.3)
    assert (result.rows, result.classes) == (6, 3)
    assert result.percent == pytest.approx(60.0)
    # 1/f = 0.1 exactly is not above 0.1
    assert records_at_risk([10, 9], 0.1).rows == 9
    with pytest.raises(EngineInputError):
        records_at_risk([1], 0.0)


def test_histogram_and_exact_counts() -> None:
    sizes = [1, 1, 2, 3, 4, 5, 9, 10, 19, 20, 100]
    histogram = {b.label: (b.classes, b.rows) for b in class_size_histogram(sizes)}
    assert histogram == {
        "1": (2, 2),
        "2": (1, 2),
        "3-4": (2, 7),
        "5-9": (2, 14),
        "10-19": (2, 29),
        "20+": (2, 120),
    }
    assert class_size_counts([2, 1, 2, 7]) == ((1, 1), (2, 2), (7, 1))


def test_empty_input_gives_zeros() -> None:
    profile = risk_profile([])
    assert (profile.rows, profile.equivalence_classes, profile.smallest_class) == (0, 0, 0)
    assert (profile.max_risk, profile.average_risk, profile.strict_average_risk) == (0, 0, 0)
    assert records_at_risk([], 0.1).share == 0.0
    with pytest.raises(EngineInputError):
        max_risk([0, 2])


def test_class_sizes_merge_and_suppression() -> None:
    tuples = pl.DataFrame(
        {"a": [0, 0, 1, 2], "b": [0, 1, 0, 0], "count": [3, 2, 1, 4]},
        schema={"a": pl.UInt32, "b": pl.UInt32, "count": pl.UInt32},
    )
    assert sorted(equivalence_class_sizes(tuples).tolist()) == [1, 2, 3, 4]
    assert sorted(equivalence_class_sizes(tuples, by=["a"]).tolist()) == [1, 4, 5]
    mask = np.array([False, False, True, False])  # the size-1 tuple is suppressed
    assert sorted(equivalence_class_sizes(tuples, suppressed=mask).tolist()) == [2, 3, 4]
    everything = np.ones(4, dtype=bool)
    assert equivalence_class_sizes(tuples, suppressed=everything).size == 0
    with pytest.raises(EngineInputError, match="mask"):
        equivalence_class_sizes(tuples, suppressed=np.ones(3, dtype=bool))


# --------------------------------------------------------------------------- PDPC 16.8

# The taxi data set of PDPC 16.8, before anonymisation (age, gender, occupation).
TAXI = pl.DataFrame(
    {
        "age": ["21", "38", "25", "44", "25", "31", "42", "22", "30"],
        "gender": ["F", "M", "F", "F", "F", "M", "F", "F", "F"],
        "occupation": [
            "Legal Counsel",
            "Data Privacy Officer",
            "Banker",
            "Database Administrator",
            "Administrative Assistant",
            "Data Privacy Officer",
            "Programmer",
            "Administrative Assistant",
            "Legal Counsel",
        ],
    }
)


def _taxi_generalized() -> pl.DataFrame:
    # Age to 10-year bands 21-30, 31-40, 41-50; programmer and DBA to "IT" (PDPC 16.8).
    band = ((pl.col("age").cast(pl.Int64) - 1) // 10) * 10 + 1
    it = pl.col("occupation").is_in(["Programmer", "Database Administrator"])
    return TAXI.with_columns(
        age=band.cast(pl.String) + " to " + (band + 9).cast(pl.String),
        occupation=pl.when(it).then(pl.lit("IT")).otherwise(pl.col("occupation")),
    )


def test_pdpc_taxi_example_k2() -> None:
    quasi = ["age", "gender", "occupation"]
    before = risk_profile(encoded_class_sizes(encode(TAXI, quasi)))
    assert (before.rows, before.equivalence_classes, before.uniques) == (9, 9, 9)
    assert before.max_risk == 1.0

    encoded = encode(_taxi_generalized(), quasi)
    assert sorted(encoded_class_sizes(encoded).tolist()) == [1, 2, 2, 2, 2]  # the banker alone
    banker = encoded.dictionaries[2].to_list().index("Banker")
    suppressed = encoded.tuples.get_column("occupation") == banker
    sizes = equivalence_class_sizes(encoded.tuples, suppressed=suppressed)
    after = risk_profile(sizes)
    assert (after.rows, after.equivalence_classes, after.smallest_class) == (8, 4, 2)
    assert after.max_risk == 0.5 and after.average_risk == 0.5  # k = 2: risk 50% (16.8 note)
    # PDPC 17.12: P(re-ID) = 1/k × P(attempt); high controls, low motives → 0.03
    attempt = insider_attack("high", "low", profile="pdpc_2018").probability
    assert overall_risk(after.max_risk, attempt, 0.2).value == pytest.approx(0.015)


# --------------------------------------------------------------------------- adult


@pytest.mark.parametrize("columns", [ADULT_COLUMNS, ADULT_COLUMNS[:-1]], ids=["9 QIs", "8 QIs"])
def test_adult_figures_match_an_independent_count(
    adult_path: Path, columns: tuple[str, ...]
) -> None:
    reference = adult_class_sizes(columns)
    profile = risk_profile(encoded_class_sizes(encode_file(adult_path, columns)))
    assert profile.rows == sum(reference) == 30_162
    assert profile.equivalence_classes == len(reference)
    assert profile.smallest_class == min(reference)
    assert profile.uniques == sum(1 for f in reference if f == 1)
    assert profile.max_risk == 1 / min(reference)
    assert profile.average_risk == pytest.approx(len(reference) / sum(reference), abs=1e-15)
    counts: dict[int, int] = {}
    for f in reference:
        counts[f] = counts.get(f, 0) + 1
    assert dict(profile.class_size_counts) == counts
    if len(columns) == 9:
        assert profile.equivalence_classes == 19_502


@given(st.lists(st.integers(min_value=1, max_value=60), max_size=80), st.sampled_from([0.33, 0.5]))
def test_profile_agrees_with_the_one_formula_functions(sizes: list[int], cap: float) -> None:
    profile = risk_profile(sizes, cap=cap)
    assert profile.rows == sum(sizes) and profile.equivalence_classes == len(sizes)
    assert profile.smallest_class == smallest_class_size(sizes)
    assert profile.uniques == uniques(sizes)
    assert profile.max_risk == max_risk(sizes)
    assert profile.average_risk == average_risk(sizes)
    assert profile.strict_average_risk == strict_average_risk(sizes, cap)
    assert profile.histogram == class_size_histogram(sizes)
    assert profile.class_size_counts == class_size_counts(sizes)
    # average risk = mean over rows of 1/f, computed the long way
    per_row = [1 / f for f in sizes for _ in range(f)]
    assert profile.average_risk == pytest.approx(sum(per_row) / len(per_row) if per_row else 0.0)
