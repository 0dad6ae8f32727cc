"""Step 4 on longitudinal data: risk counted in persons (LONGITUDINAL.md §2.3-2.5, §2.9).

:func:`measure` gives, at one generalization (levels; default the finest), the strict
per-person counts for the chosen adversary power and the data-set figures: smallest
count, maximum risk, average risk over persons, persons at risk. :func:`measure_by_power`
gives the same for p = 1…5 and "all" (a power whose exact count would exceed the subset
budget is reported as such, never estimated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from apps.engine.longitudinal.evaluate import (
    DEFAULT_SUBSET_BUDGET,
    CountingBudgetExceeded,
    Workspace,
)
from apps.engine.longitudinal.formulas import (
    DEFAULT_POWER,
    REPORTED_POWERS,
    Power,
    average_risk,
    max_risk,
    parse_power,
    persons_at_risk,
    power_key,
)
from apps.engine.longitudinal.problem import LongitudinalProblem

#: Default target of "persons at risk" (ARX's default threshold, as Step 4 uses).
DEFAULT_TARGET = 0.2


@dataclass(frozen=True)
class PowerRisk:
    """Data-set figures at one adversary power."""

    power: Power
    min_class_size: int | None
    max_risk: float | None
    average_risk: float | None
    persons_at_risk: int | None
    over_budget: str | None = None  # why this power was not counted

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "min_class_size": self.min_class_size,
            "max_risk": self.max_risk,
            "average_risk": self.average_risk,
            "persons_at_risk": self.persons_at_risk,
        }
        if self.over_budget is not None:
            out["over_budget"] = self.over_budget
        return out


@dataclass(frozen=True, eq=False)
class PersonRisk:
    """The measure at one node and power: per-person counts and their summary."""

    power: Power
    levels: dict[str, int]
    target: float
    persons: int
    events: int
    classes: int  # person-level classes
    subsets: int  # subsets examined by the exact count
    counts: NDArray[np.int64]  # k_i per person, in id order
    by_power: dict[str, PowerRisk] = field(default_factory=dict)

    @property
    def min_class_size(self) -> int:
        return int(self.counts.min()) if len(self.counts) else 0

    @property
    def max_risk(self) -> float:
        return max_risk(self.counts)

    @property
    def average_risk(self) -> float:
        return average_risk(self.counts)

    @property
    def persons_at_risk(self) -> int:
        return persons_at_risk(self.counts, self.target)

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "person",
            "persons": self.persons,
            "events": self.events,
            "power": self.power,
            "levels": self.levels,
            "person_classes": self.classes,
            "subsets": self.subsets,
            "min_class_size": self.min_class_size,
            "max_risk": self.max_risk,
            "average_risk": self.average_risk,
            "target": self.target,
            "persons_at_risk": self.persons_at_risk,
            "by_power": {key: risk.to_dict() for key, risk in self.by_power.items()},
        }


def _figures(counts: NDArray[np.int64], power: Power, target: float) -> PowerRisk:
    return PowerRisk(
        power=power,
        min_class_size=int(counts.min()) if len(counts) else 0,
        max_risk=max_risk(counts),
        average_risk=average_risk(counts),
        persons_at_risk=persons_at_risk(counts, target),
    )


def measure_by_power(
    problem: LongitudinalProblem,
    *,
    levels: Mapping[str, int] | None = None,
    powers: Sequence[Power] = REPORTED_POWERS,
    target: float = DEFAULT_TARGET,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
    workspace: Workspace | None = None,
) -> dict[str, PowerRisk]:
    """Figures for each power (default 1…5 and "all"), keyed "1"…"5", "all"."""
    space = workspace or Workspace(problem)
    node = problem.levels_of(levels)
    out: dict[str, PowerRisk] = {}
    for raw in powers:
        power = parse_power(raw)
        try:
            counts = space.counts(node, power, budget=subset_budget)
        except CountingBudgetExceeded as exc:
            out[power_key(power)] = PowerRisk(power, None, None, None, None, over_budget=str(exc))
            continue
        out[power_key(power)] = _figures(counts, power, target)
    return out


def measure(
    problem: LongitudinalProblem,
    *,
    levels: Mapping[str, int] | None = None,
    power: Power = DEFAULT_POWER,
    target: float = DEFAULT_TARGET,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
    by_power: Sequence[Power] | None = REPORTED_POWERS,
    workspace: Workspace | None = None,
) -> PersonRisk:
    """Measure the per-person risk at ``levels`` (default: every QI at its finest level).

    Raises :class:`CountingBudgetExceeded` when the chosen power cannot be counted
    exactly within ``subset_budget``; the other powers of ``by_power`` that cannot are
    reported as over budget.
    """
    chosen = parse_power(power)
    space = workspace or Workspace(problem)
    node = problem.levels_of(levels)
    subsets = space.check_budget(node, chosen, subset_budget)
    counts = space.counts(node, chosen, budget=subset_budget)
    powers: dict[str, PowerRisk] = {}
    if by_power:
        others = [p for p in by_power if parse_power(p) != chosen]
        counted = measure_by_power(
            problem,
            levels=levels,
            powers=others,
            target=target,
            subset_budget=subset_budget,
            workspace=space,
        )
        for raw in by_power:
            key = power_key(parse_power(raw))
            powers[key] = (
                _figures(counts, chosen, target) if parse_power(raw) == chosen else counted[key]
            )
    return PersonRisk(
        power=chosen,
        levels=space.named(node),
        target=target,
        persons=problem.persons,
        events=problem.events,
        classes=space.classes(node).classes,
        subsets=subsets,
        counts=counts,
        by_power=powers,
    )
