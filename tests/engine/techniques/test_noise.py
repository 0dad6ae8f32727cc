"""Noise: hand-computed values (issue #18)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.techniques._common import public_parameters
from apps.engine.techniques.noise import (
    NoiseParams,
    add_noise,
    additive_noise,
    multiplicative_noise,
    restore_moments,
)


def test_noise_formulas_by_hand() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])  # mean 2.5, population sd √1.25
    eps = np.array([1.0, -1.0, 0.0, 2.0])
    sd = np.sqrt(1.25)
    assert additive_noise(x, eps, 0.5) == pytest.approx(x + 0.5 * sd * eps)
    assert multiplicative_noise(x, eps, 0.1).tolist() == pytest.approx([1.1, 1.8, 3.0, 4.8])
    # y = 1.1, 1.8, 3.0, 4.8: mean 2.675; restored to mean 2.5 and sd √1.25 exactly.
    restored = restore_moments(x, np.array([1.1, 1.8, 3.0, 4.8]))
    assert restored.mean() == pytest.approx(2.5)
    assert restored.std() == pytest.approx(sd)
    y = np.array([1.1, 1.8, 3.0, 4.8])
    assert restored == pytest.approx(2.5 + (y - 2.675) * sd / y.std())


def test_add_noise_is_seeded_and_keeps_mean_and_variance() -> None:
    data = pl.DataFrame({"income": [float(v) for v in range(100)], "id": list(range(100))})
    params = NoiseParams(("income",), scale=0.2, seed=7)
    first, second = add_noise(data, params), add_noise(data, params)
    assert first.data.equals(second.data)
    noisy = first.data["income"].to_numpy()
    assert noisy.mean() == pytest.approx(49.5)
    assert noisy.std() == pytest.approx(np.arange(100).std())
    assert not np.allclose(noisy, np.arange(100))
    # Correlation of x and x + 0.2·s·ε is about 1/√1.04 ≈ 0.98.
    assert 0.95 < first.correlation["income"] < 1.0
    assert "seed" not in public_parameters(params)
    other = add_noise(data, NoiseParams(("income",), scale=0.2, seed=8))
    assert not other.data.equals(first.data)
