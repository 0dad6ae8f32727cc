"""Step 7's solutions of person-keyed data carry the figures their release measures
(``person_nodes``): the anchor and the number of events a recipient counts in the released
rows, after event suppression. Every figure is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from apps.assessments.compare import alternatives_compare
from apps.assessments.deidentify import assessment_choose_solution, deid_config, deid_config_save
from tests.assessments.persons_factory import applied, page, searched, visits, with_dates

# Six persons, F 1960, every first date 2020-01-10 (one anchor), three visits each:
# intervals P1, P2, P4, P6 {0, 10, 20}; P3 {0, 10, 99}; P5 {0, 10, 400}. 18 events.
NODES = visits(
    {
        "HN1": ("2020-01-10", "2020-01-20", "2020-01-30"),
        "HN2": ("2020-01-10", "2020-01-20", "2020-01-30"),
        "HN3": ("2020-01-10", "2020-01-20", "2020-04-18"),
        "HN4": ("2020-01-10", "2020-01-20", "2020-01-30"),
        "HN5": ("2020-01-10", "2020-01-20", "2021-02-13"),
        "HN6": ("2020-01-10", "2020-01-20", "2020-01-30"),
    }
)


def test_alternatives_carry_the_release_measure_with_anchor_and_event_count(  # type: ignore[no-untyped-def]
    custodian, analyst, client_for
):
    assessment = with_dates(
        custodian,
        analyst,
        NODES,
        {"columns": ["admission"], "mode": "anchored"},
        {"enabled": True, "top": 3},
    )
    config = deid_config(assessment)
    # k = 2 (max risk 0.5), p = 1; no person may go, ⌊0.12 · 18⌋ = 2 events may.
    deid_config_save(
        assessment=assessment,
        config=config.replace(suppression_limit=0.0, event_suppression_limit=0.12),
    )
    search = searched(assessment, analyst)
    by_admission = {alt["levels"]["admission"]: alt for alt in search["pareto"]}
    assert sorted(by_admission) == [0, 5]
    assert all(alt["levels"]["anchor"] == 0 for alt in search["pareto"])
    # Full budget: days, P3's 99 and P5's 400 suppressed. The search counts the number of
    # events as released: "3+" {P1, P2, P4, P6} each {0, 10, 20} → 4; "2" {P3, P5}
    # {0, 10} → 2: max 1/2, average (4 · 1/4 + 2 · 1/2) / 6 = 1/3, as the release.
    days = by_admission[0]
    assert search["solution"]["levels"] == days["levels"]
    assert (days["suppressed_persons"], days["suppressed_events"]) == (0, 2)
    assert days["min_class_size"] == 2
    assert days["max_risk"] == 0.5
    assert days["average_risk"] == pytest.approx(1 / 3)
    assert days["meets_target"] is True
    # Event budget 1 (or 0): below "*" every interval level leaves P5's 400 alone in its
    # bin (365-day bins: 365-729); suppressing it leaves P5 with 2 events, alone in "2",
    # and no person may go. So "*": one class of six, all {*} → count 6, nothing goes.
    # (Counted before suppression, the 365-day bins passed with risk 1/6 and released
    # max risk 1.)
    star = by_admission[5]
    assert (star["suppressed_persons"], star["suppressed_events"]) == (0, 0)
    assert (star["min_class_size"], star["persons_at_risk"]) == (6, 0)
    assert star["max_risk"] == pytest.approx(1 / 6)
    assert star["meets_target"] is True
    # Step 7's table and the comparison show those figures and the released values the
    # measure reads, persons for the event count and the anchor, events for the dates.
    positions = {alt["levels"]["admission"]: i for i, alt in enumerate(search["pareto"])}
    client = client_for(analyst)
    step7 = page(assessment, "deidentify")
    body = client.get(step7).content.decode()
    row = body[body.index(f'data-testid="alternative-{positions[0]}"') :]
    row = row[: row.index("</tr>")]
    assert "smallest per-person count 2" in row
    assert 'data-testid="alternative-fails-' not in body
    assert 'data-testid="solution-fails-release"' not in body
    comparison = alternatives_compare(
        assessment=assessment, first=positions[5], second=positions[0]
    )
    assert [alt["max_risk"] for alt in comparison["alternatives"]] == [pytest.approx(1 / 6), 0.5]
    sides = {v["column"]: v["sides"] for v in comparison["variables"]}
    assert list(sides) == search["dimensions"]
    assert [(s["values"], s["unit"]) for s in sides["event_count"]] == [
        ([("3+", 6)], "persons"),
        ([("3+", 4), ("2", 2)], "persons"),
    ]
    assert sides["anchor"][0]["values"] == [("2020-01-10", 6)]
    assert [(s["values"], s["unit"]) for s in sides["admission"]] == [
        ([("*", 18)], "events"),
        ([("0", 6), ("10", 6), ("20", 4)], "events"),
    ]
    shown = client.get(f"{step7}compare/?pick={positions[5]}&pick={positions[0]}").content.decode()
    assert 'data-testid="compare-max-risk-1">0.5<' in shown
    assert "counted in persons" in shown and "counted in events" in shown
    # The release of the optimum measures what the search and the page showed for it.
    assessment_choose_solution(assessment=assessment, levels=days["levels"])
    result, _released = applied(assessment, analyst)
    after = result["longitudinal"]["risk_after"]
    assert (after["max_risk"], after["min_class_size"]) == (0.5, 2)
    assert after["average_risk"] == pytest.approx(1 / 3)


def test_the_search_returns_no_solution_whose_release_misses_the_target(  # type: ignore[no-untyped-def]
    custodian, analyst, client_for
):
    # P1…P4 {0, 10, 20}, P5 {0, 10, 400}; ⌊0.1 · 15⌋ = 1 event may go, no person. Keeping
    # the days needs P5's 400 suppressed: released, P5 has 2 events ("2", the others
    # "3+"), alone in its class, and would have to go (counted before suppression, the
    # search returned it with max risk 1 released). Every interval level below "*" leaves
    # P5's 400 alone in its bin the same way. So "*": one class of five, count 5.
    text = visits(
        {
            **{f"HN{i}": ("2020-01-10", "2020-01-20", "2020-01-30") for i in range(1, 5)},
            "HN5": ("2020-01-10", "2020-01-20", "2021-02-13"),
        }
    )
    assessment = with_dates(
        custodian,
        analyst,
        text,
        {"columns": ["admission"], "mode": "anchored"},
        {"enabled": True, "top": 3},
    )
    config = deid_config(assessment)
    deid_config_save(
        assessment=assessment,
        config=config.replace(suppression_limit=0.0, event_suppression_limit=0.1),
    )
    search = searched(assessment, analyst)
    solution = search["solution"]
    assert solution["levels"]["admission"] == 5
    assert (solution["suppressed_persons"], solution["suppressed_events"]) == (0, 0)
    assert (solution["max_risk"], solution["min_class_size"]) == (0.2, 5)
    assert solution["meets_target"] is True
    assert all(alt["meets_target"] is True for alt in search["pareto"])
    body = client_for(analyst).get(page(assessment, "deidentify")).content.decode()
    assert 'data-testid="solution-fails-release"' not in body
    assert 'data-testid="alternative-fails-' not in body
