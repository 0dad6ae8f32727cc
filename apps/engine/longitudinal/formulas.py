"""Formulas of longitudinal risk (LONGITUDINAL.md), one documented function per formula.

Notation (LONGITUDINAL.md §2.3): ``F_i`` is person ``i``'s feature set (the distinct
tuples of generalized event-level values of its events), ``C(i)`` the persons sharing
``i``'s generalized person-level values (its person-level class), ``p`` the adversary
power and ``s_i = min(p, |F_i|)``.

These plain-Python functions are the definitions; the compiled kernels (``kernels/``)
compute the same numbers on large data and are tested against them on random data.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import size_for_risk
from apps.engine.errors import EngineInputError
from apps.engine.loss import geometric_mean_loss, loss_of_dimension

#: "all": the adversary knows every event of the person (complete knowledge, §2.2).
ALL = "all"
Power = int | str
#: Powers the report shows beside the chosen one (LONGITUDINAL.md §2.9, decision).
REPORTED_POWERS: tuple[Power, ...] = (1, 2, 3, 4, 5, ALL)
MAX_POWER = 10
DEFAULT_POWER = 3


def parse_power(value: object) -> Power:
    """Adversary power: an integer 1..10 or "all" (LONGITUDINAL.md §2.9, decision)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("all", "all events"):
            return ALL
        try:
            value = int(text)
        except ValueError:
            raise EngineInputError(
                f"adversary power must be 1 to {MAX_POWER} or 'all', not {value!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise EngineInputError(f"adversary power must be 1 to {MAX_POWER} or 'all', not {value!r}")
    if not 1 <= int(value) <= MAX_POWER:
        raise EngineInputError(f"adversary power must be 1 to {MAX_POWER} or 'all', not {value}")
    return int(value)


def power_key(power: Power) -> str:
    """The power as written in reports and JSON: ``"1"`` … ``"10"`` or ``"all"``."""
    return str(power)


# --------------------------------------------------------------------------- §2.3 counts


def match_count(known: Collection[object], class_sets: Iterable[Collection[object]]) -> int:
    """``m_i(S) = |{ j ∈ C(i) : S ⊆ F_j }|`` (LONGITUDINAL.md §2.3, superset rule of §2.2).

    ``class_sets`` are the feature sets of the persons of ``i``'s person-level class
    (``i`` included, so the count is at least 1 when ``S ⊆ F_i``).
    """
    wanted = set(known)
    return sum(1 for features in class_sets if wanted <= set(features))


def strict_count(
    features: Collection[object], class_sets: Sequence[Collection[object]], power: Power
) -> int:
    """Strict per-person count ``k_i = min over S ⊆ F_i, |S| = s_i of m_i(S)``
    (LONGITUDINAL.md §2.3 and the opening decision; ``S = ∅`` when ``F_i`` is empty).

    With ``power = "all"`` (complete knowledge) ``k_i = |{ j ∈ C(i) : F_j = F_i }|``.
    This enumerates every subset: it is the definition, for small data and tests.
    """
    own = frozenset(features)
    if power == ALL:
        return sum(1 for other in class_sets if frozenset(other) == own)
    assert isinstance(power, int)
    size = min(power, len(own))
    return min(
        match_count(subset, class_sets) for subset in combinations(sorted(own, key=repr), size)
    )


def subset_total(feature_set_sizes: Iterable[int], power: Power) -> int:
    """Number of subsets an exact count examines: ``Σ_i binom(|F_i|, s_i)``
    (LONGITUDINAL.md §2.4; a person without events has one, the empty set).
    Complete knowledge examines one set per person."""
    if power == ALL:
        return sum(1 for _ in feature_set_sizes)
    assert isinstance(power, int)
    return sum(math.comb(n, min(power, n)) for n in feature_set_sizes)


# --------------------------------------------------------------------------- §2.5 measures


def person_risks(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """``r_i = 1 / k_i`` per person (LONGITUDINAL.md §2.3, prosecutor risk)."""
    out: NDArray[np.float64] = 1.0 / counts.astype(np.float64)
    return out


def max_risk(counts: NDArray[np.int64]) -> float:
    """``R_max = max_i r_i = 1 / min_i k_i`` (LONGITUDINAL.md §2.5); 0 for no persons."""
    return 1.0 / int(counts.min()) if len(counts) else 0.0


def average_risk(counts: NDArray[np.int64]) -> float:
    """Average risk over persons (not rows): ``(1/|P|) Σ_i 1/k_i`` with strict counts
    (LONGITUDINAL.md §2.5 and the opening decision); 0 for no persons."""
    return float(person_risks(counts).mean()) if len(counts) else 0.0


def persons_at_risk(counts: NDArray[np.int64], target: float) -> int:
    """``#{ i : r_i > target }`` (LONGITUDINAL.md §2.5). ``r_i > t`` exactly when
    ``k_i < ceil(1/t)`` (criteria.size_for_risk, which absorbs floating-point noise)."""
    return int((counts < size_for_risk(target)).sum())


# --------------------------------------------------------------------------- §2.6 event counts


def top_code(events_per_person: NDArray[np.int64], quantile: float = 0.95) -> int:
    """Top-code of the number of events: the ``quantile`` of events per person by the
    nearest-rank method (the smallest count ``c`` with at least ``⌈q·n⌉`` persons at or
    below it), at least 1 (LONGITUDINAL.md §2.6: "top-coded at the P95")."""
    if not 0.0 < quantile <= 1.0:
        raise EngineInputError(f"the top-code quantile must be in (0, 1], not {quantile}")
    if len(events_per_person) == 0:
        return 1
    ordered = np.sort(events_per_person)
    rank = max(1, math.ceil(quantile * len(ordered)))
    return max(1, int(ordered[rank - 1]))


#: Range bins of the event count (LONGITUDINAL.md §2.6): level 1 and level 2 lower bounds.
COUNT_RANGES: tuple[tuple[int, ...], ...] = ((0, 1, 2, 4, 8, 16), (0, 1, 2))


def _range_label(count: int, lows: Sequence[int]) -> str:
    index = max(i for i, low in enumerate(lows) if low <= count)
    low = lows[index]
    if index == len(lows) - 1:
        return f"{low}+"
    high = lows[index + 1] - 1
    return str(low) if low == high else f"{low}-{high}"


def event_count_label(count: int, level: int, top: int | None) -> str:
    """Generalized number of events (LONGITUDINAL.md §2.6): level 0 exact, level 1
    ``0 | 1 | 2-3 | 4-7 | 8-15 | 16+``, level 2 ``0 | 1 | 2+``, level 3 ``*``.

    Top-coding at ``top`` (``None``: none) applies at every level so that the hierarchy
    stays a function of the level below: at level 0 counts from ``top`` on read
    ``"{top}+"``; at levels 1-2 the bin holding ``top`` and every bin above it merge into
    ``"{low}+"`` (e.g. top 12: ``8+``).
    """
    if level >= 3:
        return "*"
    if level == 0:
        if top is not None and count >= top:
            return f"{top}+"
        return str(count)
    lows = COUNT_RANGES[level - 1]
    if top is not None:
        cut = max(i for i, low in enumerate(lows) if low <= top)
        lows = lows[: cut + 1]
    return _range_label(count, lows)


# --------------------------------------------------------------------------- §2.7 dates

#: Interval widths in days of the anchored mode, level 1.. (LONGITUDINAL.md §2.7); the
#: level above the last one is "*".
INTERVAL_WIDTHS: tuple[int, ...] = (7, 30, 90, 365)
#: Widths in days of the anchor's levels (day, month, year, 5 years), for date shifting.
ANCHOR_WIDTHS: tuple[int, ...] = (1, 31, 366, 1827)


def interval_bin(days: int, width: int) -> int:
    """Interval bin ``⌊d / w⌋`` of an event ``d`` days after the anchor (LONGITUDINAL.md
    §2.7, TC6). The bins of 7 and 30 days (and of 90 and 365) do not nest: counts need
    not be monotone along this dimension, and the search does not assume they are."""
    return days // width


def interval_leaves(width: int, domain: int) -> int:
    """Days a bin of ``width`` days covers, for Loss (Iyengar 2002): the width itself,
    so that a wider bin always costs more; the top ("*") covers the whole ``domain``."""
    return min(width, domain)


def interval_domain(max_days: int) -> int:
    """Days of the interval domain: the largest interval + 1, rounded up to whole years
    (so that every width, 365 included, fits inside it and the top costs most)."""
    return 365 * max(1, math.ceil((max_days + 1) / 365))


def anchor_level_for_shift(max_days: int) -> int:
    """Finest level at which the anchor is measured when dates are shifted per person by
    up to ``±max_days`` (LONGITUDINAL.md §2.7, derived: "anchor at the shift range's
    granularity"): the first of day, month, year, 5 years whose width holds the
    ``2·max_days + 1`` possible true dates (4 = "*" beyond five years)."""
    span = 2 * max_days + 1
    for level, width in enumerate(ANCHOR_WIDTHS):
        if width >= span:
            return level
    return len(ANCHOR_WIDTHS)


# --------------------------------------------------------------------------- loss (§3.2)


def dimension_loss(weighted_leaves: int, units: int, domain_size: int) -> float:
    """Loss of one quasi-identifier (Iyengar 2002, ``loss.formulas.loss_of_dimension``;
    LONGITUDINAL.md §3.2 "L1 QIs weighted per person, L2 QIs per event").

    ``units`` are the persons (person-level QI) or the events of its table (event-level
    QI) of the input; ``weighted_leaves`` sums, over them, the hierarchy leaves their
    released value covers, a suppressed person or event counting the whole domain.
    """
    return loss_of_dimension(weighted_leaves, units, domain_size)


def information_loss(dimension_losses: Sequence[float]) -> float:
    """Aggregate over quasi-identifiers: ``Π_j (1 + L_j)^(1/d) − 1`` (ARX's geometric
    mean, ``loss.formulas.geometric_mean_loss``)."""
    return geometric_mean_loss(dimension_losses)
