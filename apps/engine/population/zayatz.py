"""Zayatz's model of population uniques (Zayatz 1991; ARX `ModelZayatz`).

A sample unique is a population unique with the probability that, of the classes a
sample row can come from, it came from a class of size 1 — weighing each sample class
of size k by the hypergeometric chance that a population class of that size leaves
exactly one row in a sample of n out of N:

    P(unique | sample unique) = (c1/u) · P₁(1) / Σ_k (c_k/u) · P_k(1)
    population uniques        = c1 · P(unique | sample unique) / f,   f = n/N

where P_k(1) is the hypergeometric probability of 1 success in n draws from N with k
successes.  ARX truncates N and n to Java int (2,147,483,647); we do not, so the two
differ only for populations above that.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from apps.engine.population.histogram import SizeHistogram


def hypergeometric_one(
    population: float, sample: float, successes: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """P(exactly 1 of `successes` marked items is in a sample of `sample` out of `population`).

    k·(n/N)·Π_{j=0}^{k−2} (N − n − j)/(N − 1 − j): one chosen item drawn, the other k − 1
    not.  Summed in logs with log1p, since every factor is close to 1 when n ≪ N
    (ln Γ of numbers near 10⁸ would lose digits).
    """
    k = np.asarray(successes, dtype=np.int64)
    result = np.zeros(k.shape, dtype=np.float64)
    if k.size == 0 or sample < 1:
        return result
    largest = int(k.max())
    j = np.arange(0, max(largest - 1, 0), dtype=np.float64)
    room = population - sample - j  # items left unmarked after the draw
    with np.errstate(all="ignore"):
        log_factors = np.log1p(-(sample - 1.0) / (population - 1.0 - j))
    log_factors[room <= 0] = -np.inf  # the other marked items cannot all stay out
    cumulative = np.concatenate(([0.0], np.cumsum(log_factors)))  # [m] = Σ of the first m
    possible = k >= 1
    kk = k[possible]
    result[possible] = np.exp(
        np.log(kk.astype(np.float64)) + math.log(sample / population) + cumulative[kk - 1]
    )
    return result


def zayatz_uniques(histogram: SizeHistogram, population: float) -> float:
    """Estimated population uniques by Zayatz's model; nan when undefined (no classes)."""
    n, u = float(histogram.rows), float(histogram.classes)
    c1 = float(histogram.uniques)
    if n == 0:
        return math.nan
    chances = hypergeometric_one(population, n, histogram.sizes)
    weighted = float(np.sum(histogram.counts / u * chances))
    unique_chance = float(hypergeometric_one(population, n, np.array([1], np.int64))[0])
    with np.errstate(all="ignore"):
        conditional = np.float64(c1 / u * unique_chance) / np.float64(weighted)
        return float(c1 * conditional / (n / population))
