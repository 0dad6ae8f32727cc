"""Step 7's hierarchy section shows, for a column the date settings handle, the date mode's
own levels (the ones the search generalizes along), not the saved text hierarchy, and
offers no editor for it (the search would ignore it)."""

from __future__ import annotations

import html
import re

from apps.assessments import person_dates
from tests.assessments.persons_factory import SEARCH, page, with_dates


def _section(body: str, column: str) -> str:
    start = body.index(f'data-testid="hierarchy-{column}"')
    return body[start : body.index("</details>", start)]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_date_columns_show_the_date_modes_levels_and_no_editor(  # type: ignore[no-untyped-def]
    custodian, analyst, client_for
):
    assessment = with_dates(
        custodian, analyst, SEARCH, {"columns": ["admission"], "mode": "anchored"}
    )
    client = client_for(analyst)
    url = page(assessment, "deidentify")

    def shown() -> tuple[str, str, str]:
        body = client.get(url).content.decode()
        return body, _section(body, "admission"), _section(body, "sex")

    body, admission, sex = shown()
    # anchored: the intervals' bins, and the anchor's levels; the saved hierarchy of
    # admission (suppression: "original → suppressed (*)") is not shown, nor an editor
    levels = 'data-testid="date-levels-admission">'
    assert _text(admission[admission.index(levels) + len(levels) :]).startswith(
        "days → 7-day bins → 30-day bins → 90-day bins → 365-day bins → *\n"
    )
    assert "day → month → year → 5 years → *" in _text(admission)
    assert "suppressed (*)" not in admission and "<form" not in admission
    assert 'name="column" value="admission"' not in body
    # an ordinary column keeps its hierarchy and its editor
    assert "<form" in sex and "suppressed (*)" in _text(sex)
    assert "Highest level allowed for admission (0–5: days → 7-day bins" in _text(body)

    person_dates.assessment_set_dates(
        assessment=assessment,
        user=analyst,
        settings={"dates": {"columns": ["admission"], "mode": "absolute"}},
    )
    body, admission, _ = shown()
    assert "absolute date mode: day → month → quarter → year → *" in _text(admission)
    assert "<form" not in admission
    assert "Highest level allowed for admission (0–4: day → month" in _text(body)

    person_dates.assessment_set_dates(
        assessment=assessment,
        user=analyst,
        settings={"dates": {"columns": ["admission"], "mode": "anchored", "shift_days": 30}},
    )
    body, admission, _ = shown()
    # ±30 days: the intervals to the day, the first date known only to the year
    assert "at most 30 days either way" in _text(admission)
    assert "the first event date known only to the year (the shift's range)" in _text(admission)
    assert "<form" not in admission
    assert "Highest level allowed for admission (0–0: days" in _text(body)
