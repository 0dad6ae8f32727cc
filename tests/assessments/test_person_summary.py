"""The recipient summary of a person release lists the derived facts its attack tests'
adversary knows (the number of events with its top-code, the anchor, what a date shift
leaves), the same list in its JSON twin, its page (the PDF's HTML) and the report
(``attack_tests.known_facts``)."""

from __future__ import annotations

import html as html_lib
import re

from apps.assessments import services
from apps.reports.content import report_html
from apps.reports.summary import canonical_json, sha256_hex, summary_data, summary_html
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.persons_factory import INTERVALS, applied, persons_ready, searched
from tests.justify import justify_all


def _facts(page: str, testid: str) -> list[str]:
    found = re.findall(rf'data-testid="{testid}">(.*?)</span>', page, flags=re.S)
    return [html_lib.unescape(f) for f in found]


def test_the_json_twin_lists_the_derived_facts_the_pages_show(  # type: ignore[no-untyped-def]
    custodian, analyst, reviewer
):
    # INTERVALS at p = 2, dates shifted by ±30 days, the number of events counted: 2, 2,
    # 2, 2, 3, 3 events → the P95 top-code 3 (nearest rank ⌈5.7⌉ = 6th: 3). The anchor is
    # known to the year, the intervals to the day; nothing is suppressed (k = 2 holds:
    # "2" {HN1…HN4} with {0, 30} or {0, 14} twice each, "3+" {HN5, HN6} alike).
    assessment = persons_ready(
        custodian,
        analyst,
        INTERVALS,
        "admission",
        "2",
        {
            "dates": {"columns": ["admission"], "mode": "anchored", "shift_days": 30},
            "event_count": {"enabled": True},
        },
        measure=True,
    )
    searched(assessment, analyst)
    result, _ = applied(assessment, analyst)
    assert result["attacks"]["status"] == "done", result["attacks"].get("reason")
    services.assessment_accept_utility(
        assessment=assessment, user=analyst, note="Dates shifted; nothing suppressed."
    )
    justify_all(assessment)
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready for review.",
        intruder_waiver="No motivated-intruder test: this is a synthetic test release.",
    )
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets 0.5."
    )
    data = summary_data(assessment=assessment, decision=decision)
    expected = [
        'the number of events (exact, "3 or more" beyond the top-code)',
        "the first event date (year; from admission)",
        "the intervals between the person's events (days; what the date shift leaves of admission)",
    ]
    assert data["attack_known_facts"] == [
        {
            "fact": "event_count",
            "level": "exact",
            "top_code": 3,
            "columns": [],
            "text": expected[0],
        },
        {
            "fact": "anchor",
            "level": "year",
            "top_code": None,
            "columns": ["admission"],
            "text": expected[1],
        },
        {
            "fact": "intervals",
            "level": "days",
            "top_code": None,
            "columns": ["admission"],
            "text": expected[2],
        },
    ]
    twin = canonical_json(data)
    page = summary_html(organization=custodian, data=data, json_sha256=sha256_hex(twin))
    assert _facts(page, "summary-derived-fact") == expected
    report = report_html(assessment=assessment, decision=decision)
    assert _facts(report, "attacks-derived-fact") == expected
