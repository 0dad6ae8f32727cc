"""Dates and the number of events of person-keyed data in the web app (issue 25;
LONGITUDINAL.md §2.6, §2.7): the settings read by one parser for the page and the API,
refused with clear messages, used by Step 4's risk, Step 7's search and the release
(dates generalized, anchored or shifted per person; the offsets nowhere but sealed), and
printed in the report. Every figure is worked out by hand in the comments."""

from __future__ import annotations

import base64
import json
from datetime import date

import polars as pl
import pytest
from django.template.loader import render_to_string

from apps.assessments import person_dates, persons, release_secrets
from apps.assessments.configuration import DeidConfig, EventCount, PersonDates, parse
from apps.assessments.deidentify import deid_config, deid_config_save
from apps.assessments.models import Assessment
from apps.core.errors import ApplicationError
from apps.engine.techniques.date_shift import shift_days
from tests.assessments.persons_factory import (
    SEARCH,
    TC1,
    TC1_ROLES,
    applied,
    assessment_of,
    measured,
    page,
    searched,
    upload,
    visits,
    with_dates,
)

ROLES = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "admission": "quasi"}


# Step 4: absolute dates share days between persons; anchored ones share first dates
# (P1, P2) and intervals (P1, P3 both 10 days) differently.
STEP4 = visits(
    {
        "HN1": ("2020-01-10", "2020-01-20"),  # anchor 01-10, intervals {0, 10}
        "HN2": ("2020-01-10", "2020-01-30"),  # anchor 01-10, intervals {0, 20}
        "HN3": ("2020-01-20", "2020-01-30"),  # anchor 01-20, intervals {0, 10}
    }
)


def step4(custodian, analyst, dates, power: str = "1") -> dict:  # type: ignore[no-untyped-def,type-arg]
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, STEP4, ROLES))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    persons.assessment_set_power(assessment=assessment, user=analyst, power=power)
    person_dates.assessment_set_dates(
        assessment=assessment, user=analyst, settings={"dates": dates}
    )
    return measured(assessment, analyst)


def test_step4_absolute_dates(custodian, analyst):
    result = step4(custodian, analyst, {"columns": ["admission"], "mode": "absolute"})
    # p = 1, one person-level class of three; days 01-10 (P1, P2), 01-20 (P1, P3), 01-30
    # (P2, P3): every day is held by two persons → every count 2.
    assert result["min_class_size"] == 2
    assert (result["max_risk"], result["average_risk"]) == (0.5, 0.5)
    assert result["dates"]["mode"] == "absolute"
    assert result["dates"]["levels"] == ["day", "month", "quarter", "year", "*"]
    assert result["anchor_used"] is False


def test_step4_anchored_dates(custodian, analyst):
    result = step4(custodian, analyst, {"columns": ["admission"], "mode": "anchored"})
    # The anchor (day) is person-level: {P1, P2} share 01-10, P3 alone (count 1). In
    # {P1, P2}, P1's 10 days and P2's 20 days are held once → counts 1, 1, 1.
    assert result["min_class_size"] == 1
    assert (result["max_risk"], result["average_risk"]) == (1.0, 1.0)
    assert result["anchor_used"] is True
    assert result["person_quasi"] == ["sex", "birth_year"]


def test_step4_shifted_dates_measure_what_the_shift_leaves(custodian, analyst):
    result = step4(
        custodian, analyst, {"columns": ["admission"], "mode": "anchored", "shift_days": 30}
    )
    # ±30 days span 61 days: the anchor is known to the year (2020 for all) → one class;
    # intervals to the day: 0 held by 3, 10 by P1 and P3, 20 by P2 alone → counts 2, 1, 2:
    # max risk 1, average (1/2 + 1 + 1/2) / 3 = 2/3.
    assert result["min_class_size"] == 1
    assert result["max_risk"] == 1.0
    assert result["average_risk"] == pytest.approx(2 / 3)
    assert result["anchor_min_level"] == 2
    assert result["dates"]["shift_days"] == 30


def test_event_count_changes_the_per_person_count(custodian, analyst):
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, TC1, TC1_ROLES))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    persons.assessment_set_power(assessment=assessment, user=analyst, power="1")
    # TC1 without the count: (F, 1970) {P1}, (M, 1980) {P2, P3} → 1, 2, 2; average 2/3.
    assert measured(assessment, analyst)["average_risk"] == pytest.approx(2 / 3)
    # With it (P95 of 3, 1, 2 events: nearest rank ⌈2.85⌉ = 3rd of 1, 2, 3 → 3): P2 has
    # 1 event, P3 2 → everyone alone: 1, 1, 1.
    stale = person_dates.assessment_set_dates(
        assessment=assessment, user=analyst, settings={"event_count": {"enabled": True}}
    )
    assert stale == ["data-risk"]
    result = measured(assessment, analyst)
    assert (result["event_count_used"], result["event_count_top"]) == (True, 3)
    assert (result["min_class_size"], result["average_risk"]) == (1, 1.0)
    # Top-coded at 1: every person reads "1+" → back to 1, 2, 2.
    person_dates.assessment_set_dates(
        assessment=assessment, user=analyst, settings={"event_count": {"top": 1}}
    )
    result = measured(assessment, analyst)
    assert result["event_count_top"] == 1
    assert result["average_risk"] == pytest.approx(2 / 3)
    html = render_to_string("reports/_person_risk.html", {"risk": result, "charts": {}})
    assert "top-coded at 1" in html


# --------------------------------------------------------------------------- validation


def test_the_parser_refuses_clearly_and_old_configurations_load():
    with pytest.raises(ApplicationError, match="shift needs the date columns"):
        parse({"dates": {"columns": [], "shift_days": 10}})
    with pytest.raises(ApplicationError, match="anchored date mode needs at least one"):
        parse({"dates": {"columns": [], "mode": "anchored"}})
    with pytest.raises(ApplicationError, match="choose the anchored mode"):
        parse({"dates": {"columns": ["a"], "mode": "absolute", "shift_days": 10}})
    with pytest.raises(ApplicationError, match="absolute or anchored"):
        parse({"dates": {"columns": ["a"], "mode": "weekly"}})
    with pytest.raises(ApplicationError, match="whole number of days"):
        parse({"dates": {"columns": ["a"], "mode": "anchored", "shift_days": 0}})
    with pytest.raises(ApplicationError, match="top-code"):
        parse({"event_count": {"top": -2}})
    # A configuration stored before dates existed loads without them, and round-trips.
    old = {"masking": {}, "suppression_limit": 0.05, "metric": "loss", "max_levels": {}}
    config = DeidConfig.from_json(old)
    assert (config.dates, config.event_count) == (None, None)
    assert "dates" not in config.to_json()
    chosen = parse(
        {
            "dates": {"columns": ["admission"], "mode": "anchored", "shift_days": 7},
            "event_count": {"enabled": True, "top": "5"},
        },
        base=config,
    )
    assert chosen.dates == PersonDates(("admission",), "anchored", 7)
    assert chosen.event_count == EventCount(True, 5)
    assert DeidConfig.from_json(chosen.to_json()) == chosen
    # Another setting changed keeps them (one left out is kept).
    assert parse({"suppression_limit": 0.1}, base=chosen).dates == chosen.dates


def test_a_date_column_that_does_not_parse_is_named_with_its_rows(custodian, analyst):
    text = visits({"HN1": ("2020-01-10", "10/02/2020"), "HN2": ("2020-01-12", "2020-02-20")})
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, text, ROLES))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    person_dates.assessment_set_dates(
        assessment=assessment, user=analyst, settings={"event_count": {"enabled": False}}
    )
    with pytest.raises(ApplicationError) as refused:
        person_dates.assessment_set_dates(
            assessment=assessment,
            user=analyst,
            settings={"dates": {"columns": ["admission"], "mode": "absolute"}},
        )
    assert "'admission'" in refused.value.message and "rows 2)" in refused.value.message
    assert "10/02/2020" not in refused.value.message  # no value of the data is shown
    assessment.refresh_from_db()
    # Nothing saved is lost: the event-count setting is still there, no dates were saved.
    assert DeidConfig.from_json(assessment.deid_config).event_count == EventCount(False, "p95")
    assert DeidConfig.from_json(assessment.deid_config).dates is None
    # A person-level column is not a date column.
    with pytest.raises(ApplicationError, match="person-level"):
        person_dates.assessment_set_dates(
            assessment=assessment,
            user=analyst,
            settings={"dates": {"columns": ["birth_year"], "mode": "absolute"}},
        )


def test_page_and_api_store_the_same_settings(custodian, analyst, client_for):
    def fresh() -> Assessment:
        assessment = assessment_of(custodian, analyst, upload(custodian, analyst, STEP4, ROLES))
        persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
        return assessment

    client = client_for(analyst)
    by_page, by_api = fresh(), fresh()
    url = page(by_page, "data-risk")
    response = client.post(
        url,
        {
            "power": "2",
            "dates_form": "1",
            "date_columns": ["admission"],
            "date_mode": "anchored",
            "shift_days": "14",
            "event_count": "on",
            "event_count_top": "p95",
        },
    )
    assert response.status_code == 302
    answer = client.post(
        f"/api/v1/assessments/{by_api.id}/risk/",
        json.dumps(
            {
                "power": "2",
                "dates": {"columns": ["admission"], "mode": "anchored", "shift_days": 14},
                "event_count": {"enabled": True, "top": "p95"},
            }
        ),
        content_type="application/json",
    )
    assert answer.status_code == 202, answer.json()
    by_page.refresh_from_db()
    by_api.refresh_from_db()
    expected = {"columns": ["admission"], "mode": "anchored", "shift_days": 14}
    assert by_page.deid_config["dates"] == by_api.deid_config["dates"] == expected
    assert by_page.deid_config["event_count"] == by_api.deid_config["event_count"]
    # The API refuses a shift without dates, naming it; nothing is saved.
    refused = client.post(
        f"/api/v1/assessments/{by_api.id}/risk/",
        json.dumps({"dates": {"columns": [], "shift_days": 5}}),
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "shift needs the date columns" in refused.json()["message"]
    by_api.refresh_from_db()
    assert by_api.deid_config["dates"] == expected
    # The page shows the settings back and offers the event count by default.
    body = client.get(url).content.decode()
    assert (
        'data-testid="dates-form"' in body
        and 'value="admission" id="id_date_columns_2" checked' in body
    )
    state = client.get(f"/api/v1/assessments/{by_api.id}/persons/").json()["person_dates"]
    assert state["dates"]["shift_days"] == 14


# --------------------------------------------------------------------------- Step 7, release


def test_absolute_dates_released_at_the_chosen_level(custodian, analyst):
    assessment = with_dates(custodian, analyst, SEARCH, {"columns": ["admission"]})
    search = searched(assessment, analyst)
    # k = 2, p = 1, no budget (4 persons, 8 events): days are unique (fail); months are
    # held by two persons each (pass) → the calendar hierarchy's month, whatever
    # hierarchy was saved for the column.
    assert search["levels"] == {"sex": 0, "birth_year": 0, "admission": 1}
    assert search["level_labels"]["admission"] == ["day", "month", "quarter", "year", "*"]
    assert "admission: month" in search["levels_text"]
    result, released = applied(assessment, analyst)
    assert released.get_column("admission").to_list() == [
        "2020-01", "2020-02", "2020-01", "2020-02", "2020-03", "2020-04", "2020-03", "2020-04",
    ]  # fmt: skip
    assert result["longitudinal"]["risk_after"]["min_class_size"] == 2
    assert result["longitudinal"]["dates"] == {
        "mode": "absolute",
        "columns": ["admission"],
        "shift_days": None,
        "levels": {"admission": "month"},
    }
    html = render_to_string("reports/_person_release.html", {"lg": result["longitudinal"]})
    assert "Absolute date mode" in html and "admission: month" in html


def test_anchored_dates_released_as_anchor_and_interval_bins(custodian, analyst):
    assessment = with_dates(
        custodian, analyst, SEARCH, {"columns": ["admission"], "mode": "anchored"}
    )
    config = deid_config(assessment)
    deid_config_save(assessment=assessment, config=config.replace(max_levels={"admission": 2}))
    search = searched(assessment, analyst)
    # Intervals at most 30-day bins. Anchor by month ({P1, P2}, {P3, P4}) fails at 30-day
    # bins (P3's 51 days → bin 1, P4's 26 → bin 0) and finer. Anchor by year (one class):
    # 30-day bins P1 {0, 1}, P2 {0, 1}, P3 {0, 1}, P4 {0} → counts 3, 3, 3, 4: passes;
    # 7-day bins fail (P3's bin 7 alone). Least loss: anchor year, 30-day bins.
    assert search["levels"] == {"sex": 0, "birth_year": 0, "anchor": 2, "admission": 2}
    result, released = applied(assessment, analyst)
    assert released.get_column("anchor").to_list() == ["2020"] * 8
    # the anchor is measured as the quasi-identifier it is, not as another column
    assert [c["column"] for c in result["released_columns"]["columns"]] == []
    assert released.get_column("admission").to_list() == [
        "0-29", "30-59", "0-29", "30-59", "0-29", "30-59", "0-29", "0-29",
    ]  # fmt: skip
    after = result["longitudinal"]["risk_after"]
    # Re-measured: 3, 3, 3, 4 → max 1/3, average (3 · 1/3 + 1/4) / 4 = 0.3125.
    assert after["min_class_size"] == 3
    assert after["average_risk"] == pytest.approx(0.3125)
    assert result["longitudinal"]["dates"]["levels"] == {
        "anchor": "year",
        "admission": "30-day bins",
    }


# Intervals 30 (P1, P2) and 14 days (P3, P4), anchors all in 2020, shifted or not (no
# first date within 30 days of a new year: a shift must not move an anchor's year).
SHIFT = visits(
    {
        "HN1": ("2020-02-10", "2020-03-11"),
        "HN2": ("2020-05-03", "2020-06-02"),
        "HN3": ("2020-03-01", "2020-03-15"),
        "HN4": ("2020-08-20", "2020-09-03"),
    }
)


def test_shifted_dates_move_by_one_secret_offset_per_person(custodian, analyst):
    assessment = with_dates(
        custodian,
        analyst,
        SHIFT,
        {"columns": ["admission"], "mode": "anchored", "shift_days": 30},
        {"enabled": True},
    )
    search = searched(assessment, analyst)
    # ±30 days: the anchor no finer than the year, the intervals to the day (the shifted
    # dates show them). One class; 0 held by 4, 30 by P1, P2, 14 by P3, P4 → every
    # count 2; two events each: event count "2+" for all (top-code 2).
    assert search["levels"]["anchor"] == 2 and search["levels"]["admission"] == 0
    assert search["event_count_top"] == 2
    # The event count stays exact: the long table shows each person's rows.
    assert search["levels"]["event_count"] == 0
    result, released = applied(assessment, analyst)
    secrets = json.loads(release_secrets.release_secrets_read(assessment=assessment))
    key = base64.b64decode(secrets["date_shift"]["key"])
    original = pl.read_csv(SHIFT.encode()).get_column("admission").to_list()
    moved = released.get_column("admission").to_list()
    ids = [line.split(",")[0] for line in SHIFT.strip().splitlines()[1:]]
    offsets: dict[str, set[int]] = {}
    for pid, before, after in zip(ids, original, moved, strict=True):
        delta = (date.fromisoformat(after) - date.fromisoformat(before)).days
        offsets.setdefault(pid, set()).add(delta)
    # One offset per person, within ±30, never 0, the one the sealed key gives.
    assert all(len(d) == 1 for d in offsets.values())
    for pid, (delta,) in ((p, tuple(d)) for p, d in offsets.items()):
        assert 1 <= abs(delta) <= 30
        assert delta == shift_days(pid, key, 30)
    # The offsets and their key are nowhere in the result or the report.
    stored = json.dumps(result)
    assert secrets["date_shift"]["key"] not in stored and "offset" not in stored
    lg = result["longitudinal"]
    assert lg["dates"]["shift_days"] == 30 and lg["event_count"]["top_code"] == 2
    html = render_to_string("reports/_person_release.html", {"lg": lg})
    assert "at most 30 days either way" in html and "top-coded at 2" in html
    assert secrets["date_shift"]["key"] not in html
    # Re-measured on the shifted file, what the shift leaves: counts 2 each.
    assert lg["risk_after"]["min_class_size"] == 2


def test_step4_refuses_a_declared_date_column_no_longer_event_level(custodian, analyst):
    from apps.assessments import services
    from apps.classification.models import Variable
    from apps.classification.services import RoleDecision, variables_classify

    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, STEP4, ROLES))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    person_dates.assessment_set_dates(
        assessment=assessment, user=analyst, settings={"dates": {"columns": ["admission"]}}
    )
    admission = Variable.objects.get(dataset=assessment.dataset, name="admission")
    variables_classify(
        dataset=assessment.dataset,
        user=analyst,
        decisions=[RoleDecision(str(admission.id), "other", "No longer a quasi-identifier.")],
    )
    assessment.refresh_from_db()
    job = services.assessment_start_risk(assessment=assessment, user=analyst)
    from apps.jobs.claiming import job_execute

    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "failed"
    assert "'admission' is declared a date column but is not a confirmed" in job.error
