"""Counting and evaluating one lattice node (LONGITUDINAL.md §2.3-2.5, §3.2).

A :class:`Workspace` holds what depends on the problem alone (base features, each
dimension's leaves for Loss) and caches, per node, the person-level classes and the
feature sets (an event-level level combination serves every person-level combination,
and vice versa). It gives

* :meth:`Workspace.counts`: the strict per-person counts ``k_i`` at a node, exactly;
* :meth:`Workspace.evaluate`: event then person suppression under a ``k`` and two
  budgets, with the node's information loss; its figures are those of the data the
  node releases (:meth:`Workspace.suppression`, ``released.settle``: a suppressed event
  changes the event count a recipient counts, and with shifted dates the first date).

Information loss (LONGITUDINAL.md §3.2, decision) is ``node_loss.NodeLoss``, which the
workspace inherits: :meth:`Workspace.loss` after suppression, :meth:`Workspace.lower_bound`
(and ``lower_bounds``) with nothing suppressed.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError
from apps.engine.longitudinal import kernels
from apps.engine.longitudinal.features import (
    BaseFeatures,
    NodeClasses,
    NodeFeatures,
    base_features,
    node_classes,
    node_features,
)
from apps.engine.longitudinal.formulas import (
    ALL,
    Power,
    average_risk,
    max_risk,
)
from apps.engine.longitudinal.node_loss import NodeLoss
from apps.engine.longitudinal.problem import LongitudinalProblem
from apps.engine.longitudinal.released import settle

I64 = NDArray[np.int64]
#: Most subsets (``Σ_i binom(|F_i|, s_i)``) one exact count may examine. Memory is about
#: 40 bytes per distinct subset of the largest person-level class (p = 3).
DEFAULT_SUBSET_BUDGET = 50_000_000
#: Feature sets kept for reuse (an event-level level combination serves many nodes).
_FEATURE_CACHE_BYTES = 1 << 30
_CLASS_CACHE_BYTES = 1 << 28


class CountingBudgetExceeded(EngineInputError):
    """Exact counting at a node would examine more subsets than the budget allows."""

    def __init__(
        self, *, power: Power, subsets: int, budget: int, levels: Mapping[str, int]
    ) -> None:
        self.power, self.subsets, self.budget, self.levels = power, subsets, budget, dict(levels)
        where = ", ".join(f"{name}={level}" for name, level in levels.items()) or "the data"
        super().__init__(
            f"exact counting with adversary power {power} needs {subsets:,} subsets of "
            f"events at levels {where} (budget {budget:,}); nothing is estimated: generalize "
            "the event-level quasi-identifiers further (higher minimum levels), lower the "
            "power, or raise the subset budget"
        )


def kernel_power(power: Power) -> int:
    """The kernels' encoding: 0 for complete knowledge ("all"), else p."""
    if power == ALL:
        return 0
    assert isinstance(power, int)
    return power


@dataclass(frozen=True)
class NodeOutcome:
    """A node evaluated with suppression (LONGITUDINAL.md §3.2 steps 3-6)."""

    levels: tuple[int, ...]
    passes: bool
    decided_early: bool  # failed before suppression finished: counts below are partial
    truncated: bool  # the event budget cut event suppression short
    suppressed_persons: int
    suppressed_events: int  # by event suppression (the event budget's count)
    events_of_suppressed_persons: int  # the suppressed persons' other events
    min_class_size: int  # smallest per-person count among the persons kept (0: none kept)
    max_risk: float
    average_risk: float
    information_loss: float


class Workspace(NodeLoss):
    """Per-problem state and per-node caches for counting and evaluation."""

    def __init__(self, problem: LongitudinalProblem) -> None:
        self.problem = problem
        self._features: OrderedDict[tuple[int, ...], NodeFeatures] = OrderedDict()
        self._classes: OrderedDict[tuple[int, ...], NodeClasses] = OrderedDict()
        self.nodes_counted = 0

    @cached_property
    def base(self) -> BaseFeatures:
        return base_features(self.problem)

    # ------------------------------------------------------------------ caches

    def features(self, levels: Sequence[int]) -> NodeFeatures:
        key = tuple(levels[j] for j in self.problem.event_dimensions())
        found = self._features.get(key)
        if found is None:
            found = node_features(self.problem, self.base, levels)
            self._features[key] = found
            while len(self._features) > 1 and (
                sum(f.nbytes for f in self._features.values()) > _FEATURE_CACHE_BYTES
            ):
                self._features.popitem(last=False)
        else:
            self._features.move_to_end(key)
        return found

    def classes(self, levels: Sequence[int]) -> NodeClasses:
        key = tuple(levels[j] for j in self.problem.person_dimensions())
        found = self._classes.get(key)
        if found is None:
            found = node_classes(self.problem, levels)
            self._classes[key] = found
            while len(self._classes) > 1 and (
                sum(c.nbytes for c in self._classes.values()) > _CLASS_CACHE_BYTES
            ):
                self._classes.popitem(last=False)
        else:
            self._classes.move_to_end(key)
        return found

    def named(self, levels: Sequence[int]) -> dict[str, int]:
        return dict(zip(self.problem.names, (int(v) for v in levels), strict=True))

    # ------------------------------------------------------------------ counting

    def subsets(self, levels: Sequence[int], power: Power) -> int:
        """``Σ_i binom(|F_i|, s_i)`` at the node (formulas.subset_total)."""
        return int(kernels.subset_total(self.features(levels).offsets, kernel_power(power)))

    def check_budget(self, levels: Sequence[int], power: Power, budget: int) -> int:
        subsets = self.subsets(levels, power)
        if subsets > budget:
            raise CountingBudgetExceeded(
                power=power, subsets=subsets, budget=budget, levels=self.named(levels)
            )
        return subsets

    def counts(
        self, levels: Sequence[int], power: Power, *, budget: int = DEFAULT_SUBSET_BUDGET
    ) -> I64:
        """Strict per-person counts ``k_i`` (persons in id order), exactly."""
        self.check_budget(levels, power, budget)
        classes, features = self.classes(levels), self.features(levels)
        self.nodes_counted += 1
        return kernels.person_counts(
            classes.order,
            classes.starts,
            features.offsets,
            features.features,
            features.count,
            kernel_power(power),
        )

    # ------------------------------------------------------------------ evaluation

    def suppression(
        self, levels: Sequence[int], *, power: Power, k: int, event_budget: int, person_budget: int
    ) -> tuple[I64, NDArray[np.bool_], NDArray[np.bool_], I64]:
        """The node's suppression as released: the kernel's event then person phases, then
        the released event count and shifted anchor regrouped (``released.settle``).
        Returns (counts, kept persons, removed feature slots, kernel stats)."""
        levels = tuple(int(v) for v in levels)
        classes, features = self.classes(levels), self.features(levels)
        kk, alive, removed, stats = kernels.evaluate(
            classes.order,
            classes.starts,
            classes.position,
            features.offsets,
            features.features,
            features.events,
            features.count,
            kernel_power(power),
            k,
            event_budget,
            person_budget,
        )
        settle(
            self.problem,
            self.base,
            levels,
            classes,
            features,
            kernel_power(power),
            k,
            kk,
            alive,
            removed,
            stats,
            person_budget,
        )
        return kk, alive, removed, stats

    def evaluate(
        self,
        levels: Sequence[int],
        *,
        power: Power,
        k: int,
        event_budget: int,
        person_budget: int,
        average_target: float | None = None,
        budget: int = DEFAULT_SUBSET_BUDGET,
    ) -> NodeOutcome:
        """Suppress events then persons until every kept person has ``k_i >= k`` within
        both budgets (and, for the strict average risk, the average over kept persons is
        at most ``average_target``)."""
        levels = tuple(int(v) for v in levels)
        classes = self.classes(levels)
        small = int(classes.sizes[classes.sizes < k].sum())
        if small > person_budget:
            # persons of classes smaller than k can only be removed: a certain failure
            return _failed(levels, small)
        features = self.features(levels)
        costs, _ = kernels.rare_costs(
            classes.order,
            classes.starts,
            features.offsets,
            features.features,
            features.events,
            features.count,
            k,
        )
        if kernels.cannot_fit(costs, small, event_budget, person_budget):
            # features held by fewer than k persons of a class: a certain failure too
            return _failed(levels, small)
        self.check_budget(levels, power, budget)
        self.nodes_counted += 1
        kk, alive, removed, stats = self.suppression(
            levels, power=power, k=k, event_budget=event_budget, person_budget=person_budget
        )
        if stats[kernels.DECIDED_EARLY]:
            return _failed(levels, int(stats[kernels.PERSONS_SUPPRESSED]))
        kept = kk[alive]
        passes = bool(stats[kernels.PASSES])
        avg = average_risk(kept)
        if passes and average_target is not None:
            passes = avg <= average_target + 1e-12
        dead_events = int(features.events[~alive[features.slot_person] & ~removed].sum())
        return NodeOutcome(
            levels=levels,
            passes=passes,
            decided_early=False,
            truncated=bool(stats[kernels.TRUNCATED]),
            suppressed_persons=int(stats[kernels.PERSONS_SUPPRESSED]),
            suppressed_events=int(stats[kernels.EVENTS_SUPPRESSED]),
            events_of_suppressed_persons=dead_events,
            min_class_size=int(kept.min()) if len(kept) else 0,
            max_risk=max_risk(kept),
            average_risk=avg,
            information_loss=self.loss(levels, features, alive, removed),
        )


def _failed(levels: tuple[int, ...], persons: int) -> NodeOutcome:
    return NodeOutcome(
        levels=levels,
        passes=False,
        decided_early=True,
        truncated=False,
        suppressed_persons=persons,
        suppressed_events=0,
        events_of_suppressed_persons=0,
        min_class_size=0,
        max_risk=math.nan,
        average_risk=math.nan,
        information_loss=math.nan,
    )
