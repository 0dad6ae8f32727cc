"""Success rates with their 95 % confidence intervals.

One attack on one target is a Bernoulli trial: it succeeds or not.  Where the intruder
picks at random among equally good candidates (a class of 4 compatible records), the
engine records the probability that the pick is right (1/4) instead of drawing the pick:
the expected number of successes, with no simulation noise (a Rao-Blackwellised
estimate).  The interval is Wilson's score interval for a binomial proportion (Wilson
1927; recommended by Newcombe 1998, Statistics in Medicine 17:857, method 3, and by
Brown, Cai & DasGupta 2001), computed from the observed rate and the number of trials:
exact in meaning for 0/1 outcomes, conservative for averaged ones (their variance is at
most p(1 − p)).  The difference between two independent rates (attack − control) gets
Newcombe's hybrid score interval (Newcombe 1998, Statistics in Medicine 17:873, method 10),
built from the two Wilson intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Two-sided 95 %: the 0.975 quantile of the standard normal distribution.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    """``successes`` out of ``trials`` (successes may be fractional: expected successes)."""

    successes: float
    trials: int
    rate: float
    low: float  # Wilson 95 % interval
    high: float


@dataclass(frozen=True)
class Difference:
    """``first.rate − second.rate`` with Newcombe's 95 % interval."""

    value: float
    low: float
    high: float


def wilson(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for ``successes`` out of ``trials``; (0, 1) with no trial."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials is not a proportion")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 and at n successes the bound is exactly 0 or 1; rounding must not move it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def rate(successes: float, trials: int) -> Rate:
    low, high = wilson(successes, trials)
    return Rate(successes, trials, successes / trials if trials else 0.0, low, high)


def difference(first: Rate, second: Rate) -> Difference:
    """Newcombe's hybrid score interval for the difference of two independent rates."""
    value = first.rate - second.rate
    low = value - math.sqrt((first.rate - first.low) ** 2 + (second.high - second.rate) ** 2)
    high = value + math.sqrt((first.high - first.rate) ** 2 + (second.rate - second.low) ** 2)
    return Difference(value, max(-1.0, low), min(1.0, high))
