"""Stored person-level results keep the meaning they were stored with
(``apps.assessments.person_suppression``). Since events are counted once, a release's
``events_of_suppressed_persons`` holds a removed person's *other* events and
``persons_every_event_suppressed`` the removed persons whom event suppression left none;
before, it held all their events (an event suppressed first was counted twice) and
``persons_without_events_left`` counted kept persons left without a row. An old result is
shown with its old words and its events removed are its events in minus out (never its
double-counted sum); a new one with the new words — in the report, on the Step 7, Step 8
and review pages, in the API and in the recipient summary."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string

from apps.assessments.person_suppression import (
    COUNTED_ONCE,
    LEGACY,
    LEGACY_NOTE,
    node_suppression,
    release_suppression,
    rows_suppressed,
    rows_suppressed_share,
)
from tests.assessments.persons_factory import SUPPRESSION, applied, persons_ready, searched
from tests.justify import justify_all

# As the code before "events counted once" stored it: one person removed whole, who had 3
# events, one of which event suppression had already removed (counted in "events" too);
# one kept person left without any event. 31 events in, 27 out: 4 removed, stored as 5.
OLD_SUPPRESSED = {
    "persons": 1,
    "events_of_suppressed_persons": 3,
    "events": 2,
    "persons_without_events_left": 1,
}
OLD_NODE = {
    "levels": {"sex": 0, "birth_year": 0, "code": 0},
    "passes": True,
    "suppressed_persons": 1,
    "suppressed_events": 2,
    "events_of_suppressed_persons": 3,
    "min_class_size": 9,
    "max_risk": 1 / 9,
    "average_risk": 0.1,
    "information_loss": 0.0,
    "suppressed_rows": 5,
    "budgets": {"events": 2, "persons": 1},
}
OLD_SENTENCE = (
    "Persons suppressed whole (limit 5.0% of persons): <strong>1</strong>, with their 3 "
    "events. 1 person lost every event and so have no row in the release."
)
NEW_SUPPRESSED = {
    "persons": 2,
    "events_of_suppressed_persons": 1,
    "events": 3,
    "persons_every_event_suppressed": 1,
    "counting": COUNTED_ONCE,
}
NEW_SENTENCE = (
    "Persons suppressed whole (limit 5.0% of persons): <strong>2</strong>, with their 1 "
    "event not counted above. 1 of them lost every event to event suppression: a person "
    "with no row left is not released."
)


def summary(suppressed: dict[str, Any], events_out: int) -> dict[str, Any]:
    return {
        "persons_in": 20,
        "events_in": 31,
        "persons_out": 19,
        "events_out": events_out,
        "limits": {"persons": 0.05, "events": 0.05},
        "suppressed": suppressed,
        "event_counts": {"before": [], "after": []},
        "pseudonym": {"column": "patient_id", "method": "HMAC-SHA-256", "length": 32},
    }


def test_the_reading_of_an_old_and_a_new_release() -> None:
    old = release_suppression({"suppressed_rows": 5, "longitudinal": summary(OLD_SUPPRESSED, 27)})
    assert old is not None and old.counting == LEGACY and old.legacy
    assert (old.persons, old.events, old.events_of_suppressed_persons) == (1, 2, 3)
    assert (old.persons_without_events_left, old.persons_every_event_suppressed) == (1, None)
    assert old.events_removed == 4  # 31 in, 27 out; never 2 + 3
    assert old.persons_text == "with their 3 events."
    assert old.emptied_text == "1 person lost every event and so have no row in the release."
    assert old.note == LEGACY_NOTE
    new = release_suppression({"longitudinal": summary(NEW_SUPPRESSED, 27)})
    assert new is not None and new.counting == COUNTED_ONCE and not new.legacy
    assert new.events_removed == 4  # 3 + 1, each once
    assert new.persons_text == "with their 1 event not counted above."
    assert new.note == ""
    # a release stored without the marker but with the new key is new too (last session's)
    unmarked = {k: v for k, v in NEW_SUPPRESSED.items() if k != "counting"}
    unmarked_view = release_suppression({"longitudinal": summary(unmarked, 27)})
    assert unmarked_view is not None and unmarked_view.counting == COUNTED_ONCE
    # record level: nothing to read; the stored figures as they are
    assert release_suppression({"suppressed_rows": 3, "rows_in": 10}) is None
    assert rows_suppressed({"suppressed_rows": 3, "rows_in": 10}) == 3
    legacy_applied = {
        "suppressed_rows": 5,
        "suppressed_share": 5 / 31,
        "longitudinal": summary(OLD_SUPPRESSED, 27),
    }
    assert rows_suppressed(legacy_applied) == 4
    assert rows_suppressed_share(legacy_applied) == pytest.approx(4 / 31)


def test_the_reading_of_an_old_and_a_new_search_node() -> None:
    old = node_suppression(OLD_NODE)
    assert old is not None and old.legacy
    assert (old.events_removed, old.events_removed_at_most) == (None, 5)
    new = node_suppression({**OLD_NODE, "suppressed_rows": 4, "counting": COUNTED_ONCE})
    assert new is not None and not new.legacy
    assert (new.events_removed, new.events_removed_at_most) == (5, None)  # 2 + 3, once
    assert node_suppression({"levels": {}, "suppressed_rows": 3}) is None  # record level


@pytest.mark.parametrize(
    ("suppressed", "sentence", "counting"),
    [(OLD_SUPPRESSED, OLD_SENTENCE, LEGACY), (NEW_SUPPRESSED, NEW_SENTENCE, COUNTED_ONCE)],
)
def test_the_report_section_words_each_by_its_counting(
    suppressed: dict[str, Any], sentence: str, counting: str
) -> None:
    html = render_to_string("reports/_person_release.html", {"lg": summary(suppressed, 27)})
    assert f'data-counting="{counting}"' in html
    assert sentence in html
    events = "<strong>2</strong>" if counting == LEGACY else "<strong>3</strong>"
    assert f"limit 5.0% of events): {events}." in html
    assert (LEGACY_NOTE in html) is (counting == LEGACY)
    assert ("not counted above" in html) is (counting == COUNTED_ONCE)


def as_stored_before(assessment) -> None:  # type: ignore[no-untyped-def]
    """Rewrite the stored search and release as the code before "counted once" wrote them."""
    search = assessment.search_result
    search["solution"] = {**OLD_NODE, "levels": search["solution"]["levels"]}
    search["pareto"] = [
        {**OLD_NODE, "levels": node["levels"], "suppressed_rows": 5 + i}
        for i, node in enumerate(search["pareto"])
    ]
    result = assessment.apply_result
    result["longitudinal"]["suppressed"] = dict(OLD_SUPPRESSED)
    result["longitudinal"]["events_out"] = 27
    result.update(rows_out=27, suppressed_rows=5, suppressed_share=5 / 31)
    assessment.save(update_fields=["search_result", "apply_result"])


def test_an_old_stored_result_on_every_page_and_in_the_api(  # type: ignore[no-untyped-def]
    custodian, analyst, reviewer, client_for
):
    from django.urls import reverse

    from apps.reports.content import report_html
    from apps.reports.summary import summary_data
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit

    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    searched(assessment, analyst)
    new, _ = applied(assessment, analyst)
    assert new["longitudinal"]["suppressed"]["counting"] == COUNTED_ONCE
    assessment.refresh_from_db()
    as_stored_before(assessment)
    client = client_for(analyst)

    def step(slug: str) -> str:
        url = reverse(
            "assessment-step",
            kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": slug},
        )
        response = client.get(url)
        assert response.status_code == 200
        return str(response.content.decode())

    body = step("deidentify")
    # the release: 31 − 27 = 4 events removed, not the stored 2 + 3
    assert "27 records released, 4 suppressed;" in body
    # the alternatives stored before: their sums may count an event twice
    pareto = (assessment.search_result or {})["pareto"]
    assert body.count('data-testid="legacy-at-most"') == len(pareto)
    assert "at most</span> 5 (" in body
    utility = step("utility")
    assert 'data-testid="suppressed">4 (12.90%)<' in utility

    api = f"/api/v1/assessments/{assessment.id}/"
    served = client.get(api + "apply/").json()
    assert served["result"]["suppressed_rows"] == 5  # the stored result, as stored
    reading = served["person_suppression"]
    assert reading["counting"] == LEGACY
    assert (reading["events_removed"], reading["persons_without_events_left"]) == (4, 1)
    assert reading["persons_text"] == "with their 3 events."
    assert reading["note"] == LEGACY_NOTE
    searched_reading = client.get(api + "search/").json()["person_suppression"]
    assert searched_reading["counting"] == LEGACY
    assert (searched_reading["events_removed"], searched_reading["events_removed_at_most"]) == (
        None,
        5,
    )

    services_accept(assessment, analyst)
    justify_all(assessment)  # type: ignore[no-untyped-call]
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready for review.",
        intruder_waiver="No motivated-intruder test: this is a synthetic test release.",
    )
    review = client_for(reviewer).get(f"/o/{custodian.slug}/assessments/{assessment.id}/review/")
    assert review.status_code == 200
    page = review.content.decode()
    assert OLD_SENTENCE in page and LEGACY_NOTE in page
    assert "Records suppressed: 4 of 31." in page
    record = client_for(analyst).get(api + "record/").json()
    assert record["person_suppression"]["counting"] == LEGACY
    assert record["person_suppression"]["events_removed"] == 4
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets 0.5."
    )
    html = report_html(assessment=assessment, decision=decision)
    assert OLD_SENTENCE in html and LEGACY_NOTE in html
    assert "not counted above" not in html
    assert "<strong>4 suppressed</strong> (12.90%)" in html
    assert "at most 5 events removed: stored before each removed event was counted once" in html
    data = summary_data(assessment=assessment, decision=decision)
    assert data["residual_risk"]["records_suppressed"] == 4


def services_accept(assessment, analyst) -> None:  # type: ignore[no-untyped-def]
    from apps.assessments import services

    services.assessment_accept_utility(
        assessment=assessment, user=analyst, note="The codes are kept; some events were removed."
    )


def test_a_new_stored_result_keeps_the_new_words(custodian, analyst, client_for):  # type: ignore[no-untyped-def]
    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    search = searched(assessment, analyst)
    assert search["solution"]["counting"] == COUNTED_ONCE
    assert all(node["counting"] == COUNTED_ONCE for node in search["pareto"])
    applied(assessment, analyst)
    api = f"/api/v1/assessments/{assessment.id}/"
    reading = client_for(analyst).get(api + "apply/").json()["person_suppression"]
    # one event suppressed to protect its person (LONGITUDINAL test of the same data)
    assert reading["counting"] == COUNTED_ONCE
    assert (reading["events"], reading["persons"], reading["events_removed"]) == (1, 0, 1)
    assert reading["persons_text"] == "with their 0 events not counted above."
    assert reading["note"] == ""
    assert (
        client_for(analyst).get(api + "search/").json()["person_suppression"]["counting"]
        == COUNTED_ONCE
    )


def test_the_template_filters_leave_a_missing_figure_blank() -> None:
    from django.template import Context, Template

    template = Template(
        "{% load humanize deid person_suppression %}"
        "[{{ a|rows_suppressed|intcomma }}|{{ a|rows_suppressed_share|percent:2 }}]"
    )
    assert template.render(Context({"a": {"form": "table"}})) == "[|—]"
    legacy = {"suppressed_rows": 5, "longitudinal": summary(OLD_SUPPRESSED, 27)}
    assert template.render(Context({"a": legacy})) == "[4|12.90%]"
    record = {"suppressed_rows": 1234, "suppressed_share": 0.5}
    assert template.render(Context({"a": record})) == "[1\xa0234|50.00%]"  # intcomma, as before


def test_large_figures_are_printed_as_the_report_prints_them() -> None:
    big = {
        **OLD_SUPPRESSED,
        "events_of_suppressed_persons": 1234,
        "persons_without_events_left": 1500,
    }
    html = render_to_string("reports/_person_release.html", {"lg": summary(big, 27)})
    # the old template's own numbers, through intcomma
    assert "with their 1\xa0234 events. 1\xa0500 persons lost every event" in html
