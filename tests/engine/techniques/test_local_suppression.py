"""Local suppression: hand-computed optima, the blank rules, an exhaustive oracle, sdcMicro."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import row_codes
from apps.engine.techniques.local_suppression import (
    LocalSuppressionParams,
    local_suppression,
    measure_blanks,
)
from apps.engine.techniques.local_suppression.rules import (
    intruder_candidates,
    own_value_class_sizes,
    wildcard_class_sizes,
)
from apps.engine.techniques.local_suppression.sdcmicro import sdcmicro_local_suppression

# Seed 004's example: one very young married respondent among young never-married ones.
PORTAGE = pl.DataFrame(
    {
        "age": ["15-19"] * 6 + ["30-39"] * 6,
        "marital": ["married"] + ["never"] * 5 + ["married"] * 3 + ["never"] * 3,
        "income": list(range(12)),
    }
)
QUASI = ("age", "marital")


def test_portage_marital_status_is_blanked_with_the_fewest_cells() -> None:
    # k = 3: her class has 1 record.  Blanking her marital status alone leaves
    # ("15-19", blank) with one record; two young never-married records must join it
    # (5 - 2 = 3 stay).  Blanking age instead needs all three married 30-39 (4 cells).
    result = local_suppression(PORTAGE, LocalSuppressionParams(QUASI, k=3, method="exact"))
    assert result.optimal
    assert result.blanked_cells == 3
    assert result.blanked_by_column == {"age": 0, "marital": 3}
    assert result.data["marital"][0] is None  # hers
    assert result.data.filter(pl.col("marital").is_null())["age"].to_list() == ["15-19"] * 3
    assert result.data["income"].to_list() == list(range(12))  # other columns untouched
    assert result.risk("own_value").smallest_class == 3
    assert result.risk("intruder").smallest_class == 3


def test_importance_moves_the_blanks_to_the_cheaper_variable() -> None:
    # Marital status 10× as important: 4 age cells (cost 4) beat 3 marital cells (cost 30).
    params = LocalSuppressionParams(QUASI, k=3, importance={"marital": 10.0}, method="exact")
    result = local_suppression(PORTAGE, params)
    assert result.blanked_by_column == {"age": 4, "marital": 0}
    assert result.weighted_cost == 4.0
    assert (
        sorted(result.data.filter(pl.col("age").is_null())["marital"].to_list()) == ["married"] * 4
    )


def test_heuristic_reports_a_bound_no_larger_than_its_cost() -> None:
    result = local_suppression(PORTAGE, LocalSuppressionParams(QUASI, k=3, method="heuristic"))
    assert result.risk("own_value").smallest_class >= 3
    assert result.lower_bound <= result.weighted_cost
    assert result.blanked_cells >= 3


def test_the_wildcard_rule_overstates_protection_of_the_portage_respondent() -> None:
    codes, _ = row_codes(PORTAGE, QUASI)
    released = codes.copy()
    released[0, 1] = 0  # blank her marital status only
    # Released: (Y, blank), (Y, never)×5, (O, married)×3, (O, never)×3.
    assert wildcard_class_sizes(released).tolist() == [6] * 6 + [3] * 6
    assert own_value_class_sizes(released).tolist() == [1, 5, 5, 5, 5, 5] + [3] * 6
    # An intruder who knows she is young and married finds one record that can be hers.
    assert intruder_candidates(codes, released).tolist() == [1] + [6] * 5 + [3] * 6


def test_rules_on_missing_values_in_the_original() -> None:
    codes = np.array([[1, 0], [1, 2], [1, 0]])  # 0 = missing
    released = codes.copy()
    assert own_value_class_sizes(released).tolist() == [2, 1, 2]
    assert wildcard_class_sizes(released).tolist() == [3, 3, 3]
    # A truly missing value is known as missing: it matches only blanks.
    assert intruder_candidates(codes, released).tolist() == [2, 3, 2]


def _brute_force_minimum(codes: np.ndarray, k: int) -> int:
    """Fewest blanked cells over every choice of blank pattern per row (own-value rule)."""
    n, m = codes.shape
    best = n * m
    for patterns in itertools.product(range(1 << m), repeat=n):
        released = codes.copy()
        cells = 0
        for i, p in enumerate(patterns):
            for j in range(m):
                if p >> j & 1 and released[i, j]:
                    released[i, j] = 0
                    cells += 1
        if cells < best and own_value_class_sizes(released).min() >= k:
            best = cells
    return best


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xyz")), min_size=3, max_size=6),
    k=st.integers(2, 3),
)
def test_exact_matches_exhaustive_search_and_heuristic_is_bounded(
    rows: list[tuple[str, str]], k: int
) -> None:
    if len(rows) < k:
        return
    data = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows]})
    codes, _ = row_codes(data, ("a", "b"))
    minimum = _brute_force_minimum(codes, k)
    exact = local_suppression(data, LocalSuppressionParams(("a", "b"), k=k, method="exact"))
    assert exact.optimal and exact.blanked_cells == minimum
    heuristic = local_suppression(data, LocalSuppressionParams(("a", "b"), k=k, method="heuristic"))
    assert heuristic.blanked_cells >= minimum
    assert heuristic.lower_bound <= minimum + 1e-6
    assert heuristic.risk("own_value").smallest_class >= k


def test_three_rows_need_six_cells_under_the_own_value_rule() -> None:
    data = pl.DataFrame({"a": ["a", "a", "b"], "b": ["x", "y", "y"]})
    result = local_suppression(data, LocalSuppressionParams(("a", "b"), k=2, method="exact"))
    assert result.blanked_cells == 6 and result.optimal


def test_sdcmicro_heuristic_blanks_one_cell_per_visit() -> None:
    # Hand-traced: (a,x) → nearest (a,y) differs on b → (a,·); (a,y) → nearest (b,y)
    # differs on a → (·,y); (b,y) → nearest (a,·) differs on a → (·,y).  3 cells, where
    # under sdcMicro's own wildcard rule 2 suffice ((a,·) and (·,y) for the last row).
    codes = np.array([[1, 1], [1, 2], [2, 2]])
    outcome = sdcmicro_local_suppression(codes, [2, 2], 2, rule="wildcard")
    assert outcome.blanked.tolist() == [[False, True], [True, False], [True, False]]
    released = codes.copy()
    released[outcome.blanked] = 0
    assert wildcard_class_sizes(released).min() >= 2
    two = codes.copy()
    two[0, 1] = 0
    two[2, 0] = 0
    assert wildcard_class_sizes(two).tolist() == [3, 3, 3]


def test_measure_blanks_reports_every_rule() -> None:
    codes, _ = row_codes(PORTAGE, QUASI)
    released = codes.copy()
    released[0, 1] = 0
    risks = {r.rule: r for r in measure_blanks(codes, released, 3)}
    assert risks["own_value"].smallest_class == 1 and risks["own_value"].rows_below_k == 1
    assert risks["wildcard"].smallest_class == 3 and risks["wildcard"].rows_below_k == 0
    assert risks["intruder"].max_risk == 1.0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (LocalSuppressionParams(("age",), k=20), "12 rows cannot form a class of 20"),
        (LocalSuppressionParams(("nope",), k=2), "unknown quasi-identifier"),
        (LocalSuppressionParams(QUASI, k=2, importance={"income": 2.0}), "not among"),
        (LocalSuppressionParams(QUASI, k=2, importance={"age": 0.0}), "positive"),
        (LocalSuppressionParams(QUASI, k=0), "at least 1"),
    ],
)
def test_bad_input_is_named(params: LocalSuppressionParams, message: str) -> None:
    with pytest.raises(EngineInputError, match=message):
        local_suppression(PORTAGE, params)


def test_nothing_to_do_when_already_k_anonymous() -> None:
    result = local_suppression(PORTAGE, LocalSuppressionParams(("age",), k=6))
    assert result.blanked_cells == 0 and result.optimal
