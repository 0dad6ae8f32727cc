"""Synthetic data: the Chow-Liu model and the attack measures, on hand-made data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques.synthetic import SyntheticParams, synthesize
from apps.engine.techniques.synthetic.chow_liu import fit, mutual_information, sample
from apps.engine.techniques.synthetic.privacy import (
    exact_copies,
    excess_risk,
    inference,
    linkability,
)


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


def test_excess_risk_formula() -> None:
    assert excess_risk(0.5, 0.2) == pytest.approx(0.375)
    assert excess_risk(0.1, 0.2) == 0.0
    assert excess_risk(0.3, 1.0) == 0.0


def test_exact_copies_and_attacks_on_a_copied_release() -> None:
    targets = pl.DataFrame({"x": [1.0, 5.0, 9.0, 13.0], "y": ["a", "b", "c", "d"]})
    control = pl.DataFrame({"x": [2.0, 6.0, 10.0, 14.0], "y": ["d", "c", "b", "a"]})
    # The worst generator copies its training rows; a control person (1 from a training
    # one) finds the training neighbour and guesses its other value, which is never theirs.
    synthetic = targets.clone()
    assert exact_copies(targets, synthetic, ["x", "y"]) == 4
    found = inference(targets, control, synthetic, ["x", "y"], "y")
    assert found.success_training == 1.0 and found.success_control == 0.0
    assert found.risk == 1.0
    linked = linkability(targets, control, synthetic, ["x", "y"])
    assert linked.success_training == 1.0


def test_synthesize_is_seeded_and_measured() -> None:
    data = _linked(300).with_columns(pl.Series("n", [float(i % 37) for i in range(300)]))
    params = SyntheticParams(seed=4, secret="c", targets=50)
    first, second = synthesize(data, params), synthesize(data, params)
    assert first.data.equals(second.data)
    assert first.data.height == 240  # 80 % training rows
    assert dict(first.tree)["b"] == "a"
    assert set(first.utility.marginal) == {"a", "b", "c", "n"}
    assert all(0.0 <= v <= 1.0 for v in first.utility.marginal.values())
    assert [a.attack for a in first.privacy.attacks] == ["singling out", "linkability", "inference"]
    with pytest.raises(EngineInputError, match="secret"):
        synthesize(data, SyntheticParams(secret="zz"))
