"""Property tests: the compiled counts, suppression and search against plain definitions.

Random small data (person-level and event-level QIs with random consistent hierarchies,
missing values, repeated events, persons without events), random levels and powers:

* per-person counts equal ``formulas.strict_count`` enumerated over every subset, on
  values generalized through ``Hierarchy.generalize`` (not the compiled level maps);
* event then person suppression equals a plain re-implementation of LONGITUDINAL.md
  §3.2 steps 4-5 that recounts everything after every step;
* information loss equals Iyengar's Loss recomputed from the hierarchy rows;
* the optimal search equals exhaustive search over the lattice, with and without
  suppression budgets.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity, MaxRisk, StrictAverageRisk, allowed_suppression
from apps.engine.hierarchies import Hierarchy
from apps.engine.longitudinal import (
    ALL,
    EventTable,
    Workspace,
    exhaustive_search,
    from_tables,
    optimal_search,
    prepare,
)
from apps.engine.longitudinal.formulas import strict_count
from apps.engine.longitudinal.problem import LongitudinalProblem, natural_key
from apps.engine.loss import geometric_mean_loss, loss_of_dimension

POWERS = (1, 2, 3, ALL)
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def hierarchy_rows(draw: Any, column: str, leaves: int) -> list[tuple[str, ...]]:
    """A consistent hierarchy over leaves v0..v{leaves-1}: each level groups the last."""
    height = draw(st.integers(1, 3))
    groups = list(range(leaves))
    rows: list[list[str]] = [[f"{column}{i}"] for i in range(leaves)]
    for level in range(1, height + 1):
        if level == height and draw(st.booleans()):
            labels = dict.fromkeys(set(groups), "*")
        else:
            labels = {g: f"{column}L{level}g{draw(st.integers(0, 2))}" for g in sorted(set(groups))}
        for row, g in zip(rows, groups, strict=True):
            row.append(labels[g])
        groups = [hash(labels[g]) for g in groups]
    return [tuple(r) for r in rows]


@st.composite
def problems(
    draw: Any,
    with_missing: bool = True,
    persons: tuple[int, int] = (1, 9),
    person_quasi: tuple[int, int] = (0, 2),
    event_quasi: tuple[int, int] = (0, 2),
) -> tuple[LongitudinalProblem, dict[str, Hierarchy]]:
    n = draw(st.integers(*persons))
    person_q = [f"p{j}" for j in range(draw(st.integers(*person_quasi)))]
    event_q = [f"e{j}" for j in range(draw(st.integers(*event_quasi)))]
    hierarchies: dict[str, Hierarchy] = {}
    for q in person_q:
        hierarchies[q] = Hierarchy(q, tuple(draw(hierarchy_rows(q, draw(st.integers(1, 3))))))
    for q in event_q:
        hierarchies[q] = Hierarchy(q, tuple(draw(hierarchy_rows(q, draw(st.integers(1, 4))))))

    def value(q: str) -> str | None:
        leaves = hierarchies[q].leaves
        if with_missing and draw(st.integers(0, 9)) == 0:
            return None
        return draw(st.sampled_from(leaves))

    ids = [f"P{i}" for i in range(n)]
    persons = {"pid": ids, **{q: [value(q) for _ in ids] for q in person_q}}
    events: dict[str, list[str | None]] = {"pid": [], **{q: [] for q in event_q}}
    for pid in ids:
        # few distinct events, often repeated
        distinct = [{q: value(q) for q in event_q} for _ in range(draw(st.integers(0, 4)))]
        for _ in range(draw(st.integers(0, 6)) if distinct else 0):
            chosen = draw(st.sampled_from(distinct))
            events["pid"].append(pid)
            for q in event_q:
                events[q].append(chosen[q])
    schema = {c: pl.String for c in events}
    data = from_tables(
        persons=pl.DataFrame(persons, schema={c: pl.String for c in persons}),
        person_key="pid",
        person_quasi=person_q,
        events=[EventTable("events", pl.DataFrame(events, schema=schema), "pid", tuple(event_q))],
    )
    return prepare(data, hierarchies=hierarchies), hierarchies


def _levels(draw: Any, problem: LongitudinalProblem) -> tuple[int, ...]:
    return tuple(draw(st.integers(0, d.height)) for d in problem.dimensions)


# --------------------------------------------------------------------------- plain definitions


def _generalize(hierarchy: Hierarchy, value: str | None, level: int) -> Any:
    if value is None:
        top = level == hierarchy.height and hierarchy.top_is_single_value
        return hierarchy.rows[0][-1] if top else ("<missing>",)
    return hierarchy.generalize(value, level)


def _plain(
    problem: LongitudinalProblem, hierarchies: dict[str, Hierarchy], levels: tuple[int, ...]
) -> tuple[list[Any], list[dict[Any, int]]]:
    """Each person's generalized person-level tuple and feature -> events, from the raw
    values (independent of the compiled level maps)."""
    data = problem.data
    names = problem.names
    level_of = dict(zip(names, levels, strict=True))
    keys = []
    for i in range(data.persons):
        keys.append(
            tuple(
                _generalize(hierarchies[q], data.person_values[q][i], level_of[q])
                for q in data.person_quasi
            )
        )
    features: list[dict[Any, int]] = [defaultdict(int) for _ in range(data.persons)]
    for t, table in enumerate(data.tables):
        for e in range(table.events):
            feature = (
                t,
                tuple(
                    _generalize(hierarchies[q], table.values[q][e], level_of[q])
                    for q in table.quasi
                ),
            )
            features[int(table.person_index[e])][feature] += 1
    return keys, features


def _strict(keys: list[Any], sets: list[set[Any]], alive: list[bool], power: Any) -> list[int]:
    out = []
    for i in range(len(keys)):
        if not alive[i]:
            out.append(0)
            continue
        peers = [sets[j] for j in range(len(keys)) if alive[j] and keys[j] == keys[i]]
        out.append(strict_count(sets[i], peers, power))
    return out


def _feature_order(feature: Any) -> Any:
    table, values = feature
    return (table, tuple(natural_key(v) if isinstance(v, str) else (2, 0.0, "") for v in values))


def _reference_suppression(
    keys: list[Any], features: list[dict[Any, int]], power: Any, k: int, events: int, persons: int
) -> tuple[bool, list[bool], int, int]:
    """LONGITUDINAL.md §3.2 steps 4-5, recounting everything after every step; a person
    whose every event was suppressed is removed (``released.settle``)."""
    n = len(keys)
    alive = [True] * n
    sets = [set(f) for f in features]
    size = defaultdict(int)
    for key in keys:
        size[key] += 1
    removed_persons = 0
    for i in range(n):
        if size[keys[i]] < k:
            alive[i] = False
            removed_persons += 1
    spent = 0
    while True:
        counts = _strict(keys, sets, alive, power)
        failing = [i for i in range(n) if alive[i] and counts[i] < k and sets[i]]
        if not failing:
            break
        i = failing[0]
        support = {
            f: sum(1 for j in range(n) if alive[j] and keys[j] == keys[i] and f in sets[j])
            for f in sets[i]
        }
        f = min(sets[i], key=lambda x: (support[x], _feature_order(x)))
        if spent + features[i][f] > events:
            break
        spent += features[i][f]
        sets[i].discard(f)
    for i in range(n):  # a person left without events has no row released: it goes
        if alive[i] and features[i] and not sets[i]:
            alive[i] = False
            removed_persons += 1
    while True:
        counts = _strict(keys, sets, alive, power)
        gone = [i for i in range(n) if alive[i] and counts[i] < k]
        if not gone:
            break
        for i in gone:
            alive[i] = False
        removed_persons += len(gone)
    return removed_persons <= persons, alive, spent, removed_persons


# --------------------------------------------------------------------------- counts


@SETTINGS
@given(data=st.data())
def test_counts_equal_the_subset_enumeration(data: Any) -> None:
    problem, hierarchies = data.draw(problems())
    levels = _levels(data.draw, problem)
    power = data.draw(st.sampled_from(POWERS))
    keys, features = _plain(problem, hierarchies, levels)
    sets = [set(f) for f in features]
    expected = _strict(keys, sets, [True] * len(keys), power)
    got = Workspace(problem).counts(levels, power)
    assert got.tolist() == expected


@SETTINGS
@given(data=st.data())
def test_counts_fall_as_the_adversary_knows_more(data: Any) -> None:
    problem, _ = data.draw(problems())
    levels = _levels(data.draw, problem)
    space = Workspace(problem)
    by_power = [space.counts(levels, p) for p in (1, 2, 3, 4)]
    for weaker, stronger in zip(by_power, by_power[1:], strict=False):
        assert np.all(stronger <= weaker)
    # every feature set has at most 4 features: p = 4 asks for the whole set (superset
    # rule), complete knowledge for an equal set, which fewer persons have
    assert np.all(space.counts(levels, ALL) <= by_power[-1])


# --------------------------------------------------------------------------- suppression and loss


@SETTINGS
@given(data=st.data(), crowded=st.booleans())
def test_suppression_equals_the_plain_procedure(data: Any, crowded: bool) -> None:
    # "crowded": large person-level classes with many distinct events, where event
    # suppression has work to do and the event budget often cuts it short
    shape = {"persons": (4, 12), "person_quasi": (0, 1), "event_quasi": (1, 2)} if crowded else {}
    problem, hierarchies = data.draw(problems(**shape))
    levels = _levels(data.draw, problem)
    power = data.draw(st.sampled_from(POWERS))
    k = data.draw(st.integers(2, 3) if crowded else st.integers(1, 4))
    event_budget = data.draw(st.integers(0, 8 if crowded else 12))
    person_budget = data.draw(st.integers(0, 3 if crowded else 6))
    keys, features = _plain(problem, hierarchies, levels)
    passes, alive, spent, removed = _reference_suppression(
        keys, features, power, k, event_budget, person_budget
    )
    outcome = Workspace(problem).evaluate(
        levels, power=power, k=k, event_budget=event_budget, person_budget=person_budget
    )
    event(f"passes={passes}, decided early={outcome.decided_early}")
    event(f"events suppressed: {spent > 0}, persons suppressed: {removed > 0}")
    event(f"event budget cut the phase: {outcome.truncated}")
    assert outcome.passes == passes
    if outcome.decided_early:
        assert not passes
        return
    assert outcome.suppressed_persons == removed
    assert outcome.suppressed_events == spent
    kept = [
        c
        for c, a in zip(
            _final_counts(keys, features, power, k, event_budget, person_budget), alive, strict=True
        )
        if a
    ]
    assert outcome.min_class_size == (min(kept) if kept else 0)


def _final_counts(
    keys: list[Any], features: list[dict[Any, int]], power: Any, k: int, events: int, persons: int
) -> list[int]:
    # the plain procedure again, returning the counts after suppression
    n = len(keys)
    _, alive, _, _ = _reference_suppression(keys, features, power, k, events, persons)
    sets = _sets_after(keys, features, power, k, events)
    return _strict(keys, sets, alive, power) if n else []


def _sets_after(
    keys: list[Any], features: list[dict[Any, int]], power: Any, k: int, events: int
) -> list[set[Any]]:
    n = len(keys)
    alive = [True] * n
    size = defaultdict(int)
    for key in keys:
        size[key] += 1
    for i in range(n):
        if size[keys[i]] < k:
            alive[i] = False
    sets = [set(f) for f in features]
    spent = 0
    while True:
        counts = _strict(keys, sets, alive, power)
        failing = [i for i in range(n) if alive[i] and counts[i] < k and sets[i]]
        if not failing:
            return sets
        i = failing[0]
        support = {
            f: sum(1 for j in range(n) if alive[j] and keys[j] == keys[i] and f in sets[j])
            for f in sets[i]
        }
        f = min(sets[i], key=lambda x: (support[x], _feature_order(x)))
        if spent + features[i][f] > events:
            return sets
        spent += features[i][f]
        sets[i].discard(f)


@SETTINGS
@given(data=st.data())
def test_information_loss_is_iyengar_loss_per_person_and_per_event(data: Any) -> None:
    problem, hierarchies = data.draw(problems(with_missing=False))
    levels = _levels(data.draw, problem)
    power = data.draw(st.sampled_from(POWERS))
    k = data.draw(st.integers(1, 3))
    event_budget = data.draw(st.integers(0, 10))
    outcome = Workspace(problem).evaluate(
        levels, power=power, k=k, event_budget=event_budget, person_budget=problem.persons
    )
    assert not outcome.decided_early  # every person may go: nothing is decided early
    keys, features = _plain(problem, hierarchies, levels)
    _, alive, _, _ = _reference_suppression(keys, features, power, k, event_budget, problem.persons)
    sets = _sets_after(keys, features, power, k, event_budget)
    level_of = dict(zip(problem.names, levels, strict=True))
    dims = []
    d = problem.data
    for q in d.person_quasi:
        h = hierarchies[q]
        covered = defaultdict(int)
        for row in h.rows:
            covered[row[level_of[q]]] += 1
        weighted = sum(
            covered[h.generalize(d.person_values[q][i], level_of[q])] if alive[i] else len(h.rows)
            for i in range(d.persons)
        )
        dims.append(loss_of_dimension(weighted, d.persons, len(h.rows)))
    table = d.tables[0] if d.tables else None
    for q in d.event_quasi:
        assert table is not None
        h = hierarchies[q]
        covered = defaultdict(int)
        for row in h.rows:
            covered[row[level_of[q]]] += 1
        weighted = 0
        for e in range(table.events):
            i = int(table.person_index[e])
            feature = (
                0,
                tuple(
                    h2.generalize(table.values[q2][e], level_of[q2])
                    for q2, h2 in ((q2, hierarchies[q2]) for q2 in table.quasi)
                ),
            )
            released = alive[i] and feature in sets[i]
            weighted += (
                covered[h.generalize(table.values[q][e], level_of[q])] if released else len(h.rows)
            )
        dims.append(loss_of_dimension(weighted, table.events, len(h.rows)))
    assert outcome.information_loss == pytest.approx(geometric_mean_loss(dims), abs=1e-12)


# --------------------------------------------------------------------------- search


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_optimal_search_equals_exhaustive_search(data: Any) -> None:
    problem, _ = data.draw(problems())
    power = data.draw(st.sampled_from(POWERS))
    criterion = data.draw(
        st.sampled_from([KAnonymity(2), KAnonymity(3), MaxRisk(0.5), StrictAverageRisk(0.4, 0.5)])
    )
    person_limit = data.draw(st.sampled_from([0.0, 0.1, 0.3, 1.0]))
    event_limit = data.draw(st.sampled_from([0.0, 0.1, 0.3, 1.0]))
    kwargs = {
        "power": power,
        "suppression_limit": person_limit,
        "event_suppression_limit": event_limit,
    }
    best, everything = exhaustive_search(problem, criterion, **kwargs)  # type: ignore[arg-type]
    result = optimal_search(problem, criterion, pareto=True, **kwargs)  # type: ignore[arg-type]
    event(f"solution: {best is not None}, nodes: {len(everything)}")
    if best is None:
        assert result.solution is None
        return
    event(f"solution suppresses: {best.suppressed_persons > 0 or best.suppressed_events > 0}")
    assert result.solution is not None
    assert result.solution.levels == best.levels
    assert result.solution.information_loss == best.information_loss
    assert result.solution.suppressed_persons <= allowed_suppression(problem.persons, person_limit)
    assert result.solution.suppressed_events <= allowed_suppression(problem.events, event_limit)
    # every alternative passes and none is dominated by another
    for alternative in result.pareto:
        assert alternative.passes
    # the lower bound never exceeds a node's loss
    space = Workspace(problem)
    names = problem.names
    for node in everything:
        if node.passes:
            levels = tuple(node.levels[n] for n in names)
            assert space.lower_bound(levels) <= node.information_loss + 1e-15
            if node.suppressed_persons == 0 and node.suppressed_events == 0:
                assert space.lower_bound(levels) == node.information_loss
