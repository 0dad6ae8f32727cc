"""What a chosen node releases (LONGITUDINAL.md §3.2 steps 4–5): which persons and which
events survive the node's suppression, and each quasi-identifier's generalized value per
person or per event, so that an integration can write the long table.

The suppression is the search's own: what evaluated the node
(``Workspace.suppression``: events first within their budget, least-shared feature of a
failing person first, then whole persons within theirs, then the persons whose released
event count or shifted anchor no longer passes, ``released.settle``) is run again on the
node with the budgets that produced it, and its outputs are mapped back from feature slots to the events in
their input order. The search keeps no budgets per alternative, so
:func:`budgets_reproducing` finds, among the budgets the search tried (its grid of
fractions of both limits), the first one whose outcome equals the node's figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.criteria import Criterion, StrictAverageRisk, allowed_suppression
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal.data import EventRecords, LongitudinalData
from apps.engine.longitudinal.evaluate import (
    DEFAULT_SUBSET_BUDGET,
    NodeOutcome,
    Workspace,
)
from apps.engine.longitudinal.features import _group
from apps.engine.longitudinal.formulas import Power, parse_power
from apps.engine.longitudinal.problem import LongitudinalProblem
from apps.engine.longitudinal.search import PARETO_FRACTIONS

Flags = NDArray[np.bool_]


@dataclass(frozen=True)
class Budgets:
    """Most events and most persons a node may suppress."""

    events: int
    persons: int

    def to_dict(self) -> dict[str, int]:
        return {"events": self.events, "persons": self.persons}


@dataclass(frozen=True, eq=False)
class NodeRelease:
    """A node after its suppression: the outcome (figures as the search saw them), the
    persons kept (id order), the events kept per event table (input order), the events
    removed by event suppression (the event budget's count, as the outcome's) and the
    other events of the persons suppressed, and the persons suppressed because event
    suppression left them no event (``released.settle``: no row of theirs is left)."""

    outcome: NodeOutcome
    alive: Flags
    kept_events: tuple[Flags, ...]
    events_suppressed: int
    events_of_suppressed_persons: int
    persons_emptied: int

    @property
    def persons_suppressed(self) -> int:
        return int((~self.alive).sum())


def full_budgets(
    problem: LongitudinalProblem, suppression_limit: float, event_suppression_limit: float
) -> Budgets:
    """The budgets of both limits (as ``search.optimal_search`` computes them)."""
    return Budgets(
        events=allowed_suppression(problem.events, event_suppression_limit),
        persons=allowed_suppression(problem.persons, suppression_limit),
    )


def _evaluate(
    space: Workspace,
    levels: tuple[int, ...],
    power: Power,
    criterion: Criterion,
    budgets: Budgets,
    subset_budget: int,
) -> NodeOutcome:
    target = criterion.threshold if isinstance(criterion, StrictAverageRisk) else None
    return space.evaluate(
        levels,
        power=power,
        k=criterion.release_size,
        event_budget=budgets.events,
        person_budget=budgets.persons,
        average_target=target,
        budget=subset_budget,
    )


def budgets_reproducing(
    problem: LongitudinalProblem,
    levels: Mapping[str, int],
    *,
    criterion: Criterion,
    power: Power,
    suppression_limit: float,
    event_suppression_limit: float,
    suppressed_persons: int,
    suppressed_events: int,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
    workspace: Workspace | None = None,
) -> Budgets | None:
    """The first budgets of the search's grid (full budgets first) under which the node
    passes with exactly these suppressed persons and events; None when none does."""
    space = workspace or Workspace(problem)
    full = full_budgets(problem, suppression_limit, event_suppression_limit)
    node = problem.levels_of(levels)
    chosen = parse_power(power)
    for e_share in PARETO_FRACTIONS:
        for p_share in PARETO_FRACTIONS:
            budgets = Budgets(math.floor(full.events * e_share), math.floor(full.persons * p_share))
            outcome = _evaluate(space, node, chosen, criterion, budgets, subset_budget)
            if (
                outcome.passes
                and outcome.suppressed_persons == suppressed_persons
                and outcome.suppressed_events == suppressed_events
            ):
                return budgets
    return None


def event_features(
    problem: LongitudinalProblem, space: Workspace, levels: Sequence[int]
) -> list[NDArray[np.int64]]:
    """Per event table, each event's feature id at the node (input order), numbered as
    ``features.node_features`` numbers them."""
    base = space.base
    node = space.features(levels)
    out = []
    for t, persons in enumerate(problem.event_persons):
        dims = problem.event_dimensions(t)
        local, _ = _group(
            [problem.dimensions[j].codes for j in dims],
            [problem.dimensions[j].lookup.size(0) for j in dims],
            len(persons),
        )
        out.append(node.of_base[local + int(base.first[t])])
    return out


def node_release(
    problem: LongitudinalProblem,
    levels: Mapping[str, int],
    *,
    criterion: Criterion,
    power: Power,
    budgets: Budgets,
    subset_budget: int = DEFAULT_SUBSET_BUDGET,
    workspace: Workspace | None = None,
) -> NodeRelease:
    """The node's suppression, person by person and event by event (module docstring).
    Refuses a node that does not pass under these budgets: it is not a release."""
    space = workspace or Workspace(problem)
    node = problem.levels_of(levels)
    chosen = parse_power(power)
    outcome = _evaluate(space, node, chosen, criterion, budgets, subset_budget)
    if not outcome.passes:
        raise EngineInputError(
            "the chosen generalization does not meet the target within the suppression "
            "limits: run the search again"
        )
    features = space.features(node)
    _, alive, removed, _ = space.suppression(
        node,
        power=chosen,
        k=criterion.release_size,
        event_budget=budgets.events,
        person_budget=budgets.persons,
    )
    alive = np.asarray(alive, dtype=np.bool_)
    removed = np.asarray(removed, dtype=np.bool_)
    width = max(features.count, 1)
    slot_keys = features.slot_person * width + features.features.astype(np.int64)
    kept: list[Flags] = []
    by_event = 0
    with_person = 0
    had = np.zeros(problem.persons, dtype=np.bool_)  # persons with an event
    left = np.zeros(problem.persons, dtype=np.bool_)  # ... one event suppression left
    for persons, feature in zip(
        problem.event_persons, event_features(problem, space, node), strict=True
    ):
        person = np.asarray(persons, dtype=np.int64)
        slot = np.searchsorted(slot_keys, person * width + feature)
        gone = removed[slot]
        living = alive[person]
        kept.append(living & ~gone)
        by_event += int(gone.sum())
        with_person += int((~living & ~gone).sum())
        had[person] = True
        left[person[~gone]] = True
    return NodeRelease(
        outcome=outcome,
        alive=alive,
        kept_events=tuple(kept),
        events_suppressed=by_event,
        events_of_suppressed_persons=with_person,
        persons_emptied=int((~alive & had & ~left).sum()),
    )


def generalized_labels(problem: LongitudinalProblem, levels: Mapping[str, int]) -> dict[str, Any]:
    """Each quasi-identifier's generalized value at the node: a person-level one per
    person (id order), an event-level one per event of its table (input order), as text
    (None where the value is missing)."""
    node = problem.levels_of(levels)
    out: dict[str, pl.Series] = {}
    for j, d in enumerate(problem.dimensions):
        level = node[j]
        labels = d.lookup.labels[level]
        codes = d.lookup.maps[level][d.codes]
        out[d.name] = pl.Series(d.name, [labels[c] for c in codes.tolist()], dtype=pl.String)
    return out


def labelled_data(
    problem: LongitudinalProblem,
    levels: Mapping[str, int],
    person_quasi: Sequence[str],
    event_quasi: Sequence[str],
) -> LongitudinalData:
    """The problem's persons and events as their values at the levels read them
    (:func:`generalized_labels`): the named person-level dimensions (given or derived:
    ``event_count``, ``anchor``) and event-level ones (anchored dates as their
    intervals), the persons and events as they are (nothing suppressed)."""
    labels = generalized_labels(problem, levels)
    data = problem.data
    return LongitudinalData(
        person_key=data.person_key,
        ids=data.ids,
        person_values=pl.DataFrame([labels[q] for q in person_quasi] or None, height=data.persons),
        tables=tuple(
            EventRecords(
                name=t.name,
                person_index=t.person_index,
                values=pl.DataFrame(
                    [labels[q] for q in event_quasi if q in t.quasi] or None, height=t.events
                ),
            )
            for t in data.tables
        ),
    )
