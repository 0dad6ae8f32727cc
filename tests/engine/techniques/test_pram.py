"""PRAM: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.techniques.pram import PramParams, base_matrix, invariant_matrix, pram


def test_invariant_pram_matrix_by_hand() -> None:
    # π = (3/4, 1/4), P = [[.8, .2], [.2, .8]]: Q = [[12/13, 1/13], [3/7, 4/7]],
    # R = PQ = [[75/91, 16/91], [48/91, 43/91]], and π'R = π'.
    shares = np.array([0.75, 0.25])
    matrix = invariant_matrix(base_matrix(2, 0.8), shares)
    assert matrix == pytest.approx(np.array([[75, 16], [48, 43]]) / 91)
    assert shares @ matrix == pytest.approx(shares)


def test_pram_is_seeded_and_leaves_missing_values() -> None:
    data = pl.DataFrame({"marital": ["married"] * 60 + ["single"] * 30 + [None] * 10})
    first = pram(data, PramParams("marital", retain=0.7, seed=11))
    assert first.data.equals(pram(data, PramParams("marital", retain=0.7, seed=11)).data)
    assert first.data["marital"].null_count() == 10
    assert first.categories == ("married", "single")
    assert first.transition.sum(axis=1) == pytest.approx([1.0, 1.0])
    assert 0 < first.changed < 90
    kept = pram(data, PramParams("marital", retain=1.0, seed=1))
    assert kept.data.equals(data) and kept.changed == 0
