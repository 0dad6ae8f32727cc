"""Pitman's model of population uniques (Hoshino 2001; ARX `ModelPitman`).

The class sizes of the population follow a Pitman sampling formula with parameters
θ ≥ 0 and α.  Their maximum-likelihood estimates from the sample solve two equations
(u classes, n rows, c_k classes of size k):

    f1(θ, α) = Σ_{i=1}^{u−1} 1/(θ + iα) − Σ_{i=1}^{n−1} 1/(θ + i)                    = 0
    f2(θ, α) = Σ_{i=1}^{u−1} i/(θ + iα) − Σ_{k≥2} c_k Σ_{j=1}^{k−1} 1/(j − α)        = 0

and the population of N holds Γ(θ + 1)/Γ(θ + α) · N^α uniques.  As ARX: the sums are
first written with digamma and trigamma (fast); the root found is then checked with
the sums themselves, and when it fails the check (or nothing was found) the sums are
solved directly.  No root, or a count outside [0, N], means "not available".
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from apps.engine.population.histogram import SizeHistogram
from apps.engine.population.solver import ACCURACY, Jacobian, Solution, solve_2d
from apps.engine.population.special import (
    digamma,
    divide,
    gamma_ratio_times_power,
    trigamma_arx,
)


def pitman_start(histogram: SizeHistogram) -> tuple[float, float]:
    """Start point (θ₀, α₀) of the solver, from c1, c2, u and n (ARX `ModelPitman`).

    With no class of size 2, c2 is taken as 1 (ARX: "overestimate").
    """
    c1 = float(histogram.uniques)
    c2 = float(histogram.classes_of_size(2)) or 1.0
    u, n = float(histogram.classes), float(histogram.rows)
    c = (c1 * (c1 - 1.0)) / c2
    theta = divide(n * u * c - c1 * (n - 1.0) * (2.0 * u + c), 2.0 * c1 * u + c1 * c - n * c)
    alpha = divide(theta * (c1 - n) + (n - 1.0) * c1, n * u)
    return theta, alpha


def _theta_not_negative(theta: float, alpha: float) -> bool:
    return theta >= 0.0


class _Sums:
    """The two likelihood equations and their Jacobian for one histogram.

    Every sum is accumulated in order, term by term (np.cumsum is sequential, unlike
    np.sum): the solver can wander for hundreds of steps, and then the last bits
    decide whether it lands on a root — summing as ARX does keeps us on its path.
    """

    def __init__(self, histogram: SizeHistogram) -> None:
        self.u = float(histogram.classes)
        self.n = float(histogram.rows)
        larger = histogram.sizes != 1
        self.larger_sizes = [float(k) for k in histogram.sizes[larger].tolist()]
        self.larger_counts = [float(c) for c in histogram.counts[larger].tolist()]
        self.counts = histogram.counts[larger].astype(np.float64)
        self.size_index = histogram.sizes[larger] - 2  # Σ_{j=1}^{k−1} ends at cumsum[k − 2]
        self.i_classes = np.arange(1, histogram.classes, dtype=np.float64)  # 1 … u−1
        self.i_rows = np.arange(1, histogram.rows, dtype=np.float64)  # 1 … n−1
        largest = int(histogram.sizes.max()) if histogram.sizes.size else 1
        self.j = np.arange(1, max(largest, 1), dtype=np.float64)  # 1 … largest−1

    def closed(self, t: float, a: float) -> tuple[tuple[float, float], Jacobian]:
        """The equations with ψ and ψ1 in place of the sums (ARX's closed forms)."""
        u1 = self.u - 1.0
        ratio = divide(t, a)
        psi_top = digamma(u1 + ratio + 1.0)  # ψ(θ/α + u)
        tri_top = trigamma_arx(divide(a + t + a * u1, a))
        tri_one = trigamma_arx(ratio + 1.0)
        psi_one = digamma(ratio + 1.0)  # ψ(θ/α + 1)
        a2 = a * a
        # Σ 1/(θ+iα)², Σ i/(θ+iα)², Σ i²/(θ+iα)² over i = 1 … u−1
        d1 = divide(tri_one - tri_top, a2)
        d5 = divide(a * psi_top + t * tri_top - a * psi_one - t * tri_one, a2 * a)
        d3 = divide(
            a2 * u1
            - t * t * tri_top
            + t * t * tri_one
            - 2.0 * a * t * psi_top
            + 2.0 * a * t * psi_one,
            a2 * a2,
        )
        o1 = divide(psi_top - psi_one, a)  # Σ 1/(θ+iα)
        o3 = divide(-t * psi_top + a * u1 + t * psi_one, a2)  # Σ i/(θ+iα)
        o2 = digamma(self.n + t) - digamma(t + 1.0)  # Σ_{i<n} 1/(θ+i)
        d2 = trigamma_arx(t + 1.0) - trigamma_arx(self.n + t)
        # Σ_k c_k Σ_{j<k} 1/(j−α) = Σ_k c_k (ψ(k−α) − ψ(1−α)), and with squares
        o4 = d4 = 0.0
        psi_base, tri_base = digamma(1.0 - a), trigamma_arx(1.0 - a)
        for size, count in zip(self.larger_sizes, self.larger_counts, strict=True):
            d4 += count * (tri_base - trigamma_arx(size - a))
            o4 += count * (digamma(size - a) - psi_base)
        return (o1 - o2, o3 - o4), ((d2 - d1, -d5), (-d5, -d3 - d4))

    def direct(self, theta: float, alpha: float) -> tuple[tuple[float, float], Jacobian]:
        """The equations and Jacobian as the sums they are."""
        with np.errstate(all="ignore"):
            t, a = np.float64(theta), np.float64(alpha)
            i = self.i_classes
            w = t + i * a
            inv = 1.0 / w
            inv2 = 1.0 / (w * w)
            i_inv2 = i * inv2
            o1, o3 = _total(inv), _total(i * inv)
            d1, d5, d3 = _total(inv2), _total(i_inv2), _total(i * i_inv2)
            o4, d4 = self._class_sums(a)
            r = t + self.i_rows
            d2, o2 = _total(1.0 / (r * r)), _total(1.0 / r)
        return (o1 - o2, o3 - o4), ((d2 - d1, -d5), (-d5, -d3 - d4))

    def direct_values(self, theta: float, alpha: float) -> tuple[float, float]:
        return self.direct(theta, alpha)[0]

    def _class_sums(self, a: np.float64) -> tuple[float, float]:
        """Σ_k c_k Σ_{j<k} 1/(j − α) and the same with squares, over classes of size ≥ 2."""
        if not self.counts.size:
            return 0.0, 0.0
        step = self.j - a
        first = np.cumsum(1.0 / step)[self.size_index]
        second = np.cumsum(1.0 / (step * step))[self.size_index]
        return _total(self.counts * first), _total(self.counts * second)


def _total(values: npt.NDArray[np.float64]) -> float:
    """Σ values added left to right (the last partial sum of a cumulative sum)."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def pitman_parameters(histogram: SizeHistogram) -> Solution | None:
    """(θ, α) solving the likelihood equations, or None when no root is found (ARX's flow)."""
    sums = _Sums(histogram)
    start = pitman_start(histogram)
    solution = solve_2d(sums.closed, start, region=_theta_not_negative)
    if solution is not None:
        f1, f2 = sums.direct_values(solution.x, solution.y)
        if not (abs(f1) <= ACCURACY and abs(f2) <= ACCURACY):  # also catches nan
            solution = None
    if solution is None:
        solution = solve_2d(sums.direct, start, region=_theta_not_negative)
    return solution


def pitman_uniques(histogram: SizeHistogram, population: float) -> float:
    """Estimated population uniques Γ(θ+1)/Γ(θ+α)·N^α; nan when not available.

    Of the two ways ARX evaluates the formula, the larger valid value (in [0, N]) is kept.
    """
    solution = pitman_parameters(histogram)
    if solution is None:
        return math.nan
    theta, alpha = solution.x, solution.y
    if math.isnan(theta) or math.isnan(alpha) or alpha == 0.0:
        return math.nan
    valid = [
        value
        for value in gamma_ratio_times_power(theta, alpha, population)
        if 0.0 <= value <= population
    ]
    return max(valid) if valid else math.nan
