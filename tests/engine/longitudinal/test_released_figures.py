"""A node's figures are those of its release where suppressed events change what the
release shows (``released.settle``): the number of events a recipient counts, and the
anchor of shifted dates (the first released date). Worked out by hand."""

from __future__ import annotations

import pytest

from apps.engine.criteria import KAnonymity, MaxRisk
from apps.engine.longitudinal import (
    ALL,
    DateSpec,
    EventCountSpec,
    Workspace,
    optimal_search,
    prepare,
)
from apps.engine.longitudinal.problem import LongitudinalProblem
from apps.engine.longitudinal.release import Budgets, node_release
from tests.engine.longitudinal.helpers import arx, long_data, two_tables

# P1…P4 on days 0, 10, 20 after 2020-01-10; P5 on days 0, 10 and 400 (2021-02-13).
VISITS = [
    *[(f"P{i}", day) for i in range(1, 5) for day in ("2020-01-10", "2020-01-20", "2020-01-30")],
    ("P5", "2020-01-10"),
    ("P5", "2020-01-20"),
    ("P5", "2021-02-13"),
]


def counted() -> LongitudinalProblem:
    return prepare(
        long_data(VISITS, ("pid", "admission"), event_quasi=("admission",)),
        dates=DateSpec(("admission",), "anchored"),
        event_count=EventCountSpec(top=3),
    )


def test_a_person_whose_released_event_count_is_alone_is_removed() -> None:
    problem = counted()
    node = problem.levels_of({"admission": 0})
    # At p = 3, k = 2 P5 fails ({0, 10, 400} is P5's alone); its day 400 (one event, the
    # budget) goes. Counted on the input P5 has 3 events ("3+", as P1…P4) and would pass
    # with count 5 ({0, 10} is in every set); released it has 2 ("2"), alone in its class.
    outcome = Workspace(problem).evaluate(node, power=3, k=2, event_budget=1, person_budget=0)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (False, 1, 1)
    released = node_release(
        problem, {"admission": 0}, criterion=MaxRisk(0.5), power=3, budgets=Budgets(1, 1)
    )
    assert released.alive.tolist() == [True, True, True, True, False]
    assert released.kept_events[0].tolist() == [True] * 12 + [False] * 3
    # P1…P4: {0, 10, 20} held by all four
    assert (released.outcome.min_class_size, released.outcome.max_risk) == (4, 0.25)
    assert released.outcome.average_risk == pytest.approx(0.25)


def test_a_person_whose_released_event_count_joins_a_class_stays() -> None:
    problem = counted()
    # event_count at level 2 (0 | 1 | 2+): 2 and 3 events read "2+" alike; P5 keeps
    # {0, 10}, a set every person holds: count 5; P1…P4 count 4
    node = problem.levels_of({"admission": 0, "event_count": 2})
    outcome = Workspace(problem).evaluate(node, power=3, k=2, event_budget=1, person_budget=0)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (True, 1, 0)
    assert (outcome.min_class_size, outcome.max_risk) == (4, 0.25)
    assert outcome.average_risk == pytest.approx((4 * 0.25 + 0.2) / 5)


def test_the_search_returns_the_optimum_its_release_meets() -> None:
    # the event count held exact (as Step 7 does): every interval level below "*" needs
    # P5's day 400 suppressed, which leaves P5 alone; "*" keeps everyone, nothing goes
    result = optimal_search(
        counted(),
        MaxRisk(0.5),
        power=3,
        suppression_limit=0.0,
        event_suppression_limit=0.1,
        max_levels={"event_count": 0},
    )
    assert result.solution is not None
    assert result.solution.levels == {"event_count": 0, "anchor": 0, "admission": 5}
    assert (result.solution.suppressed_events, result.solution.suppressed_persons) == (0, 0)
    assert (result.solution.min_class_size, result.solution.max_risk) == (5, 0.2)


# Shifted dates: P1…P4 have A on 2020-01-10 and B on 2020-01-25 (days 0, 15); P5 has Z on
# 2020-01-05, A on 2020-01-10, B on 2020-01-20 (days 0, 5, 15 from its first date).
SHIFTED = [
    *[(f"P{i}", d, c) for i in range(1, 5) for d, c in (("2020-01-10", "A"), ("2020-01-25", "B"))],
    ("P5", "2020-01-05", "Z"),
    ("P5", "2020-01-10", "A"),
    ("P5", "2020-01-20", "B"),
]


def test_a_person_whose_first_shifted_date_is_suppressed_is_removed() -> None:
    problem = prepare(
        long_data(SHIFTED, ("pid", "admission", "code"), event_quasi=("admission", "code")),
        dates=DateSpec(("admission",), "anchored", shift_days=3),
    )
    # anchors by month (2020-01 for all), intervals by 7 days: P1…P4 {(0-6, A), (14-20, B)},
    # P5 {(0-6, A), (0-6, Z), (14-20, B)}; at p = 1 P5's Z goes and P5 would match. Released,
    # P5's first date is 2020-01-10: B is 10 days later, (7-13, B): P5 would be alone.
    levels = {"anchor": 1, "admission": 1}
    node = problem.levels_of(levels)
    outcome = Workspace(problem).evaluate(node, power=1, k=2, event_budget=1, person_budget=0)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (False, 1, 1)
    released = node_release(
        problem, levels, criterion=KAnonymity(2), power=1, budgets=Budgets(1, 1)
    )
    assert released.alive.tolist() == [True, True, True, True, False]
    assert (released.outcome.min_class_size, released.outcome.max_risk) == (4, 0.25)


# A person whose every event is suppressed has no row in the release: it is suppressed.
# P1…P4 hold A, P5 holds Z only; one class (no person-level quasi-identifier), p = 1.
EMPTIED = [*[(f"P{i}", "A") for i in range(1, 5)], ("P5", "Z")]


def emptied() -> LongitudinalProblem:
    return prepare(
        long_data(EMPTIED, ("pid", "code"), event_quasi=("code",)),
        hierarchies={"code": arx("code", "A;*\nZ;*\n")},
    )


def test_a_person_whose_every_event_is_suppressed_is_suppressed() -> None:
    problem = emptied()
    node = problem.levels_of({"code": 0})
    # {Z} is P5's alone: Z (the budget's one event) goes and P5 holds nothing. Counted as
    # released P5 would match its whole class (count 5) and the node would pass with
    # nobody removed (smallest count 4, average (4 · 1/4 + 1/5) / 5 = 0.24). Released,
    # P5 has no row: it is suppressed, and with no person to spare the node fails.
    outcome = Workspace(problem).evaluate(node, power=1, k=2, event_budget=1, person_budget=0)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (False, 1, 1)
    # with one person allowed it passes: P1…P4 released, {A} held by all four
    outcome = Workspace(problem).evaluate(node, power=1, k=2, event_budget=1, person_budget=1)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (True, 1, 1)
    assert outcome.events_of_suppressed_persons == 0  # P5's one event is counted once
    assert (outcome.min_class_size, outcome.max_risk) == (4, 0.25)
    assert outcome.average_risk == pytest.approx(0.25)
    released = node_release(
        problem, {"code": 0}, criterion=KAnonymity(2), power=1, budgets=Budgets(1, 1)
    )
    assert released.alive.tolist() == [True, True, True, True, False]
    assert released.kept_events[0].tolist() == [True, True, True, True, False]
    assert (released.persons_suppressed, released.persons_emptied) == (1, 1)
    assert (released.events_suppressed, released.events_of_suppressed_persons) == (1, 0)
    # the search: code 0 needs a person removed; without one it takes code at "*"
    result = optimal_search(
        problem, KAnonymity(2), power=1, suppression_limit=0.0, event_suppression_limit=0.2
    )
    assert result.solution is not None
    assert result.solution.levels == {"code": 1}
    assert (result.solution.suppressed_events, result.solution.suppressed_persons) == (0, 0)


def test_a_person_without_events_stays_and_a_person_emptied_goes() -> None:
    # A person table: women P1 (Z) and P2 (no event at all), men P3 and P4 (A each).
    # Complete knowledge, k = 2: P1's {Z} is alone; Z goes and P1's empty set equals
    # P2's: both count 2 counted as released. Released, P2 keeps its person row (the
    # count 0) but P1 has nothing left: P1 is suppressed, then P2 is alone (count 1)
    # and is suppressed too. P3, P4 count 2.
    problem = prepare(
        two_tables(
            [("P1", "f"), ("P2", "f"), ("P3", "m"), ("P4", "m")],
            ("pid", "sex"),
            [("P1", "Z"), ("P3", "A"), ("P4", "A")],
            ("pid", "code"),
            person_quasi=("sex",),
            event_quasi=("code",),
        ),
        hierarchies={"sex": arx("sex", "f;*\nm;*\n"), "code": arx("code", "A;*\nZ;*\n")},
    )
    levels = {"sex": 0, "code": 0}
    node = problem.levels_of(levels)
    outcome = Workspace(problem).evaluate(node, power=ALL, k=2, event_budget=1, person_budget=1)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (False, 1, 2)
    outcome = Workspace(problem).evaluate(node, power=ALL, k=2, event_budget=1, person_budget=2)
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (True, 1, 2)
    assert (outcome.min_class_size, outcome.max_risk, outcome.average_risk) == (2, 0.5, 0.5)
    assert outcome.events_of_suppressed_persons == 0
    released = node_release(
        problem, levels, criterion=KAnonymity(2), power=ALL, budgets=Budgets(1, 2)
    )
    assert released.alive.tolist() == [False, False, True, True]
    assert released.kept_events[0].tolist() == [False, True, True]
    assert (released.persons_suppressed, released.persons_emptied) == (2, 1)
    assert (released.events_suppressed, released.events_of_suppressed_persons) == (1, 0)


def test_a_person_without_events_in_the_input_is_released() -> None:
    # P2 and P3 have no event in the input: their person rows are released (the count 0,
    # nothing else known) and they match each other. P1's only event Z (alone) goes and
    # leaves P1 nothing to release: P1 is suppressed (complete knowledge, k = 2).
    problem = prepare(
        two_tables(
            [("P1", "f"), ("P2", "f"), ("P3", "f")],
            ("pid", "sex"),
            [("P1", "Z")],
            ("pid", "code"),
            person_quasi=("sex",),
            event_quasi=("code",),
        ),
        hierarchies={"sex": arx("sex", "f;*\n"), "code": arx("code", "Z;*\n")},
    )
    levels = {"sex": 0, "code": 0}
    outcome = Workspace(problem).evaluate(
        problem.levels_of(levels), power=ALL, k=2, event_budget=1, person_budget=1
    )
    assert (outcome.passes, outcome.suppressed_events, outcome.suppressed_persons) == (True, 1, 1)
    assert (outcome.min_class_size, outcome.max_risk) == (2, 0.5)
    released = node_release(
        problem, levels, criterion=KAnonymity(2), power=ALL, budgets=Budgets(1, 1)
    )
    assert released.alive.tolist() == [False, True, True]
    assert released.persons_emptied == 1
