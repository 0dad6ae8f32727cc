"""What a chosen node releases: the search's own suppression mapped back to persons and to
events in their input order, the budgets that reproduce an alternative, and the values of
each level. Worked out by hand on a small long table."""

from __future__ import annotations

import pytest

from apps.engine.criteria import KAnonymity
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal import optimal_search, prepare
from apps.engine.longitudinal.release import (
    Budgets,
    budgets_reproducing,
    generalized_labels,
    node_release,
)
from tests.engine.longitudinal.helpers import arx, long_data

# Input order: P3 first, then P1 twice (A, A: one feature), P2 (A, Z), P4 (B), P5 (B).
# At p = 1, k = 2 only P2 fails ({Z} is held by P2 alone).
ROWS = [
    ("P3", "A"),
    ("P1", "A"),
    ("P2", "Z"),
    ("P1", "A"),
    ("P4", "B"),
    ("P2", "A"),
    ("P5", "B"),
]
CODE = "A;*\nB;*\nZ;*\n"


def problem():  # type: ignore[no-untyped-def]
    return prepare(
        long_data(ROWS, ("pid", "code"), event_quasi=("code",)),
        hierarchies={"code": arx("code", CODE)},
    )


def test_event_suppression_removes_the_event_in_its_input_position() -> None:
    p = problem()
    chosen = node_release(
        p, {"code": 0}, criterion=KAnonymity(2), power=1, budgets=Budgets(events=1, persons=1)
    )
    # Z (third row) goes; every person stays.
    assert chosen.kept_events[0].tolist() == [True, True, False, True, True, True, True]
    assert chosen.alive.tolist() == [True] * 5
    assert (chosen.events_suppressed, chosen.events_of_suppressed_persons) == (1, 0)
    assert chosen.outcome.min_class_size == 2  # P4, P5 {B}


def test_without_an_event_budget_the_person_goes_with_all_their_rows() -> None:
    p = problem()
    chosen = node_release(
        p, {"code": 0}, criterion=KAnonymity(2), power=1, budgets=Budgets(events=0, persons=1)
    )
    # persons in id order P1…P5: P2 removed, both of their rows (3rd and 6th)
    assert chosen.alive.tolist() == [True, False, True, True, True]
    assert chosen.kept_events[0].tolist() == [True, True, False, True, True, False, True]
    assert (chosen.events_suppressed, chosen.events_of_suppressed_persons) == (0, 2)
    assert chosen.persons_suppressed == 1


def test_a_node_that_fails_within_the_budgets_is_no_release() -> None:
    with pytest.raises(EngineInputError, match="does not meet the target"):
        node_release(
            problem(), {"code": 0}, criterion=KAnonymity(2), power=1, budgets=Budgets(0, 0)
        )


def test_budgets_reproduce_the_search_alternatives_and_labels_follow_the_level() -> None:
    p = problem()
    result = optimal_search(
        p, KAnonymity(2), power=1, suppression_limit=0.2, event_suppression_limit=0.15, pareto=True
    )
    # 7 events x 0.15 → 1 event; 5 persons x 0.2 → 1 person.
    assert result.solution is not None and result.levels == {"code": 0}
    assert result.solution.suppressed_events == 1
    for node in [result.solution, *result.pareto]:
        budgets = budgets_reproducing(
            p,
            node.levels,
            criterion=KAnonymity(2),
            power=1,
            suppression_limit=0.2,
            event_suppression_limit=0.15,
            suppressed_persons=node.suppressed_persons,
            suppressed_events=node.suppressed_events,
        )
        assert budgets is not None
        again = node_release(p, node.levels, criterion=KAnonymity(2), power=1, budgets=budgets)
        assert again.persons_suppressed == node.suppressed_persons
        assert again.events_suppressed == node.suppressed_events
    assert (
        budgets_reproducing(
            p,
            {"code": 0},
            criterion=KAnonymity(2),
            power=1,
            suppression_limit=0.2,
            event_suppression_limit=0.15,
            suppressed_persons=0,
            suppressed_events=0,
        )
        is None
    )  # no budget of the grid passes level 0 with nothing suppressed
    assert generalized_labels(p, {"code": 1})["code"].to_list() == ["*"] * 7
    assert generalized_labels(p, {"code": 0})["code"].to_list() == [r[1] for r in ROWS]
