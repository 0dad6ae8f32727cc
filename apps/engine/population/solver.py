"""Newton–Raphson for two equations in two unknowns, with ARX's restart rule.

ARX solves the likelihood equations of Pitman's and the SNB model with the
`newtonraphson` library of its authors, configured by `ARXSolverConfiguration`:
accuracy 1e-6 on both equations, at most 1,000 steps per try, and after the given
start point a fixed list of 16 restart points (0, 0.33, 0.66, 0.99)² tried in turn.
A try ends when a step leaves the allowed region, gives nan or uses up its steps.
The search gives up as soon as the last restart point has been loaded and stepped
once, so that point is never followed further — we keep that rule, since it decides
when ARX reports an estimate as not available.

ARX also stops after 100 ms per try and 1 s in all; those clocks make results depend
on the machine, so this solver counts steps only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

# (f1, f2), ((df1/dx, df1/dy), (df2/dx, df2/dy)) at a point (x, y)
Jacobian = tuple[tuple[float, float], tuple[float, float]]
System = Callable[[float, float], tuple[tuple[float, float], Jacobian]]
Region = Callable[[float, float], bool]

ACCURACY = 1e-6
STEPS_PER_TRY = 1000


def _restart_points() -> tuple[tuple[float, float], ...]:
    """ARX's deterministic restart points: 0, 0.33, 0.66, 0.99 on each axis (row by row).

    Built by adding 0.33 repeatedly, as ARX does, so the values carry the same rounding.
    """
    axis: list[float] = []
    value = 0.0
    while value < 1.0:
        axis.append(value)
        value += 0.33
    return tuple((a, b) for a in axis for b in axis)


RESTART_POINTS = _restart_points()


@dataclass(frozen=True)
class Solution:
    x: float
    y: float
    steps: int  # evaluations of the system, over all tries


def solve_2d(
    system: System,
    start: tuple[float, float],
    *,
    region: Region | None = None,
    restarts: tuple[tuple[float, float], ...] = RESTART_POINTS,
    accuracy: float = ACCURACY,
    steps_per_try: int = STEPS_PER_TRY,
) -> Solution | None:
    """A point where |f1| ≤ accuracy and |f2| ≤ accuracy, or None (not available).

    Newton's step is x ← x − J⁻¹·f.  Arithmetic is IEEE (a singular Jacobian gives
    inf/nan and ends the try), as in the Java solver ARX uses.
    """
    budget = (len(restarts) + 1) * steps_per_try
    evaluations = 0
    next_restart = 0
    x, y = start
    first = True
    while evaluations <= budget:
        if not first:
            x, y = restarts[next_restart]
            next_restart += 1
        first = False
        steps = 0
        while True:
            evaluations += 1
            (f1, f2), ((a, b), (c, d)) = system(x, y)
            if abs(f1) <= accuracy and abs(f2) <= accuracy:
                return Solution(x, y, evaluations)
            scale = _reciprocal(a * d - b * c)
            # J⁻¹ = [[d, −b], [−c, a]] / det, applied to f
            x -= (d * scale) * f1 + (-b * scale) * f2
            y -= (-c * scale) * f1 + (a * scale) * f2
            if next_restart == len(restarts):
                return None
            if region is not None and not region(x, y):
                break
            if math.isnan(x) or math.isnan(y) or steps >= steps_per_try:
                break
            steps += 1
    return None


def _reciprocal(value: float) -> float:
    """1 / value with IEEE semantics (±inf at ±0, nan for nan) instead of an exception."""
    if value == 0.0:
        return math.copysign(math.inf, value)
    return 1.0 / value
