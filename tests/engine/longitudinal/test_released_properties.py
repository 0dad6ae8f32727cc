"""Property tests: a node's figures equal the measure of its released rows, by brute force.

Random persons (a person table) with events (an event code, dates; some persons without
any event, some with one), the number of events as a quasi-identifier (random top-code),
dates absent, anchored, or anchored and shifted; random nodes, powers and budgets. For
every node that passes, the rows its release keeps (``release.node_release``) are
measured again in plain Python, as a recipient reads them: the persons released are those
with a released row and the kept persons without any event in the input (a row of the
person table); a person whose every event was suppressed is not released and counts as
suppressed. A person's number of events is its released rows (top-coded, at the node's
level); with shifted dates its anchor is its first released date and every interval is
counted from it; without a shift the anchor is the column the release writes (the
input's first date).
The strict count of every released person (``formulas.strict_count`` over its class)
gives the smallest count and the risks, which must equal the engine's; and the search's
optimum equals exhaustive search under that evaluation.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity, MaxRisk
from apps.engine.hierarchies import Hierarchy
from apps.engine.longitudinal import (
    ALL,
    DateSpec,
    EventCountSpec,
    EventTable,
    Workspace,
    exhaustive_search,
    from_tables,
    optimal_search,
    prepare,
)
from apps.engine.longitudinal.formulas import INTERVAL_WIDTHS, event_count_label, strict_count
from apps.engine.longitudinal.problem import LongitudinalProblem
from apps.engine.longitudinal.release import Budgets, budgets_reproducing, node_release

SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
START = date(2020, 1, 1)
DAYS = (0, 3, 8, 20, 40, 400)
CODES = {"code": Hierarchy("code", (("A", "AB", "*"), ("B", "AB", "*"), ("Z", "Z", "*")))}
SEX = Hierarchy("sex", (("f", "*"), ("m", "*")))


@st.composite
def problems(draw: Any, dated: str) -> tuple[LongitudinalProblem, pl.DataFrame]:
    """``dated``: "none", "anchored" or "shifted"."""
    n = draw(st.integers(3, 8))
    rows: dict[str, list[str]] = {"pid": [], "sex": [], "code": [], "day": []}
    people: dict[str, list[str]] = {"pid": [], "sex": []}
    for i in range(n):
        sex = draw(st.sampled_from(["f", "m"]))
        people["pid"].append(f"P{i}")
        people["sex"].append(sex)
        first = draw(st.sampled_from([0, 5]))
        # persons without events (the person table's rows only); persons with one event,
        # whose suppression leaves them nothing to release
        events = draw(st.sampled_from([0, 1, 1, 2, 3, 5])) if i else 1  # P0 has one
        for _ in range(events):
            rows["pid"].append(f"P{i}")
            rows["sex"].append(sex)
            rows["code"].append(draw(st.sampled_from(["A", "B", "Z"])))
            day = START + timedelta(days=first + draw(st.sampled_from(DAYS)))
            rows["day"].append(day.isoformat())
    frame = pl.DataFrame(rows, schema={c: pl.String for c in rows})
    event_quasi = ("code",) if dated == "none" else ("day", "code")
    sexes = pl.DataFrame(people, schema={c: pl.String for c in people})
    # a person table: a person without events is released with the count 0; a person
    # whose every event is suppressed has no row left and is not
    data = from_tables(
        persons=sexes,
        person_key="pid",
        person_quasi=["sex"],
        events=[EventTable("events", frame.drop("sex"), "pid", event_quasi)],
    )
    dates = None
    if dated != "none":
        shift = draw(st.sampled_from([3, 100])) if dated == "shifted" else None
        dates = DateSpec(("day",), "anchored", shift)
    top = draw(st.sampled_from([None, 2, 3, "p95"]))
    problem = prepare(
        data,
        hierarchies={"sex": SEX, **CODES},
        dates=dates,
        event_count=EventCountSpec(top=top),
    )
    return problem, frame


def _levels(draw: Any, problem: LongitudinalProblem) -> dict[str, int]:
    return {d.name: draw(st.integers(d.min_level, d.height)) for d in problem.dimensions}


# --------------------------------------------------------------------------- plain measure


def _anchor_label(day: date | None, level: int) -> Any:
    if day is None:  # a person without events: missing, "*" at the top
        return "*" if level == 4 else None
    return (day.isoformat(), (day.year, day.month), day.year, day.year // 5, "*")[level]


def _interval_label(days: int, level: int) -> Any:
    if level == 0:
        return days
    if level > len(INTERVAL_WIDTHS):
        return "*"
    return days // INTERVAL_WIDTHS[level - 1]


def _code_label(code: str, level: int) -> str | None:
    return CODES["code"].generalize(code, level)


def released_persons(
    problem: LongitudinalProblem, frame: pl.DataFrame, kept: list[bool], kept_persons: list[str]
) -> list[str]:
    """The persons a recipient receives: those with a released row, and the kept persons
    without any event in the input (a row of the person table, the count 0)."""
    with_rows = {pid for pid, keep in zip(frame["pid"].to_list(), kept, strict=True) if keep}
    had_events = set(frame["pid"].to_list())
    return [pid for pid in kept_persons if pid in with_rows or pid not in had_events]


def released_counts(
    problem: LongitudinalProblem,
    frame: pl.DataFrame,
    levels: dict[str, int],
    kept: list[bool],
    persons: list[str],
) -> tuple[list[Any], list[set[Any]]]:
    """Each released person's class key and feature set, from the released rows alone
    (plus, without a shift, the anchor column the release writes: the input's first
    date; a person without events has none)."""
    dates = problem.dates
    shifted = dates is not None and dates.shift_days is not None
    rows = frame.to_dicts()
    first_input: dict[str, date] = {}
    sex = dict(zip(problem.data.ids.to_list(), problem.data.person_values["sex"], strict=True))
    for row in rows:
        day = date.fromisoformat(row["day"])
        first_input[row["pid"]] = min(first_input.get(row["pid"], day), day)
    by_person: dict[str, list[dict[str, str]]] = {pid: [] for pid in persons}
    for row, keep in zip(rows, kept, strict=True):
        if keep:
            by_person[row["pid"]].append(row)
    keys, sets = [], []
    for pid, own in by_person.items():
        key: list[Any] = [SEX.generalize(sex[pid], levels["sex"])]
        key.append(event_count_label(len(own), levels["event_count"], problem.event_count_top))
        features: set[Any] = set()
        anchor = None
        if dates is not None:
            days = [date.fromisoformat(r["day"]) for r in own]
            anchor = (min(days) if days else None) if shifted else first_input.get(pid)
            key.append(_anchor_label(anchor, levels["anchor"]))
        for r in own:
            code = _code_label(r["code"], levels["code"])
            if anchor is None:
                features.add((code,))
            else:
                interval = (date.fromisoformat(r["day"]) - anchor).days
                features.add((_interval_label(interval, levels["day"]), code))
        keys.append(tuple(key))
        sets.append(features)
    return keys, sets


def _kept(problem: LongitudinalProblem, alive: Any) -> list[str]:
    return [pid for pid, a in zip(problem.data.ids.to_list(), alive.tolist(), strict=True) if a]


def _measure(keys: list[Any], sets: list[set[Any]], power: Any) -> list[int]:
    return [
        strict_count(sets[i], [sets[j] for j in range(len(keys)) if keys[j] == keys[i]], power)
        for i in range(len(keys))
    ]


@SETTINGS
@given(data=st.data(), dated=st.sampled_from(["none", "anchored", "shifted"]))
def test_a_nodes_figures_are_the_measure_of_its_released_rows(data: Any, dated: str) -> None:
    problem, frame = data.draw(problems(dated))
    levels = _levels(data.draw, problem)
    power = data.draw(st.sampled_from([1, 2, ALL]))
    k = data.draw(st.integers(2, 3))
    budgets = Budgets(data.draw(st.integers(1, 8)), data.draw(st.integers(0, 4)))
    outcome = Workspace(problem).evaluate(
        problem.levels_of(levels),
        power=power,
        k=k,
        event_budget=budgets.events,
        person_budget=budgets.persons,
    )
    event(f"passes={outcome.passes}, events suppressed: {outcome.suppressed_events > 0}")
    if not outcome.passes:
        return
    release = node_release(problem, levels, criterion=KAnonymity(k), power=power, budgets=budgets)
    event(f"a person left without events: {release.persons_emptied > 0}")
    kept = release.kept_events[0].tolist()
    persons = released_persons(problem, frame, kept, _kept(problem, release.alive))
    keys, sets = released_counts(problem, frame, levels, kept, persons)
    counts = _measure(keys, sets, power)
    # persons and events: the figures count what the release keeps, the release as the
    # figures (every event once: by event suppression or with its person)
    assert outcome.suppressed_persons == problem.persons - len(persons)
    assert outcome.suppressed_events + outcome.events_of_suppressed_persons == (
        problem.events - sum(kept)
    )
    assert (
        release.persons_suppressed,
        release.events_suppressed,
        release.events_of_suppressed_persons,
    ) == (
        outcome.suppressed_persons,
        outcome.suppressed_events,
        outcome.events_of_suppressed_persons,
    )
    assert all(c >= k for c in counts)  # the release meets the target
    assert outcome.min_class_size == (min(counts) if counts else 0)
    if counts:
        assert outcome.max_risk == max(1 / c for c in counts)
        assert outcome.average_risk == pytest.approx(sum(1 / c for c in counts) / len(counts))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), dated=st.sampled_from(["none", "shifted"]))
def test_the_search_returns_the_exhaustive_optimum_and_its_release_meets_it(
    data: Any, dated: str
) -> None:
    problem, frame = data.draw(problems(dated))
    power = data.draw(st.sampled_from([1, ALL]))
    criterion = data.draw(st.sampled_from([KAnonymity(2), MaxRisk(0.34)]))
    kwargs: dict[str, Any] = {
        "power": power,
        "suppression_limit": data.draw(st.sampled_from([0.0, 0.2, 0.5])),
        "event_suppression_limit": data.draw(st.sampled_from([0.1, 0.3, 1.0])),
    }
    best, _ = exhaustive_search(problem, criterion, **kwargs)
    result = optimal_search(problem, criterion, pareto=True, **kwargs)
    event(f"solution: {best is not None}")
    if best is None:
        assert result.solution is None
        return
    assert result.solution is not None
    assert result.solution.levels == best.levels
    assert result.solution.information_loss == best.information_loss
    # the optimum and every alternative: released, each meets the target with its figures
    for node in (result.solution, *result.pareto):
        budgets = budgets_reproducing(
            problem,
            node.levels,
            criterion=criterion,
            power=power,
            suppressed_persons=node.suppressed_persons,
            suppressed_events=node.suppressed_events,
            **{k: v for k, v in kwargs.items() if k != "power"},
        )
        assert budgets is not None
        release = node_release(
            problem, node.levels, criterion=criterion, power=power, budgets=budgets
        )
        kept = release.kept_events[0].tolist()
        persons = released_persons(problem, frame, kept, _kept(problem, release.alive))
        keys, sets = released_counts(problem, frame, node.levels, kept, persons)
        counts = _measure(keys, sets, power)
        assert node.suppressed_persons == problem.persons - len(persons)
        assert min(counts) >= criterion.release_size
        assert node.max_risk == max(1 / c for c in counts)
        assert node.min_class_size == min(counts)
