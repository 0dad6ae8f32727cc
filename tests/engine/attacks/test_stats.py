"""Wilson and Newcombe intervals against published and hand-computed values."""

from __future__ import annotations

import math

import pytest

from apps.engine.attacks.stats import Z95, difference, rate, wilson


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Newcombe 1998, Statistics in Medicine 17:857, Table II, method 3 (Wilson score).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (29, 29, 0.8830, 1.0),
    ],
)
def test_wilson_matches_newcombes_table(
    successes: int, trials: int, low: float, high: float
) -> None:
    found = wilson(successes, trials)
    assert found == pytest.approx((low, high), abs=5e-5)


def test_wilson_by_hand() -> None:
    # 5/10: p = 1/2, z² = 3.8415; centre = (0.5 + z²/20) / (1 + z²/10) = 0.5;
    # half width = z·√(0.25/10 + z²/400) / (1 + z²/10) = 1.96·√0.034604 / 1.38415 = 0.26341.
    z2 = Z95**2
    half = Z95 * math.sqrt(0.025 + z2 / 400) / (1 + z2 / 10)
    assert half == pytest.approx(0.26341, abs=1e-5)
    assert wilson(5, 10) == pytest.approx((0.5 - half, 0.5 + half))
    # 10/10: the upper bound is 1 exactly, the lower n/(n + z²) = 10/13.8415 = 0.72247.
    assert wilson(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 10)[0] == 0.0
    assert wilson(0, 0) == (0.0, 1.0)  # no attack: nothing is known


def test_fractional_successes_are_expected_successes() -> None:
    # 50 attacks each right with probability 1/10: 5 expected successes, as 5 out of 50.
    assert rate(50 * 0.1, 50).rate == pytest.approx(0.1)
    assert (rate(5.0, 50).low, rate(5.0, 50).high) == wilson(5, 50)


@pytest.mark.parametrize(
    ("first", "second", "low", "high"),
    [
        # Newcombe 1998, Statistics in Medicine 17:873, Table II, method 10.
        ((56, 70), (48, 80), 0.0524, 0.3339),
        ((9, 10), (3, 10), 0.1705, 0.8090),
        ((6, 7), (2, 7), 0.0582, 0.8062),
        ((5, 56), (0, 29), -0.0381, 0.1926),
        ((0, 10), (0, 20), -0.1611, 0.2775),
        ((0, 10), (0, 10), -0.2775, 0.2775),
    ],
)
def test_difference_matches_newcombes_table(
    first: tuple[int, int], second: tuple[int, int], low: float, high: float
) -> None:
    found = difference(rate(*first), rate(*second))
    assert (found.low, found.high) == pytest.approx((low, high), abs=5e-5)
    assert found.value == pytest.approx(first[0] / first[1] - second[0] / second[1])


def test_not_a_proportion_is_refused() -> None:
    with pytest.raises(ValueError, match="not a proportion"):
        wilson(11, 10)
