"""Step 7's solutions of person-keyed data carry the figures their release measures
(``person_nodes``): the anchor and the number of events a recipient counts in the released
rows, after event suppression. Every figure is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from apps.assessments.compare import alternatives_compare
from apps.assessments.deidentify import assessment_choose_solution, deid_config, deid_config_save
from tests.assessments.test_longitudinal_release import applied, searched
from tests.assessments.test_person_dates import visits, with_dates
from tests.assessments.test_persons import page

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
    assert all(alt["levels"]["anchor"] == 0 for alt in search["pareto"])
    # Event budget 1: 365-day bins (99 → bin 0, 400 → bin 1) with P5's 400 suppressed.
    # The search counts P5 with its 3 events: one class of six, all {0} → every count 6,
    # risk 1/6. The release shows P5 with 2 events ("2", the others "3+"): P5 alone in
    # its class → count 1; the others 5 → max risk 1, average (5 · 1/5 + 1) / 6 = 1/3.
    year = by_admission[4]
    assert (year["suppressed_persons"], year["suppressed_events"]) == (0, 1)
    assert year["min_class_size"] == 1
    assert year["max_risk"] == 1.0
    assert year["average_risk"] == pytest.approx(1 / 3)
    assert year["persons_at_risk"] == 1
    assert year["meets_target"] is False  # max risk 1 > 0.5
    # Full budget: days, P3's 99 and P5's 400 suppressed. Released: "3+" {P1, P2, P4,
    # P6} each {0, 10, 20} → 4; "2" {P3, P5} {0, 10} → 2: max 1/2, average
    # (4 · 1/4 + 2 · 1/2) / 6 = 1/3 (the search's count, one class of six: 1/4, 2/9).
    days = by_admission[0]
    assert search["solution"]["levels"] == days["levels"]
    assert (days["suppressed_events"], days["min_class_size"]) == (2, 2)
    assert days["max_risk"] == 0.5
    assert days["average_risk"] == pytest.approx(1 / 3)
    assert days["meets_target"] is True
    # Step 7's table and the comparison show those figures and the released values the
    # measure reads, persons for the event count and the anchor, events for the dates.
    positions = {alt["levels"]["admission"]: i for i, alt in enumerate(search["pareto"])}
    client = client_for(analyst)
    step7 = page(assessment, "deidentify")
    body = client.get(step7).content.decode()
    row = body[body.index(f'data-testid="alternative-{positions[4]}"') :]
    row = row[: row.index("</tr>")]
    assert "<td>1</td><td>0.3333</td>" in row and "smallest per-person count 1" in row
    assert f'data-testid="alternative-fails-{positions[4]}"' in row
    assert 'data-testid="alternative-fails-' not in body.replace(row, "")
    assert 'data-testid="solution-fails-release"' not in body
    comparison = alternatives_compare(
        assessment=assessment, first=positions[4], second=positions[0]
    )
    assert [alt["max_risk"] for alt in comparison["alternatives"]] == [1.0, 0.5]
    sides = {v["column"]: v["sides"] for v in comparison["variables"]}
    assert list(sides) == search["dimensions"]
    assert [(s["values"], s["unit"]) for s in sides["event_count"]] == [
        ([("3+", 5), ("2", 1)], "persons"),
        ([("3+", 4), ("2", 2)], "persons"),
    ]
    assert sides["anchor"][0]["values"] == [("2020-01-10", 6)]
    assert [(s["values"], s["unit"]) for s in sides["admission"]] == [
        ([("0-364", 17)], "events"),
        ([("0", 6), ("10", 6), ("20", 4)], "events"),
    ]
    shown = client.get(f"{step7}compare/?pick={positions[4]}&pick={positions[0]}").content.decode()
    assert 'data-testid="compare-max-risk-0">1<' in shown
    assert "counted in persons" in shown and "counted in events" in shown
    # The release of the alternative measures what the page showed for it.
    assessment_choose_solution(assessment=assessment, levels=year["levels"])
    result, _released = applied(assessment, analyst)
    after = result["longitudinal"]["risk_after"]
    assert (after["max_risk"], after["min_class_size"]) == (year["max_risk"], 1)
    assert after["average_risk"] == pytest.approx(year["average_risk"])


def test_a_solution_whose_release_misses_the_target_says_so(  # type: ignore[no-untyped-def]
    custodian, analyst, client_for
):
    # P1…P4 {0, 10, 20}, P5 {0, 10, 400}; ⌊0.1 · 15⌋ = 1 event may go. The search's
    # optimum keeps the days and suppresses P5's 400: counted before suppression, P5 is
    # one of five with 3 events (count 5 at p = 1 on {0, 10}). Released, P5 has 2 events,
    # alone in its class: max risk 1 > 0.5, average (4 · 1/4 + 1) / 5 = 0.4.
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
    solution = searched(assessment, analyst)["solution"]
    assert solution["levels"]["admission"] == 0 and solution["suppressed_events"] == 1
    assert (solution["max_risk"], solution["min_class_size"]) == (1.0, 1)
    assert solution["average_risk"] == pytest.approx(0.4)
    assert solution["meets_target"] is False
    body = client_for(analyst).get(page(assessment, "deidentify")).content.decode()
    assert 'data-testid="solution-fails-release"' in body
    assert "Released, this solution would not meet the target: max risk 1.0000" in body
