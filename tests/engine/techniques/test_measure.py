"""Measuring a technique's output: exact-match risk, record linkage, utility (hand-computed)."""

from __future__ import annotations

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques.measure import (
    correlation_change,
    distribution_table,
    exact_match_risk,
    linkage_risk,
    measure_technique,
    variable_effect,
)


def test_exact_match_risk_counts_a_blank_as_its_own_value() -> None:
    released = pl.DataFrame({"age": ["1", "1", None, None, "2"], "sex": ["F"] * 5})
    profile = exact_match_risk(released, ["age", "sex"])
    assert (profile.equivalence_classes, profile.smallest_class) == (3, 1)
    assert profile.max_risk == 1.0


def test_linkage_by_hand() -> None:
    original = pl.DataFrame({"x": [0.0, 10.0, 20.0, 30.0]})
    # Rows 0 and 1 stay nearest to themselves; rows 2 and 3 swap places.
    released = pl.DataFrame({"x": [1.0, 11.0, 30.0, 20.0]})
    risk = linkage_risk(original, released, ["x"])
    assert risk.expected_links == pytest.approx(2.0) and risk.share == pytest.approx(0.5)


def test_linkage_shares_credit_between_ties() -> None:
    # Categories only: the two "a" records tie for both "a" people (credit 1/2 each);
    # "b" is unique (credit 1).
    original = pl.DataFrame({"c": ["a", "a", "b"]})
    risk = linkage_risk(original, original, ["c"])
    assert risk.expected_links == pytest.approx(2.0)


def test_variable_effect_numeric() -> None:
    effect = variable_effect(
        pl.Series("x", [1.0, 2.0, 3.0, None]), pl.Series("x", [2.0, 2.0, 4.0, None])
    )
    assert effect.numeric
    assert (effect.mean_before, effect.mean_after) == pytest.approx((2.0, 8 / 3))
    assert effect.variance_before == pytest.approx(2 / 3)
    assert effect.variance_after == pytest.approx(8 / 9)
    assert effect.changed_share == pytest.approx(0.5)
    assert effect.correlation == pytest.approx(0.8660254)
    assert (effect.missing_before, effect.missing_after) == (1, 1)


def test_variable_effect_categorical() -> None:
    effect = variable_effect(
        pl.Series("m", ["a", "a", "b", "b"]), pl.Series("m", ["a", "b", "b", None])
    )
    # Shares a ½ → ¼, b ½ → ½, missing 0 → ¼: TV = ½(¼ + 0 + ¼) = ¼.
    assert effect.distribution_distance == pytest.approx(0.25)
    assert effect.changed_share == pytest.approx(0.5)
    assert effect.mean_before is None and effect.missing_after == 1
    assert effect.distribution is not None and effect.distribution.height == 3


def test_correlation_change() -> None:
    original = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]})
    released = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [3.0, 2.0, 1.0]})
    assert correlation_change(original, released, ["x", "y"]) == pytest.approx(2.0)


def test_measure_technique_picks_the_rule() -> None:
    original = pl.DataFrame({"x": [0.0, 10.0, 20.0, 30.0]})
    released = pl.DataFrame({"x": [1.0, 11.0, 30.0, 20.0]})
    noisy = measure_technique("noise", original, released, ["x"])
    assert noisy.rule == "record_linkage" and noisy.linkage is not None
    assert noisy.exact.uniques == 4
    rounded = measure_technique("rounding", original, original, ["x"])
    assert rounded.rule == "exact_match" and rounded.linkage is None
    with pytest.raises(EngineInputError, match="unknown technique"):
        measure_technique("magic", original, original, ["x"])


def test_distribution_table_categories() -> None:
    table = distribution_table(
        pl.Series("m", ["a", "a", "b", "b"]), pl.Series("m", ["a", "b", "b", None])
    )
    assert table.rows() == [("(missing)", 0.0, 0.25), ("a", 0.5, 0.25), ("b", 0.5, 0.5)]


def test_distribution_table_numbers_use_the_original_quantiles() -> None:
    # Quartile edges of 1..8: 1, 2.75, 4.5, 6.25, 8.  After rounding to 5: 0, 0, 5, 5, 5,
    # 5, 5, 10 (0 falls in the first bin, 10 in the last).
    before = pl.Series("x", [1.0, 2, 3, 4, 5, 6, 7, 8])
    after = pl.Series("x", [0.0, 0, 5, 5, 5, 5, 5, 10])
    table = distribution_table(before, after, bins=4)
    assert table["value"].to_list() == ["[1, 2.75)", "[2.75, 4.5)", "[4.5, 6.25)", "[6.25, 8]"]
    assert table["before"].to_list() == [0.25, 0.25, 0.25, 0.25]
    assert table["after"].to_list() == [0.25, 0.0, 0.625, 0.125]
