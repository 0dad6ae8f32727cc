"""The slide negative binomial (SNB) model of population uniques (Chen & Keller-McNulty
1998; ARX `ModelSNB`), as ARX computes it.

First the number K of non-empty classes in the population is estimated (Shlosser's
estimator, Haas et al. 1995), then α and β solve two equations that match the
expected numbers of sample classes of size 1 and 2 to c1 and c2; the population then
holds K·β^α uniques.  With D = (1 − f)(1 − β) and g = 1 − D:

    F1(α, β) = K·f·(β/g)^α·(α·D/g + 1) − c1                               = 0
    F2(α, β) = K·α·β^α·f²·(1 − β)/2 · g^(α+2) · (2 − (1 − α)·D) − c2      = 0

Two points where ARX departs from the textbook and we follow ARX, because they decide
its numbers and when it says "not available":
- F2 multiplies by g^(α+2) where the model divides by it; yet the Jacobian ARX hands to
  Newton's method is that of the textbook equation (dividing).  Newton's steps thus
  follow the model while convergence is tested on ARX's F2 — rarely met, so SNB is
  often not available in ARX.
- Shlosser's denominator Σ_k c_k(1 − f)^k((1 + f)^k − 1) is taken as
  Σ_k [c_k(1 − f)^k(1 + f)^k − 1]: 1 is subtracted once per distinct class size.
The solver starts at (α, β) = (1, 1), then ARX's restart points.
"""

from __future__ import annotations

import math

import numpy as np

from apps.engine.population.histogram import SizeHistogram
from apps.engine.population.solver import Jacobian, solve_2d


def shlosser_classes(histogram: SizeHistogram, sampling_fraction: float) -> float:
    """Estimated number K of non-empty classes in the population (ARX's form, see above)."""
    f = sampling_fraction
    k = histogram.sizes.astype(np.float64)
    c = histogram.counts.astype(np.float64)
    with np.errstate(all="ignore"):
        numerator = np.sum(k * f * f * np.power(1.0 - f * f, k - 1.0) * c)
        denominator = np.sum(np.power(1.0 - f, k) * c * np.power(1.0 + f, k) - 1.0)
        kept = np.sum(np.power(1.0 - f, k) * c)
        drawn = np.sum(k * f * np.power(1.0 - f, k - 1.0) * c)
        ratio = kept / drawn
        return float(
            histogram.classes + histogram.uniques * (numerator / denominator) * ratio * ratio
        )


class SnbEquations:
    """ARX's two SNB equations in (α, β) and the Jacobian it steers Newton's method with."""

    def __init__(self, classes: float, f: float, c1: float, c2: float) -> None:
        self.k, self.f, self.c1, self.c2 = classes, f, c1, c2

    def __call__(self, alpha: float, beta: float) -> tuple[tuple[float, float], Jacobian]:
        with np.errstate(all="ignore"):
            a, b = np.float64(alpha), np.float64(beta)
            k, f = np.float64(self.k), np.float64(self.f)
            d = (1.0 - f) * (1.0 - b)
            g = 1.0 - d
            ratio = b / g
            ratio_a = np.power(ratio, a)
            inner = a * d / g + 1.0
            f1 = k * f * ratio_a * inner - self.c1
            q = 2.0 - (1.0 - a) * d
            b_a = np.power(b, a)
            f2 = k * a * b_a * (f * f) * (1.0 - b) / 2.0 * np.power(g, a + 2.0) * q - self.c2
            # Jacobian of F1 (d/dα, d/dβ); dD/dβ = −(1 − f), dg/dβ = 1 − f
            df1_da = k * f * ratio_a * (np.log(ratio) * inner + d / g)
            df1_db = (
                k * f * ratio_a * (a * (1.0 / b - (1.0 - f) / g) * inner - a * (1.0 - f) / (g * g))
            )
            # Jacobian of the model's second equation, K·f²/2 · α·β^α·(1 − β)·q·g^−(α+2)
            half = k * f * f / 2.0
            g_neg = np.power(g, -(a + 2.0))
            df2_da = (
                half * (1.0 - b) * g_neg * b_a * (q + a * q * np.log(b) + a * d - a * q * np.log(g))
            )
            df2_db = (
                half
                * a
                * (
                    a * np.power(b, a - 1.0) * (1.0 - b) * q * g_neg
                    - b_a * q * g_neg
                    + b_a * (1.0 - b) * (1.0 - a) * (1.0 - f) * g_neg
                    - (a + 2.0) * (1.0 - f) * b_a * (1.0 - b) * q * g_neg / g
                )
            )
        return (float(f1), float(f2)), (
            (float(df1_da), float(df1_db)),
            (float(df2_da), float(df2_db)),
        )


def snb_uniques(histogram: SizeHistogram, population: float) -> float:
    """Estimated population uniques K·β^α; nan when the equations have no root found."""
    n = float(histogram.rows)
    if n == 0:
        return math.nan
    f = n / population
    classes = shlosser_classes(histogram, f)
    equations = SnbEquations(
        classes, f, float(histogram.uniques), float(histogram.classes_of_size(2))
    )
    solution = solve_2d(equations, (1.0, 1.0))
    if solution is None:
        return math.nan
    with np.errstate(all="ignore"):
        return float(classes * np.power(np.float64(solution.y), np.float64(solution.x)))
