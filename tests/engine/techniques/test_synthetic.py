"""Synthetic data: the Chow-Liu model and the attack measures, on hand-made data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.attacks import (
    EXACT,
    INFERENCE,
    LINKABILITY,
    NEAREST,
    SINGLING_OUT,
    attack_synthetic,
)
from apps.engine.errors import EngineInputError
from apps.engine.techniques.synthetic import SyntheticParams, synthesize
from apps.engine.techniques.synthetic.chow_liu import fit, mutual_information, sample
from apps.engine.techniques.synthetic.privacy import exact_copies


def test_mutual_information_by_hand() -> None:
    same = np.array([0, 0, 1, 1])
    assert mutual_information(same, same) == pytest.approx(1.0)  # one bit
    assert mutual_information(same, np.array([0, 1, 0, 1])) == pytest.approx(0.0)


def _linked(rows: int = 400) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, rows)
    return pl.DataFrame(
        {
            "a": [f"a{v}" for v in a],
            "b": [f"b{v}" for v in a],  # b is a function of a
            "c": [f"c{v}" for v in rng.integers(0, 2, rows)],  # independent
        }
    )


def test_tree_links_the_dependent_pair_and_sampling_keeps_it() -> None:
    data = _linked()
    model = fit(data, ["a", "b", "c"])
    assert model.parents[:2] == (None, 0)  # b hangs from a
    # P(b | a) is deterministic, so every synthetic record keeps b = a.
    drawn = sample(model, 500, np.random.default_rng(1))
    assert (drawn["a"].str.slice(1) == drawn["b"].str.slice(1)).all()
    assert set(drawn["c"].to_list()) == {"c0", "c1"}


def test_numeric_values_are_drawn_inside_their_bins() -> None:
    data = pl.DataFrame({"x": [float(v) for v in range(100)], "g": ["u"] * 50 + ["v"] * 50})
    model = fit(data, ["x", "g"], bins=4)
    drawn = sample(model, 300, np.random.default_rng(2))
    assert drawn["x"].min() >= 0.0 and drawn["x"].max() <= 99.0
    # x and g are perfectly linked by halves: a "u" is always drawn in the lower half.
    assert drawn.filter(pl.col("g") == "u")["x"].max() <= 49.5 + 1e-9


def test_a_generator_that_copies_its_training_rows_is_caught() -> None:
    training = pl.DataFrame({"x": [1.0, 5.0, 9.0, 13.0], "y": ["a", "b", "c", "d"]})
    control = pl.DataFrame({"x": [2.0, 6.0, 10.0, 14.0], "y": ["d", "c", "b", "a"]})
    # The worst generator copies its training rows.  A training person (x known, y secret)
    # finds their copy, alone: singled out, linked to it, their y read off it.  A control
    # person (one away from a training one) finds no equal x; the nearest record is the
    # training neighbour's, whose y is never theirs.
    synthetic = training.clone()
    assert exact_copies(training, synthetic, ["x", "y"]) == 4
    report = attack_synthetic(
        training, control, synthetic, known=["x"], sensitive=["y"], seed=1, targets=4
    )
    assert report.release_kind == "synthetic" and report.targets == 4

    def rates(criterion: str, variant: str) -> tuple[float, float, float]:
        found = report.result(criterion, variant)
        return found.attack.rate, found.control.rate, found.baseline.rate

    # Naive: a drawn x is always one of the 4 distinct values; a random record is the
    # person's copy 1 time in 4; the most frequent y is a 4-way tie.
    assert rates(SINGLING_OUT, EXACT) == (1.0, 0.0, 1.0)
    assert rates(LINKABILITY, EXACT) == (1.0, 0.0, 0.25)
    assert rates(LINKABILITY, NEAREST) == (1.0, 0.0, 0.25)
    assert rates(INFERENCE, "y") == (1.0, 0.0, 0.25)


def test_a_generator_that_learnt_only_patterns_gives_nothing_more_away() -> None:
    # y is a function of x; the synthetic records repeat the pattern, not the people:
    # training and control people are inferred alike, and nobody has a copy.
    training = pl.DataFrame({"x": ["p", "q"] * 10, "y": ["yes", "no"] * 10})
    control = pl.DataFrame({"x": ["p", "q"] * 5, "y": ["yes", "no"] * 5})
    synthetic = pl.DataFrame({"x": ["p", "q"] * 10, "y": ["yes", "no"] * 10})
    report = attack_synthetic(
        training, control, synthetic, known=["x"], sensitive=["y"], seed=2, targets=10
    )
    inferred = report.result(INFERENCE, "y")
    assert (inferred.attack.rate, inferred.control.rate) == (1.0, 1.0)
    assert inferred.advantage.value == 0.0
    assert report.result(SINGLING_OUT, EXACT).attack.rate == 0.0  # 10 records per x


def test_synthesize_is_seeded_and_measured() -> None:
    data = _linked(300).with_columns(pl.Series("n", [float(i % 37) for i in range(300)]))
    params = SyntheticParams(seed=4, secret="c", targets=50)
    first, second = synthesize(data, params), synthesize(data, params)
    assert first.data.equals(second.data)
    assert first.data.height == 240  # 80 % training rows
    assert dict(first.tree)["b"] == "a"
    assert set(first.utility.marginal) == {"a", "b", "c", "n"}
    assert all(0.0 <= v <= 1.0 for v in first.utility.marginal.values())
    attacks = first.privacy.attacks
    assert [(r.criterion, r.variant) for r in attacks.results] == [
        (SINGLING_OUT, EXACT),
        (LINKABILITY, EXACT),
        (LINKABILITY, NEAREST),
        (INFERENCE, "c"),
    ]
    assert attacks == second.privacy.attacks  # seeded: the same targets, the same figures
    assert attacks.targets == 50 and attacks.quasi == ("a", "b", "n")
    assert attacks.original_rows == 300  # 240 training + 60 control rows
    with pytest.raises(EngineInputError, match="secret"):
        synthesize(data, SyntheticParams(secret="zz"))
    with pytest.raises(EngineInputError, match="a column besides the secret"):
        synthesize(data, SyntheticParams(columns=("c",), secret="c"))
