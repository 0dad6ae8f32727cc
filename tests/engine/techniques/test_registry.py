"""The wizard's entry point: every technique applied, measured and reported the same way."""

from __future__ import annotations

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.masking import new_key
from apps.engine.techniques.date_shift import DateShiftParams
from apps.engine.techniques.iso20889 import ISO_20889
from apps.engine.techniques.local_suppression import LocalSuppressionParams
from apps.engine.techniques.microaggregation import MicroaggregationParams
from apps.engine.techniques.noise import NoiseParams
from apps.engine.techniques.pram import PramParams
from apps.engine.techniques.rank_swap import RankSwapParams
from apps.engine.techniques.registry import apply_technique, preview_technique
from apps.engine.techniques.rounding import RoundingParams, TopBottomParams
from apps.engine.techniques.synthetic import SyntheticParams

DATA = pl.DataFrame(
    {
        "person": [f"P{i}" for i in range(40)],
        "age": [20 + (i * 7) % 60 for i in range(40)],
        "sex": ["F", "M"] * 20,
        "visit": ["2024-01-01"] * 40,
    }
)
QUASI = ("age", "sex")


@pytest.mark.parametrize(
    ("params", "key", "rule"),
    [
        (LocalSuppressionParams(QUASI, k=2), "local_suppression", "exact_match"),
        (MicroaggregationParams(("age",), k=4), "microaggregation", "exact_match"),
        (NoiseParams(("age",), seed=1), "noise", "record_linkage"),
        (RoundingParams(("age",), 10), "rounding", "exact_match"),
        (TopBottomParams("age", top=70), "top_bottom_coding", "exact_match"),
        (PramParams("sex", seed=1), "pram", "record_linkage"),
        (RankSwapParams(("age",), seed=1), "rank_swap", "record_linkage"),
        (DateShiftParams("person", ("visit",), key=new_key()), "date_shift", "record_linkage"),
    ],
)
def test_every_technique_is_applied_and_measured(params: object, key: str, rule: str) -> None:
    outcome = apply_technique(DATA, params, quasi=QUASI)  # type: ignore[arg-type]
    assert outcome.technique == key and outcome.data.height == 40
    assert outcome.measure is not None and outcome.measure.rule == rule
    assert outcome.explanation and outcome.source
    assert outcome.iso_class == ISO_20889[key]  # the report prints its ISO/IEC 20889 class
    assert "seed" not in outcome.parameters and "key" not in outcome.parameters
    assert {e.column for e in outcome.measure.utility} == set(outcome.changed)


def test_microaggregation_reaches_k_on_its_variable() -> None:
    outcome = apply_technique(DATA, MicroaggregationParams(("age",), k=4), quasi=("age",))
    assert outcome.measure is not None and outcome.measure.exact.smallest_class >= 4


def test_synthetic_has_its_own_checks() -> None:
    outcome = apply_technique(DATA.select(QUASI), SyntheticParams(seed=2, targets=5), quasi=QUASI)
    assert outcome.measure is None
    attacks = outcome.detail.privacy.attacks
    assert attacks.release_kind == "synthetic" and attacks.targets == 5
    assert attacks.quasi == ("age",) and attacks.sensitive == ("sex",)


def test_preview_uses_a_fixed_sample() -> None:
    big = pl.concat([DATA] * 10)
    first = preview_technique(big, RoundingParams(("age",), 5), quasi=QUASI, rows=50)
    second = preview_technique(big, RoundingParams(("age",), 5), quasi=QUASI, rows=50)
    assert first.data.height == 50 and first.data.equals(second.data)


def test_unknown_parameters_are_refused() -> None:
    with pytest.raises(EngineInputError, match="no technique takes"):
        apply_technique(DATA, object(), quasi=QUASI)  # type: ignore[arg-type]


EMPTY = DATA.head(0)


@pytest.mark.parametrize(
    "params",
    [
        LocalSuppressionParams(QUASI, k=2),
        NoiseParams(("age",), seed=1),
        RoundingParams(("age",), 10),
        TopBottomParams("age", top=70),
        RankSwapParams(("age",), seed=1),
        DateShiftParams("person", ("visit",), key=bytes(32)),
    ],
)
def test_no_rows_in_no_rows_out(params: object) -> None:
    outcome = apply_technique(EMPTY, params, quasi=QUASI)  # type: ignore[arg-type]
    assert outcome.data.height == 0
    assert outcome.measure is not None and outcome.measure.exact.rows == 0
