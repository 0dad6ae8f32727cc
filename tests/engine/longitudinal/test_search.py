"""The longitudinal search: budgets, suppression limits, alternatives, progress."""

from __future__ import annotations

import threading

import pytest

from apps.engine.criteria import KAnonymity, StrictAverageRisk
from apps.engine.longitudinal import (
    CountingBudgetExceeded,
    exhaustive_search,
    measure,
    optimal_search,
    prepare,
)
from apps.engine.progress import SearchCancelled, SearchProgress
from tests.engine.longitudinal.helpers import arx, long_data

# six codes per person, shared in pairs: at level 0 p = 3 needs 3 x binom(6, 3) = 60 subsets
CODES = "a1;A;*\na2;A;*\na3;A;*\nb1;B;*\nb2;B;*\nb3;B;*\n"


def six_codes():  # type: ignore[no-untyped-def]
    rows = [(p, c) for p in ("P1", "P2", "P3") for c in ("a1", "a2", "a3", "b1", "b2", "b3")]
    data = long_data(rows, ("pid", "code"), event_quasi=("code",))
    return prepare(data, hierarchies={"code": arx("code", CODES)})


def test_counting_budget_stops_with_a_clear_message() -> None:
    problem = six_codes()
    with pytest.raises(
        CountingBudgetExceeded, match=r"power 3 needs 60 subsets .* code=0 \(budget 59\)"
    ):
        measure(problem, power=3, subset_budget=59)
    risk = measure(problem, power=3, subset_budget=60)
    assert risk.subsets == 60 and risk.counts.tolist() == [3, 3, 3]
    # other powers of the report are marked, never estimated
    risk = measure(problem, power=1, subset_budget=20)
    assert risk.by_power["1"].min_class_size == 3
    assert risk.by_power["3"].min_class_size is None
    assert "60 subsets" in (risk.by_power["3"].over_budget or "")


def test_search_skips_a_node_over_budget_only_when_it_cannot_win() -> None:
    problem = six_codes()
    # level 0 (identical persons) passes and is the cheapest: skipping it would change
    # the answer, so the search stops with the budget's message
    with pytest.raises(CountingBudgetExceeded, match="power 3"):
        optimal_search(problem, KAnonymity(3), power=3, subset_budget=10)
    # from level 1 on, every node fits
    result = optimal_search(
        problem, KAnonymity(3), power=3, subset_budget=10, min_levels={"code": 1}
    )
    assert result.levels == {"code": 1}
    full = optimal_search(problem, KAnonymity(3), power=3)
    assert full.levels == {"code": 0} and full.nodes_over_budget == 0


def test_skipped_node_that_cannot_win_is_reported() -> None:
    # person P4 holds its own codes: level 0 fails k = 2 without suppression, and the
    # lower bound of level 0 is below the solution's, so a skipped level 0 must raise;
    # with a budget that fits level 0 the search evaluates and rejects it
    rows = [(p, c) for p in ("P1", "P2", "P3") for c in ("a1", "a2", "b1")] + [
        ("P4", "a3"),
        ("P4", "b2"),
        ("P4", "b3"),
    ]
    data = long_data(rows, ("pid", "code"), event_quasi=("code",))
    problem = prepare(data, hierarchies={"code": arx("code", CODES)})
    limits = {"suppression_limit": 0.0, "event_suppression_limit": 0.0}
    result = optimal_search(problem, KAnonymity(2), power=3, **limits)  # type: ignore[arg-type]
    assert result.levels == {"code": 1}
    with pytest.raises(CountingBudgetExceeded):
        optimal_search(problem, KAnonymity(2), power=3, subset_budget=3, **limits)  # type: ignore[arg-type]


def tc_suppression():  # type: ignore[no-untyped-def]
    # eight persons share {x, y}; P9 adds a rare code z; P10 has only a rare code w
    rows = [(f"P{i}", c) for i in range(1, 9) for c in ("x", "y")]
    rows += [("P9", "x"), ("P9", "y"), ("P9", "z"), ("P10", "w")]
    data = long_data(rows, ("pid", "code"), event_quasi=("code",))
    return prepare(data, hierarchies={"code": arx("code", "x;*\ny;*\nz;*\nw;*\n")})


def test_event_then_person_suppression_within_their_limits() -> None:
    problem = tc_suppression()  # 10 persons, 20 events
    both = optimal_search(
        problem, KAnonymity(2), power=1, suppression_limit=0.1, event_suppression_limit=0.1
    )
    # level 0: P9 loses z (its rarest code), P10 loses w, then holds nothing: no row of
    # P10's is left, so P10 is suppressed (1 of 10 persons allowed); its one event is
    # counted once, as suppressed. Loss: 2 of 20 events suppressed, (2 x 4 + 18 - 20) /
    # (20 x 4 - 20) = 0.1.
    assert both.solution is not None
    assert both.levels == {"code": 0}
    assert (both.solution.suppressed_events, both.solution.suppressed_persons) == (2, 1)
    assert both.solution.events_of_suppressed_persons == 0
    assert both.solution.min_class_size == 9  # x and y: P1-P9
    assert both.solution.information_loss == pytest.approx(0.1)
    # no event may go: P9 and P10 are removed instead (2 of 10 persons allowed)
    persons = optimal_search(
        problem, KAnonymity(2), power=1, suppression_limit=0.2, event_suppression_limit=0.0
    )
    assert persons.levels == {"code": 0}
    assert persons.solution is not None
    assert (persons.solution.suppressed_events, persons.solution.suppressed_persons) == (0, 2)
    assert persons.solution.events_of_suppressed_persons == 4
    # neither may go: only the top level passes
    neither = optimal_search(
        problem, KAnonymity(2), power=1, suppression_limit=0.0, event_suppression_limit=0.0
    )
    assert neither.levels == {"code": 1}


def test_pareto_alternatives_trade_suppression_for_loss() -> None:
    problem = tc_suppression()
    result = optimal_search(
        problem,
        KAnonymity(2),
        power=1,
        suppression_limit=0.2,
        event_suppression_limit=0.1,
        pareto=True,
    )
    assert result.solution is not None
    alternatives = {
        (a.suppressed_persons, a.suppressed_events, a.information_loss) for a in result.pareto
    }
    assert (1, 2, result.solution.information_loss) in alternatives
    assert any(levels == {"code": 1} for levels in (a.levels for a in result.pareto))
    for a in result.pareto:
        for b in result.pareto:
            assert not (
                a is not b
                and b.suppressed_persons <= a.suppressed_persons
                and b.suppressed_events <= a.suppressed_events
                and b.information_loss < a.information_loss
            )


def test_strict_average_risk_with_its_cap() -> None:
    problem = tc_suppression()
    # cap 0.5 -> every kept person needs k >= 2; average over persons <= 0.2 needs k ~ 5+
    result = optimal_search(
        problem,
        StrictAverageRisk(0.2, 0.5),
        power=1,
        suppression_limit=0.2,
        event_suppression_limit=0.1,
    )
    best, _ = exhaustive_search(
        problem,
        StrictAverageRisk(0.2, 0.5),
        power=1,
        suppression_limit=0.2,
        event_suppression_limit=0.1,
    )
    assert result.solution is not None and best is not None
    assert result.levels == best.levels
    assert result.solution.average_risk <= 0.2


def test_progress_cancel_and_time_budget() -> None:
    problem = tc_suppression()
    seen: list[SearchProgress] = []
    optimal_search(problem, KAnonymity(2), power=1, progress=seen.append)
    assert seen and seen[-1].nodes_total == 2
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SearchCancelled):
        optimal_search(problem, KAnonymity(2), power=1, cancel=cancel)
    unfinished = optimal_search(problem, KAnonymity(2), power=1, time_budget=0.0)
    assert not unfinished.optimal and unfinished.solution is None
