"""Several rows per person (issue 25): the person key and levels of Step 2, risk counted in
persons in Step 4 (LONGITUDINAL.md §5, the cases about measurement, by hand), Step 6 on
the per-person figures, and Step 7 refusing what cannot work per person (its search and
release in persons: test_longitudinal_release.py)."""

import pytest

from apps.assessments import deidentify, person_hints, persons, release_apply, services
from apps.assessments.selectors import overall_risk
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.core.errors import ApplicationError
from tests.assessments.conftest import LOW_ANSWERS, _run
from tests.assessments.persons_factory import (
    TC1,
    TC1_ROLES,
    TC4,
    assessment_of,
    measured,
    page,
    upload,
)

# TC2: the superset rule. Four persons, same sex and birth year; codes P1 {A,B}, P2 {A,C},
# P3 {B,C}, P4 {A,B,C} (9 rows).
TC2 = "patient_id,sex,birth_year,code\n" + "".join(
    f"{pid},F,1970,{code}\n"
    for pid, codes in (("HN1", "AB"), ("HN2", "AC"), ("HN3", "BC"), ("HN4", "ABC"))
    for code in codes
)


# TC6, absolute dates at month level: P1 {2020-01, 2020-02}, P2 {2020-03, 2020-04},
# P3 {2020-01, 2020-03}.
TC6 = "patient_id,sex,birth_year,admission_month\n" + "".join(
    f"{pid},F,1960,{month}\n"
    for pid, months in (
        ("HN1", ("2020-01", "2020-02")),
        ("HN2", ("2020-03", "2020-04")),
        ("HN3", ("2020-01", "2020-03")),
    )
    for month in months
)


@pytest.fixture
def tc1(custodian, analyst):  # type: ignore[no-untyped-def]
    return assessment_of(custodian, analyst, upload(custodian, analyst, TC1, TC1_ROLES))


def by_power(result: dict) -> dict:  # type: ignore[type-arg]
    return {row["power"]: row for row in result["by_power"]}


def test_tc1_counts_persons_not_rows(tc1, analyst):
    # Rows: without a person key the classes are (F,1970) × 3 rows and (M,1980) × 3 rows:
    # k = 3, average risk 2/6 — the answer that counts one woman's visits as three people.
    rows = measured(tc1, analyst)
    assert rows.get("unit") is None
    assert (rows["profile"]["min_class_size"], rows["average_risk"]) == (3, pytest.approx(1 / 3))

    stale = persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    assert "data-risk" in stale
    tc1.refresh_from_db()
    # Both quasi-identifiers are constant within every person: suggested person-level.
    assert tc1.person_levels == {"sex": "person", "birth_year": "person"}

    result = measured(tc1, analyst)
    # Persons: {HN4471} alone in (F,1970); {HN5502, HN6613} in (M,1980). k_i = 1, 2, 2:
    # max risk 1, average over persons (1 + 1/2 + 1/2) / 3 = 2/3 = 0.6667.
    assert result["unit"] == "person"
    assert (result["persons"], result["events"], result["rows"]) == (3, 6, 6)
    assert result["min_class_size"] == 1
    assert result["max_risk"] == 1.0
    assert result["average_risk"] == pytest.approx(2 / 3)
    assert round(result["average_risk"], 4) == 0.6667
    assert result["person_classes"] == 2
    # Public release: the data risk is the max risk; 1 > the cap 0.33 → strict average = max.
    assert (result["data_risk"], result["strict_average_risk"]) == (1.0, 1.0)
    # No event-level quasi-identifier: every power gives the same figures (TC1: p = 1, 2).
    table = by_power(result)
    assert list(table) == ["1", "2", "3", "4", "5", "all"]
    for row in table.values():
        assert (row["min_class_size"], row["max_risk"]) == (1, 1.0)
        assert row["average_risk"] == pytest.approx(2 / 3)
    # No target yet (Steps 3, 5): ARX's 0.2; all three persons' risks (1, .5, .5) exceed it.
    assert result["target"] == 0.2 and result["target_is_default"] is True
    assert result["persons_at_risk"] == {"persons": 3, "share": 1.0}


def test_step6_uses_the_per_person_figures(tc1, analyst):
    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    services.assessment_set_release(
        assessment=tc1,
        release_model="non_public",
        recipient_organization="Research unit",
        agreement_kind="dsa",
        agreement_reference="DSA-2025-7",
    )
    services.assessment_set_threshold(
        assessment=tc1, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    from tests.assessments.conftest import CONTROLS_ALL_YES, MOTIVES_LOW

    services.assessment_set_context(
        assessment=tc1,
        answers={
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 1,
            "prevalence_source": "Everyone could be in it",
        },
    )
    result = measured(tc1, analyst)
    # Non-public: strict average over persons; max risk 1 > 0.33, so the max risk applies.
    assert result["risk_measure"] == "strict average risk"
    assert result["data_risk"] == 1.0
    overall = overall_risk(tc1)
    assert overall is not None
    assert overall["risk_unit"] == "person"
    assert overall["data_risk"] == 1.0
    assert overall["value"] == pytest.approx(1.0 * overall["context_risk"])
    # The target now comes from Step 6; a person is at risk when 1/k_i exceeds it.
    assert result["target"] == pytest.approx(overall["data_risk_target"])
    assert result["target_is_default"] is False


def test_tc2_power_and_the_superset_rule(custodian, analyst):
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "code": "quasi"}
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, TC2, roles))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    assessment.refresh_from_db()
    assert assessment.person_levels == {"sex": "person", "birth_year": "person", "code": "event"}
    assert assessment.adversary_power == "3"
    result = measured(assessment, analyst)
    assert (result["persons"], result["events"]) == (4, 9)
    assert (result["person_quasi"], result["event_quasi"]) == (["sex", "birth_year"], ["code"])
    # p = 3 (the default): P1-P3 hold two codes (their whole set, count 2), P4 {A,B,C} is
    # held by P4 alone: r = .5, .5, .5, 1 → max 1, average 2.5/4 = 0.625.
    assert result["power"] == "3"
    assert (result["min_class_size"], result["max_risk"]) == (1, 1.0)
    assert result["average_risk"] == pytest.approx(0.625)
    table = by_power(result)
    # p = 1: each code is held by 3 persons → 1/3 each; p = 2: every pair by 2 → 0.5;
    # all: every set is unique → 1.
    assert (table["1"]["max_risk"], table["1"]["average_risk"]) == (
        pytest.approx(1 / 3),
        pytest.approx(1 / 3),
    )
    assert (table["2"]["max_risk"], table["2"]["average_risk"]) == (0.5, 0.5)
    assert (table["3"]["max_risk"], table["3"]["average_risk"]) == (1.0, pytest.approx(0.625))
    assert (table["all"]["max_risk"], table["all"]["average_risk"]) == (1.0, 1.0)
    # p = 4 and 5: s_i = min(p, |F_i|) is each whole set, as at p = 3, and a superset still
    # matches ({A,B} is held by P1 and P4); "all" is complete knowledge, an exact match.
    assert table["4"]["average_risk"] == table["5"]["average_risk"] == pytest.approx(0.625)

    # Power 1 chosen: the headline figures follow; the table is the same.
    stale = persons.assessment_set_power(assessment=assessment, user=analyst, power="1")
    assert stale == ["data-risk"]
    result = measured(assessment, analyst)
    assert result["power"] == "1"
    assert (result["min_class_size"], result["max_risk"]) == (3, pytest.approx(1 / 3))
    assert result["persons_at_risk"]["persons"] == 4  # 1/3 > 0.2


def test_tc4_and_tc6_measured_at_the_given_detail(custodian, analyst):
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "diagnosis": "quasi"}
    tc4 = assessment_of(custodian, analyst, upload(custodian, analyst, TC4, roles))
    persons.assessment_set_persons(assessment=tc4, user=analyst, person_key="patient_id")
    persons.assessment_set_power(assessment=tc4, user=analyst, power="1")
    table = by_power(measured(tc4, analyst))
    # p = 1: I21.0 and I21.4 are held by one person each, I25.1 by two: strict k = 1, 1, 2, 2
    # → max 1, average (1 + 1 + .5 + .5) / 4 = 0.75. p = 2: every pair is unique.
    assert (table["1"]["max_risk"], table["1"]["average_risk"]) == (1.0, 0.75)
    assert (table["2"]["max_risk"], table["2"]["average_risk"]) == (1.0, 1.0)

    roles = {
        "patient_id": "direct",
        "sex": "quasi",
        "birth_year": "quasi",
        "admission_month": "quasi",
    }
    tc6 = assessment_of(custodian, analyst, upload(custodian, analyst, TC6, roles))
    persons.assessment_set_persons(assessment=tc6, user=analyst, person_key="patient_id")
    table = by_power(measured(tc6, analyst))
    # p = 1: 2020-01 is held by P1 and P3, 2020-03 by P2 and P3, 2020-02 and 2020-04 by one:
    # strict r = 1, 1, 0.5 → average 2.5/3 = 0.8333. p = 2: every person alone.
    assert table["1"]["max_risk"] == 1.0
    assert round(table["1"]["average_risk"], 4) == 0.8333
    assert table["2"]["average_risk"] == 1.0


def test_levels_are_suggested_from_the_data_and_editable(custodian, analyst):
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "code": "quasi"}
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, TC2, roles))
    state = persons.persons_state(assessment, person_key="patient_id")
    # Sex and birth year are constant within every person; the code changes within all four.
    assert state["suggestions"] == [
        {"column": "sex", "level": "person", "varying_persons": 0, "persons": 4},
        {"column": "birth_year", "level": "person", "varying_persons": 0, "persons": 4},
        {"column": "code", "level": "event", "varying_persons": 4, "persons": 4},
    ]
    assert state["levels"] == {"sex": "person", "birth_year": "person", "code": "event"}
    assert state["candidates"] == ["patient_id"]
    # A person-level column may be made event-level (the analyst knows better).
    persons.assessment_set_persons(
        assessment=assessment,
        user=analyst,
        person_key="patient_id",
        levels={"birth_year": "event"},
    )
    assessment.refresh_from_db()
    assert assessment.person_levels == {"sex": "person", "birth_year": "event", "code": "event"}
    # Stored, and in the audit trail with the fields saved.
    from apps.audit.models import AuditEvent

    event = AuditEvent.objects.filter(action="assessment.classification").latest("sequence")
    assert event.details["person_key"] == "patient_id"
    assert event.details["person_levels"]["birth_year"] == "event"


def test_a_person_level_column_that_varies_is_refused_by_row_numbers(custodian, analyst):
    # TC9: HN4471 is F on one row and M on another; HN6613's code changes too.
    text = (
        "patient_id,sex,birth_year,code\n"
        "HN4471,F,1970,I21.0\n"
        "HN5502,M,1980,E11.9\n"
        "HN4471,M,1970,I25.1\n"
        "HN6613,M,1980,E11.6\n"
    )
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "code": "quasi"}
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, text, roles))
    # The suggestion already says event-level for sex (it varies within one person of 3).
    state = persons.persons_state(assessment, person_key="patient_id")
    assert state["suggestions"][0] == {
        "column": "sex",
        "level": "event",
        "varying_persons": 1,
        "persons": 3,
    }
    with pytest.raises(ApplicationError) as caught:
        persons.assessment_set_persons(
            assessment=assessment,
            user=analyst,
            person_key="patient_id",
            levels={"sex": "person"},
        )
    error = caught.value
    assert "'sex'" in error.message and "rows 1, 3" in error.message
    assert error.extra == {
        "field": "levels",
        "column": "sex",
        "varying_persons": 1,
        "example_rows": [[1, 3]],
    }
    # Never the person's key, never a value of the data.
    for raw in ("HN4471", "HN5502", "I21.0", "I25.1", "F,", "'F'", "'M'"):
        assert raw not in error.message
    assessment.refresh_from_db()
    assert assessment.person_key == "" and assessment.person_levels == {}

    with pytest.raises(ApplicationError, match="'code' is marked person-level"):
        persons.assessment_set_persons(
            assessment=assessment,
            user=analyst,
            person_key="patient_id",
            levels={"sex": "event", "code": "person"},
        )


def test_the_person_key_must_be_a_direct_identifier_on_every_row(custodian, analyst):
    text = "patient_id,sex,birth_year\nHN1,F,1970\n,F,1970\nHN1,F,1970\nHN2,M,1980\n"
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi"}
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, text, roles))
    with pytest.raises(ApplicationError, match="1 row.s. have no value in the person key"):
        persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    with pytest.raises(ApplicationError, match="Classify 'sex' as a direct identifier"):
        persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="sex")
    with pytest.raises(ApplicationError, match="not a column"):
        persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="nope")
    with pytest.raises(ApplicationError, match="must be 'person' or 'event'"):
        persons.assessment_set_persons(
            assessment=assessment,
            user=analyst,
            person_key="patient_id",
            levels={"sex": "household"},
        )
    with pytest.raises(ApplicationError, match="Not a confirmed quasi-identifier: patient_id"):
        persons.assessment_set_persons(
            assessment=assessment,
            user=analyst,
            person_key="patient_id",
            levels={"patient_id": "person"},
        )
    with pytest.raises(ApplicationError, match="Adversary power must be 1 to 10"):
        persons.assessment_set_power(assessment=assessment, user=analyst, power="11")


def column(name: str, kind: str, rows: int, distinct: int, missing: int = 0):  # type: ignore[no-untyped-def]
    return person_hints.IdentifierColumn(name, kind, rows, missing, distinct)


def test_the_longitudinal_warning_rule():
    hints = person_hints.repeated_identifiers(
        [
            # 10 rows, 8 distinct record numbers: two rows repeat a value (80 %) → flagged.
            column("mrn", "record_number", 10, 8),
            # 9 distinct of 10: at most one row in ten repeats → one row per person.
            column("chart", "record_number", 10, 9),
            # Named as an identifier, values repeat: the detectors call it a shared code.
            column("patient_key", "shared_code", 1000, 250),
            # Names and addresses repeat across different people: never a hint.
            column("surname", "name", 1000, 50),
            column("street", "address", 1000, 50),
            # Missing values do not count as rows: 4 filled rows, 4 distinct.
            column("email", "email", 10, 4, missing=6),
            # A single value is no identifier at all.
            column("phone", "phone", 10, 1),
            # A quasi-identifier repeats by nature.
            column("sex", "sex", 1000, 2),
        ]
    )
    assert hints == [
        {"column": "mrn", "rows": 10, "distinct": 8, "rows_per_value": 1.25},
        {"column": "patient_key", "rows": 1000, "distinct": 250, "rows_per_value": 4.0},
    ]


def test_the_warning_from_a_real_upload_until_a_person_is_declared(tc1, analyst):
    state = persons.persons_state(tc1)
    # patient_id: 6 rows, 3 distinct values, named as a patient identifier.
    assert state["looks_longitudinal"] == [
        {"column": "patient_id", "rows": 6, "distinct": 3, "rows_per_value": 2.0}
    ]
    assert state["person_key"] == "" and state["levels"] == {}
    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    assert persons.persons_state(tc1)["looks_longitudinal"] == []
    # Declaring none again clears the levels, and the warning comes back.
    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="")
    tc1.refresh_from_db()
    assert (tc1.person_key, tc1.person_levels) == ("", {})
    assert persons.persons_state(tc1)["looks_longitudinal"][0]["column"] == "patient_id"


def test_one_row_per_person_data_gets_no_warning(assessment):
    # The register of conftest: ten e-mail addresses, all distinct.
    assert persons.persons_state(assessment)["looks_longitudinal"] == []


def test_step7_refuses_what_cannot_work_per_person(tc1, analyst):
    from apps.assessments.configuration import DeidConfig, PrivacyModel, Technique

    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    services.assessment_set_threshold(
        assessment=tc1, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=tc1, answers={})
    measured(tc1, analyst)
    # Settings stored by an older page (or another path): the one guard reads them.
    tc1.deid_config = DeidConfig(
        techniques=(Technique("rounding", column="length_of_stay", base=5.0),),
        privacy_models=(PrivacyModel("length_of_stay", "distinct-l=2"),),
    ).to_json()
    tc1.save(update_fields=["deid_config"])
    with pytest.raises(ApplicationError) as caught:
        deidentify.assessment_start_search(assessment=tc1, user=analyst)
    assert caught.value.status == 409
    assert "further techniques (rounding), which act on records" in caught.value.message
    assert "privacy models on length_of_stay" in caught.value.message
    assert tc1.search_job is None
    tc1.chosen_levels = {"sex": 0, "birth_year": 0}
    with pytest.raises(ApplicationError, match="several rows per person"):
        release_apply.assessment_start_apply(assessment=tc1, user=analyst)
    # The record-level search and apply never take such data (it would count rows).
    with pytest.raises(ApplicationError, match="in persons, not records"):
        persons.refuse_row_search(tc1)


# --------------------------------------------------------------------------- pages


def test_step2_page_declares_the_person_and_refuses_a_varying_column(
    tc1, analyst, reviewer, client_for
):
    client = client_for(analyst)
    body = client.get(page(tc1, "classification")).content.decode()
    assert 'data-testid="longitudinal-warning"' in body and "“patient_id”" in body
    # Choosing the key (the select's htmx GET) shows the suggested levels for it.
    body = client.get(page(tc1, "classification"), {"person_key": "patient_id"}).content.decode()
    assert 'data-testid="person-levels"' in body
    assert "constant within every one of 3 persons: person-level" in body
    # Saved with the suggestion (the levels were shown for another key: none posted).
    response = client.post(
        page(tc1, "classification"), {"person_key": "patient_id", "levels_for": ""}
    )
    assert response.status_code == 302
    tc1.refresh_from_db()
    assert tc1.person_key == "patient_id"
    assert tc1.person_levels == {"sex": "person", "birth_year": "person"}
    body = client.get(page(tc1, "classification")).content.decode()
    assert 'data-testid="longitudinal-warning"' not in body
    assert 'data-testid="person-key-declared"' in body

    # length_of_stay made a quasi-identifier, then marked person-level: it changes within
    # HN4471 (rows 1, 3, 5) and HN6613 (rows 4, 6): refused by row numbers.
    stay = Variable.objects.get(dataset=tc1.dataset, name="length_of_stay")
    variables_classify(
        dataset=tc1.dataset,
        user=analyst,
        decisions=[RoleDecision(str(stay.id), "quasi", "Known from the hospital's notice.")],
    )
    response = client.post(
        page(tc1, "classification"),
        {
            "person_key": "patient_id",
            "levels_for": "patient_id",
            "level_sex": "person",
            "level_birth_year": "person",
            "level_length_of_stay": "person",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "&#x27;length_of_stay&#x27; is marked person-level" in body
    assert "2 person(s) (the person on rows 1, 3, 5; the person on rows 4, 6)" in body
    assert "HN4471" not in body and "HN6613" not in body
    tc1.refresh_from_db()
    assert "length_of_stay" not in tc1.person_levels

    # The reviewer reads the levels, without a form.
    body = client_for(reviewer).get(page(tc1, "classification")).content.decode()
    assert 'data-testid="persons-form"' not in body and "birth_year" in body


def test_step4_page_in_persons_and_step7_page_in_persons(tc1, analyst, client_for):
    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    client = client_for(analyst)
    response = client.post(page(tc1, "data-risk"), {"power": "2"})
    assert response.status_code == 302
    tc1.refresh_from_db()
    assert tc1.adversary_power == "2"
    _run(tc1.risk_job)
    body = client.get(page(tc1, "data-risk")).content.decode()
    assert 'data-testid="risk-unit"' in body
    assert 'data-testid="persons">3<' in body and 'data-testid="events">6<' in body
    assert 'data-testid="average-risk">0.6667<' in body
    assert 'data-testid="power-all"' in body
    assert "Risk against the adversary power" in body  # the chart, drawn here (no CDN)
    assert "p = 2 (chosen)" in body
    body = client.get(page(tc1, "deidentify")).content.decode()
    assert 'data-testid="longitudinal-note"' in body


# --------------------------------------------------------------------------- API


def test_api_persons_power_and_risk(tc1, analyst, client_for):
    import json

    from apps.jobs.claiming import job_execute

    client = client_for(analyst)
    base = f"/api/v1/assessments/{tc1.id}/"
    state = client.get(base + "persons/").json()
    assert state["person_key"] == "" and state["candidates"] == ["patient_id"]
    assert state["looks_longitudinal"] == [
        {"column": "patient_id", "rows": 6, "distinct": 3, "rows_per_value": 2.0}
    ]
    bad = client.put(
        base + "persons/",
        json.dumps({"person_key": "patient_id", "levels": {"sex": "household"}}),
        content_type="application/json",
    )
    assert bad.status_code == 400
    saved = client.put(
        base + "persons/",
        json.dumps({"person_key": "patient_id", "levels": {"sex": "person"}}),
        content_type="application/json",
    )
    assert saved.status_code == 200, saved.json()
    body = saved.json()
    assert body["levels"] == {"sex": "person", "birth_year": "person"}
    assert [s["level"] for s in body["suggestions"]] == ["person", "person"]
    assert body["looks_longitudinal"] == []
    # The assessment's detail carries the block (without reading the data).
    detail = client.get(base).json()
    assert detail["persons"]["person_key"] == "patient_id"
    assert detail["persons"]["levels"] == {"sex": "person", "birth_year": "person"}

    assert (
        client.post(
            base + "risk/", json.dumps({"power": "11"}), content_type="application/json"
        ).status_code
        == 400
    )
    started = client.post(
        base + "risk/", json.dumps({"power": "all"}), content_type="application/json"
    )
    assert started.status_code == 202
    assert job_execute(job_id=started.json()["id"])
    result = client.get(base + "risk/").json()["result"]
    assert result["unit"] == "person" and result["power"] == "all"
    assert (result["persons"], result["events"], result["min_class_size"]) == (3, 6, 1)
    assert result["max_risk"] == 1.0
    assert round(result["average_risk"], 4) == 0.6667
    assert [r["power"] for r in result["by_power"]] == ["1", "2", "3", "4", "5", "all"]

    # Step 7 over the API: the event limit is a setting of its own; the search waits for
    # Steps 3 and 5 like any other, not refused for the persons.
    config = client.put(
        base + "deidentify/config/",
        json.dumps({"event_suppression_limit": 0.02}),
        content_type="application/json",
    )
    assert config.status_code == 200, config.json()
    assert config.json()["event_suppression_limit"] == 0.02
    assert client.get(base + "deidentify/config/").json()["event_suppression_limit"] == 0.02
    waiting = client.post(base + "search/", "{}", content_type="application/json")
    assert waiting.status_code in (400, 409)
    assert "threshold" in waiting.json()["message"]


def test_a_single_table_assessment_is_unchanged(assessment, analyst):
    """No person key: Step 4 counts records as before (conftest's register, test_services)."""
    services.assessment_set_release(assessment=assessment, release_model="public")
    result = measured(assessment, analyst)
    assert "unit" not in result
    assert (result["max_risk"], result["average_risk"]) == (1.0, 0.4)
    assert assessment.person_key == "" and assessment.adversary_power == "3"


def test_the_risk_job_refuses_a_key_no_longer_classified_direct(tc1, analyst):
    from apps.jobs.claiming import job_execute

    persons.assessment_set_persons(assessment=tc1, user=analyst, person_key="patient_id")
    key = Variable.objects.get(dataset=tc1.dataset, name="patient_id")
    variables_classify(
        dataset=tc1.dataset,
        user=analyst,
        decisions=[RoleDecision(str(key.id), "other", "Reclassified by the analyst.")],
    )
    job = services.assessment_start_risk(assessment=tc1, user=analyst)
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "failed"
    assert "no longer classified as a direct identifier" in job.error
    tc1.refresh_from_db()
    assert tc1.risk_result is None  # never measured on rows instead
