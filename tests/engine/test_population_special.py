"""Digamma, ARX's trigamma, the fdlibm logarithm and the 2-D Newton solver."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.engine.population.solver import RESTART_POINTS, solve_2d
from apps.engine.population.special import (
    EULER_GAMMA,
    digamma,
    divide,
    gamma_ratio_times_power,
    strict_log,
    trigamma_arx,
)


def test_digamma_known_values() -> None:
    assert digamma(1.0) == pytest.approx(-EULER_GAMMA, abs=1e-14)
    assert digamma(0.5) == pytest.approx(-EULER_GAMMA - 2 * math.log(2), abs=1e-14)
    assert digamma(-0.5) == pytest.approx(2 - EULER_GAMMA - 2 * math.log(2), abs=1e-14)
    assert digamma(1e-7) == pytest.approx(-EULER_GAMMA - 1e7 + math.pi**2 / 6 * 1e-7, abs=1e-8)
    assert digamma(0.0) == -math.inf
    assert math.isnan(digamma(math.nan)) and math.isnan(digamma(math.inf))


@given(st.floats(min_value=0.01, max_value=1e6))
def test_digamma_recurrence(x: float) -> None:
    # ψ(x + 1) = ψ(x) + 1/x, across the lift to 12 and the asymptotic series
    assert digamma(x + 1.0) == pytest.approx(digamma(x) + 1.0 / x, rel=1e-12, abs=1e-12)


def test_digamma_is_derivative_of_log_gamma() -> None:
    for x in (0.3, 2.5, 11.9, 12.0, 40.0, 3774.0):
        h = 1e-5 * max(1.0, x)
        slope = (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)
        assert digamma(x) == pytest.approx(slope, rel=1e-7)


def test_trigamma_is_exact_from_12() -> None:
    # ψ1(n) = π²/6 − Σ_{k<n} 1/k² for whole n
    for n in (12, 13, 50, 1000):
        exact = math.pi**2 / 6 - sum(1 / k**2 for k in range(1, n))
        assert trigamma_arx(float(n)) == pytest.approx(exact, rel=1e-13)


def test_trigamma_below_12_omits_the_tail_as_arx() -> None:
    # lifted to [8, 9) and no tail added: a partial sum, and 0 on [8, 12)
    assert trigamma_arx(1.0) == pytest.approx(sum(1 / k**2 for k in range(1, 8)), rel=1e-15)
    assert trigamma_arx(7.5) == pytest.approx(1 / 7.5**2, rel=1e-15)
    assert trigamma_arx(8.0) == 0.0 and trigamma_arx(11.9) == 0.0
    # Taylor branch and reflection: 1/x² + π²/6 − 2ζ(3)x; −ψ1(1 − x) + (π/sin πx)²
    assert trigamma_arx(1e-5) == pytest.approx(
        1e10 + math.pi**2 / 6 - 2 * 1.2020569 * 1e-5, abs=1e-5
    )
    expected = -trigamma_arx(1.5) + (math.pi / math.sin(math.pi * 0.5)) ** 2
    assert trigamma_arx(-0.5) == pytest.approx(expected, rel=1e-15)


def test_strict_log_is_fdlibm() -> None:
    # Java 17 StrictMath.log(43346.0) = 10.676969705748348; the C library rounds to …347
    assert strict_log(43346.0) == 10.676969705748348
    assert strict_log(3774.0) == 8.235890725928495  # StrictMath.log, same as the C library
    assert strict_log(1.0) == 0.0 and strict_log(2.0) == math.log(2.0)
    assert strict_log(0.0) == -math.inf and math.isnan(strict_log(-1.0))
    assert strict_log(5e-324) == pytest.approx(math.log(5e-324), rel=1e-15)  # subnormal
    assert strict_log(math.inf) == math.inf


@given(st.floats(min_value=1e-300, max_value=1e300))
def test_strict_log_within_one_ulp_of_libm(x: float) -> None:
    expected = math.log(x)
    assert abs(strict_log(x) - expected) <= 2 * math.ulp(expected)


def test_ieee_helpers() -> None:
    assert divide(1.0, 0.0) == math.inf and divide(-1.0, 0.0) == -math.inf
    assert divide(1.0, -0.0) == -math.inf and math.isnan(divide(0.0, 0.0))
    via_log, via_gamma = gamma_ratio_times_power(3.0, 0.5, 100.0)  # Γ(4)/Γ(3.5)·10
    exact = 6 / (15 / 8 * math.sqrt(math.pi)) * 10
    assert via_log == pytest.approx(exact, rel=1e-14) and via_gamma == pytest.approx(exact)
    via_log, via_gamma = gamma_ratio_times_power(500.0, 0.5, 4.0)
    assert via_log == pytest.approx(math.exp(math.lgamma(501) - math.lgamma(500.5)) * 2)
    assert via_gamma != via_gamma or via_gamma == math.inf  # Γ(501) overflows: not usable


# --------------------------------------------------------------------------- solver


def test_restart_points_are_arx_defaults() -> None:
    axis = (0.0, 0.33, 0.66, 0.99)
    assert len(RESTART_POINTS) == 16
    flat = [value for point in RESTART_POINTS for value in point]
    assert flat == pytest.approx([v for a in axis for b in axis for v in (a, b)], abs=1e-15)


def test_linear_system_in_one_step() -> None:
    solution = solve_2d(lambda x, y: ((x - 3.0, y + 1.0), ((1.0, 0.0), (0.0, 1.0))), (0.0, 0.0))
    assert solution is not None
    assert (solution.x, solution.y, solution.steps) == (3.0, -1.0, 2)


def test_quadratic_converges_to_sqrt_2() -> None:
    def system(x: float, y: float) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        return (x * x - 2.0, y - x), ((2.0 * x, 0.0), (-1.0, 1.0))

    solution = solve_2d(system, (1.0, 1.0))  # type: ignore[arg-type]
    assert solution is not None
    assert solution.x == pytest.approx(math.sqrt(2), abs=1e-6)
    assert solution.y == pytest.approx(math.sqrt(2), abs=1e-6)


def test_restarts_then_gives_up_after_the_last_point_is_loaded() -> None:
    """Every step leaves the region: the start and 15 restart points are tried once each;
    the 16th restart point is evaluated once, stepped, and the search gives up (ARX)."""
    visited: list[tuple[float, float]] = []

    def system(x: float, y: float) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        visited.append((x, y))
        return (1.0, 1.0), ((1.0, 0.0), (0.0, 1.0))

    result = solve_2d(system, (5.0, 5.0), region=lambda x, y: False)  # type: ignore[arg-type]
    assert result is None
    assert visited == [(5.0, 5.0), *RESTART_POINTS]


def test_nan_ends_a_try() -> None:
    calls: list[tuple[float, float]] = []

    def system(x: float, y: float) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        calls.append((x, y))
        if x == 5.0:  # singular Jacobian at the start: the step is nan
            return (1.0, 1.0), ((0.0, 0.0), (0.0, 0.0))
        return (x - 0.5, y - 0.5), ((1.0, 0.0), (0.0, 1.0))

    solution = solve_2d(system, (5.0, 5.0))  # type: ignore[arg-type]
    assert solution is not None and (solution.x, solution.y) == (0.5, 0.5)
    assert calls[1] == (0.0, 0.0)  # first restart point after the nan
