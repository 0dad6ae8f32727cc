"""The information loss of a longitudinal node (LONGITUDINAL.md §3.2, decision), for
:class:`~apps.engine.longitudinal.evaluate.Workspace`.

For each quasi-identifier ``j``, Iyengar's Loss ``L_j`` (``formulas.dimension_loss``) over
its *units*, the persons for a person-level QI (given or derived) and the events of its
table for an event-level QI: each unit costs ``(leaves(g) − 1) / (|H_j| − 1)`` for its
released generalized value ``g``, a suppressed unit (a removed person; a suppressed event,
or any event of a removed person) costs 1, as if generalized to the top.
``information_loss = Π_j (1 + L_j)^(1/d) − 1``. With nothing suppressed a node's loss is
its *lower bound* (:meth:`NodeLoss.lower_bound`): a suppressed unit costs at least as much
as any released value, and every released value covers at least as many leaves one level
up, so the bound is also monotone up the lattice.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from apps.engine.longitudinal.features import (
    BaseFeatures,
    NodeFeatures,
)
from apps.engine.longitudinal.formulas import (
    dimension_loss,
    information_loss,
)
from apps.engine.longitudinal.problem import LongitudinalProblem

I64 = NDArray[np.int64]


class NodeLoss:
    """The loss part of a `Workspace`: per-dimension leaves and sums that depend on the
    problem alone (cached), and a node's loss before and after suppression."""

    problem: LongitudinalProblem

    @property
    def base(self) -> BaseFeatures:
        """The problem's base features (`Workspace.base`, computed once there)."""
        raise NotImplementedError

    @cached_property
    def _person_leaves(self) -> dict[int, list[I64]]:
        """Per person-level dimension and level: leaves covered by each person's value."""
        out = {}
        for j in self.problem.person_dimensions():
            d = self.problem.dimensions[j]
            out[j] = [
                d.lookup.leaves[level][d.lookup.maps[level][d.codes]].astype(np.int64)
                for level in range(d.height + 1)
            ]
        return out

    @cached_property
    def _event_leaves(self) -> dict[int, list[I64]]:
        """Per event-level dimension and level: leaves covered, per base feature of its table."""
        out = {}
        for j in self.problem.event_dimensions():
            d = self.problem.dimensions[j]
            codes = self.base.codes[j]
            out[j] = [
                d.lookup.leaves[level][d.lookup.maps[level][codes]].astype(np.int64)
                for level in range(d.height + 1)
            ]
        return out

    def _units(self, j: int) -> int:
        d = self.problem.dimensions[j]
        if d.scope == "person":
            return self.problem.persons
        return len(self.problem.event_persons[d.table])

    @cached_property
    def _weighted(self) -> dict[int, list[int]]:
        """Per dimension and level: summed leaves with nothing suppressed."""
        out: dict[int, list[int]] = {}
        for j, per_level in self._person_leaves.items():
            out[j] = [int(v.sum()) for v in per_level]
        for j, per_level in self._event_leaves.items():
            t = self.problem.dimensions[j].table
            lo, hi = int(self.base.first[t]), int(self.base.first[t + 1])
            events = self.base.events_of[lo:hi]
            out[j] = [int((v * events).sum()) for v in per_level]
        return out

    @cached_property
    def dimension_bounds(self) -> list[list[float]]:
        """Per dimension and level: its Loss with nothing suppressed."""
        out = []
        for j, d in enumerate(self.problem.dimensions):
            out.append(
                [
                    dimension_loss(self._weighted[j][level], self._units(j), d.lookup.domain_size)
                    for level in range(d.height + 1)
                ]
            )
        return out

    def lower_bound(self, levels: Sequence[int]) -> float:
        """Information loss of the node with nothing suppressed (a lower bound)."""
        return information_loss([self.dimension_bounds[j][lv] for j, lv in enumerate(levels)])

    def lower_bounds(self, levels: NDArray[np.integer[Any]]) -> NDArray[np.float64]:
        """:meth:`lower_bound` of every row of ``levels`` at once (same arithmetic)."""
        d = len(self.problem.dimensions)
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        product = np.ones(len(levels), dtype=np.float64)
        for j in range(d):
            table = 1.0 + np.asarray(self.dimension_bounds[j], dtype=np.float64)
            product = product * table[levels[:, j]]
        out: NDArray[np.float64] = product ** (1.0 / d) - 1.0
        return out

    def loss(
        self,
        levels: Sequence[int],
        features: NodeFeatures,
        alive: NDArray[np.bool_],
        removed: NDArray[np.bool_],
    ) -> float:
        """Information loss of the node after suppression (module docstring)."""
        dead = np.flatnonzero(~alive)
        slots = np.flatnonzero(removed | ~alive[features.slot_person])
        node_feature = features.features[slots].astype(np.int64)
        slot_events = features.events[slots]
        representative = np.zeros(features.count, dtype=np.int64)
        representative[features.of_base] = np.arange(len(features.of_base), dtype=np.int64)
        base_of_slot = representative[node_feature]
        losses = []
        for j, d in enumerate(self.problem.dimensions):
            weighted = self._weighted[j][levels[j]]
            domain = d.lookup.domain_size
            if d.scope == "person":
                leaves = self._person_leaves[j][levels[j]][dead]
                weighted += int((domain - leaves).sum())
            else:
                first = int(self.base.first[d.table])
                mine = self.base.table[base_of_slot] == d.table
                leaves = self._event_leaves[j][levels[j]][base_of_slot[mine] - first]
                weighted += int(((domain - leaves) * slot_events[mine]).sum())
            losses.append(dimension_loss(weighted, self._units(j), domain))
        return information_loss(losses)
