"""Step 7 → 9 on data with several rows per person (issue 25): the search over persons and
events, the release written with its suppression and keyed person pseudonyms, measured
again in persons, and the report's longitudinal section. Every figure is worked out by
hand in the comments (LONGITUDINAL.md §5 TC4, and a case built for suppression)."""

from __future__ import annotations

import base64
import json

import pytest

from apps.assessments import deidentify, release_secrets, services
from apps.assessments.domains import (
    assessment_set_pseudonym_domain,
    domain_key_purpose,
    pseudonym_domain_create,
)
from apps.assessments.hierarchies import hierarchy_set
from apps.assessments.justifications import altered_variables
from apps.assessments.models import HierarchySpec
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.engine.masking import hmac_pseudonym
from tests.assessments.persons_factory import (
    SUPPRESSION,
    applied,
    persons_ready,
    prepared,
    searched,
    tc4_ready,
)
from tests.justify import justify_all


def original_ids(text: str) -> list[str]:
    return [line.split(",")[0] for line in text.strip().splitlines()[1:]]


def test_tc4_search_returns_the_3_character_level_and_the_release_measures_in_persons(
    custodian, analyst
):
    assessment = tc4_ready(custodian, analyst)
    search = searched(assessment, analyst)
    # TC4, p = 2, target 0.5: at level 0 every pair is unique; at level 1 P1, P2 hold
    # {I21, E11} and P3, P4 {I25, E11}: every count 2 → the optimum. 4 persons and 8
    # events give budgets of 0, so nothing is suppressed.
    assert search["unit"] == "person"
    assert search["levels"] == {"sex": 0, "birth_year": 0, "diagnosis": 1}
    assert (search["persons"], search["events"]) == (4, 8)
    assert search["solution"]["suppressed_persons"] == 0
    assert search["solution"]["suppressed_events"] == 0
    assert search["solution"]["min_class_size"] == 2
    assert search["solution"]["max_risk"] == pytest.approx(0.5)
    assert search["solution"]["budgets"] == {"events": 0, "persons": 0}

    result, released = applied(assessment, analyst)
    assert sorted(released.get_column("diagnosis").to_list()) == [
        "E11", "E11", "E11", "E11", "I21", "I21", "I25", "I25",
    ]  # fmt: skip
    lg = result["longitudinal"]
    assert (lg["persons_in"], lg["events_in"], lg["persons_out"], lg["events_out"]) == (4, 8, 4, 8)
    after = lg["risk_after"]
    # Re-measured at p = 2: {I21, E11} ×2, {I25, E11} ×2 → every count 2.
    assert after["min_class_size"] == 2
    assert after["max_risk"] == pytest.approx(0.5)
    assert after["average_risk"] == pytest.approx(0.5)
    assert after["persons_at_risk"] == 0
    by_power = {row["power"]: row for row in after["by_power"]}
    # p = 1: I21 2, I25 2, E11 4 → smallest 2; all events: the sets of P1 and P2 are equal.
    assert by_power["1"]["min_class_size"] == 2
    assert by_power["all"]["min_class_size"] == 2
    assert result["passes"] is True
    assert result["risk_after"]["data_risk"] == pytest.approx(0.5)
    # Step 4 on the original: TC4 level 0, p = 2 → every person unique.
    assert result["risk_before"]["max_risk"] == pytest.approx(1.0)
    # Two events per person: top-code P95 = 2, all four persons in "2+".
    assert lg["event_counts"]["top_code"] == 2
    assert lg["event_counts"]["before"] == [
        {"events": "1", "persons": 0},
        {"events": "2+", "persons": 4},
    ]


def test_event_suppression_first_then_the_pseudonyms(custodian, analyst):
    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    search = searched(assessment, analyst)
    # At level 0 the event budget (1) removes P20's Z: every person passes; less loss
    # than suppressing code (*) for everyone or removing P20 with both events.
    assert search["levels"] == {"sex": 0, "birth_year": 0, "code": 0}
    solution = search["solution"]
    assert (solution["suppressed_events"], solution["suppressed_persons"]) == (1, 0)
    assert (search["event_budget"], search["person_budget"]) == (1, 1)
    # The alternatives: one per generalization, least suppression first; code at * needs
    # none.
    assert [a["levels"]["code"] for a in search["pareto"]] == [1, 0]
    assert search["pareto"][0]["suppressed_events"] == 0

    result, released = applied(assessment, analyst)
    # 31 events, Z removed: 30 rows, 20 persons.
    assert released.height == 30
    assert "Z" not in released.get_column("code").to_list()
    lg = result["longitudinal"]
    assert lg["suppressed"] == {
        "persons": 0,
        "events_of_suppressed_persons": 0,
        "events": 1,
        "persons_every_event_suppressed": 0,
        "counting": "events_counted_once",
    }
    assert (result["rows_in"], result["rows_out"], result["suppressed_rows"]) == (31, 30, 1)
    # Re-measured at p = 1: P1–P10 and P20 hold {A} (11 persons), P11–P19 {B} (9):
    # smallest 9, max risk 1/9, average (11 · 1/11 + 9 · 1/9) / 20 = 0.1.
    after = lg["risk_after"]
    assert after["min_class_size"] == 9
    assert after["max_risk"] == pytest.approx(1 / 9)
    assert after["average_risk"] == pytest.approx(0.1)

    # The person key: HMAC-SHA-256 under the release's sealed key, one pseudonym per
    # person on all their rows, distinct between persons, no original id left.
    ids = original_ids(SUPPRESSION)
    keys = json.loads(release_secrets.release_secrets_read(assessment=assessment))["keys"]
    key = base64.b64decode(keys["patient_id"])
    kept_ids = [
        i
        for i, line in zip(ids, SUPPRESSION.strip().splitlines()[1:], strict=True)
        if not line.endswith(",Z")
    ]
    pseudonyms = released.get_column("patient_id").to_list()
    assert pseudonyms == [hmac_pseudonym(i, key, 32) for i in kept_ids]
    by_person: dict[str, set[str]] = {}
    for original, pseudonym in zip(kept_ids, pseudonyms, strict=True):
        by_person.setdefault(original, set()).add(pseudonym)
    assert all(len(p) == 1 for p in by_person.values())  # HN001's two rows: one pseudonym
    assert len({next(iter(p)) for p in by_person.values()}) == 20  # never shared
    assert not set(ids) & set(pseudonyms)
    assert result["masking"]["patient_id"] == {"method": "hmac", "length": 32}
    assert lg["pseudonym"]["method"] == "HMAC-SHA-256"


def test_person_suppression_when_no_event_may_go(custodian, analyst):
    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    config = deidentify.deid_config(assessment).replace(event_suppression_limit=0.0)
    deidentify.deid_config_save(assessment=assessment, config=config)
    search = searched(assessment, analyst)
    # No event may go: P20 is removed whole (1 person ≤ the person budget of 1) — less
    # loss than code at * for all.
    assert search["event_budget"] == 0
    assert search["levels"]["code"] == 0
    assert search["solution"]["suppressed_persons"] == 1
    assert search["solution"]["events_of_suppressed_persons"] == 2
    result, released = applied(assessment, analyst)
    # 29 rows, 19 persons; P1–P10 {A} 10, P11–P19 {B} 9 → max 1/9, average 2/19.
    assert released.height == 29
    lg = result["longitudinal"]
    assert (lg["persons_out"], lg["suppressed"]["persons"]) == (19, 1)
    assert lg["suppressed"]["events_of_suppressed_persons"] == 2
    assert lg["risk_after"]["average_risk"] == pytest.approx(2 / 19)
    assert lg["risk_after"]["max_risk"] == pytest.approx(1 / 9)


# HN000 holds Z alone, HN001…HN010 A twice, HN011…HN018 B, HN019 B and Y: 31 events, 20
# persons, all (F, 1970). Event limit 7 % → 2 events; person limit 5 % → 1 person.
EMPTIED = "patient_id,sex,birth_year,code\nHN000,F,1970,Z\n" + "".join(
    f"HN{i:03d},F,1970,{code}\n"
    for i, codes in [
        *((i, "AA") for i in range(1, 11)),
        *((i, "B") for i in range(11, 19)),
        (19, "BY"),
    ]
    for code in codes
)


def test_a_person_whose_every_event_is_suppressed_is_a_suppressed_person(custodian, analyst):
    assessment = prepared(custodian, analyst, EMPTIED, "code", "1")
    hierarchy_set(assessment=assessment, column="code", kind=HierarchySpec.Kind.SUPPRESS, params={})
    config = deidentify.deid_config(assessment).replace(event_suppression_limit=0.07)
    deidentify.deid_config_save(assessment=assessment, config=config)
    search = searched(assessment, analyst)
    # At p = 1 HN000's {Z} and HN019's {Y} are alone. In id order HN000 loses Z, then
    # HN019 loses Y (the two events allowed); HN000 has no row left, so it is suppressed
    # (the one person allowed), its one event counted once. With one event allowed HN019
    # would go too (2 persons), with none both: the full budgets are needed.
    assert search["levels"]["code"] == 0
    solution = search["solution"]
    assert (solution["suppressed_events"], solution["suppressed_persons"]) == (2, 1)
    assert (solution["events_of_suppressed_persons"], solution["suppressed_rows"]) == (0, 2)
    # HN001–HN010 {A} 10, HN011–HN019 {B} 9: smallest 9, max 1/9, average 2/19.
    assert (solution["min_class_size"], solution["max_risk"]) == (9, pytest.approx(1 / 9))
    assert solution["average_risk"] == pytest.approx(2 / 19)
    result, released = applied(assessment, analyst)
    assert released.height == 29
    assert not {"Z", "Y"} & set(released.get_column("code").to_list())
    lg = result["longitudinal"]
    assert (lg["persons_out"], lg["events_out"]) == (19, 29)
    assert lg["suppressed"] == {
        "persons": 1,
        "events_of_suppressed_persons": 0,
        "events": 2,
        "persons_every_event_suppressed": 1,
        "counting": "events_counted_once",
    }
    assert (result["rows_out"], result["suppressed_rows"]) == (29, 2)
    # the release measured again has the search's figures
    after = lg["risk_after"]
    assert (after["persons"], after["min_class_size"]) == (19, 9)
    assert after["max_risk"] == pytest.approx(1 / 9)
    assert after["average_risk"] == pytest.approx(2 / 19)


def test_what_cannot_work_per_person_is_refused(custodian, analyst):
    assessment = prepared(custodian, analyst, SUPPRESSION, "code", "1")
    config = deidentify.deid_config(assessment).replace(metric="entropy")
    deidentify.deid_config_save(assessment=assessment, config=config)
    with pytest.raises(ApplicationError, match="'entropy' metric") as caught:
        deidentify.assessment_start_search(assessment=assessment, user=analyst)
    assert caught.value.status == 409
    assessment.refresh_from_db()
    assert assessment.search_job is None


def test_the_event_limit_is_part_of_the_typed_configuration():
    from apps.assessments.configuration import DeidConfig, parse

    config = parse({"event_suppression_limit": 0.02})
    assert config.event_suppression_limit == 0.02
    assert DeidConfig.from_json(config.to_json()) == config
    assert DeidConfig.from_json({}).event_suppression_limit == 0.05  # stored before it existed
    assert config.search_settings() != DeidConfig().search_settings()
    with pytest.raises(ApplicationError, match="event suppression limit"):
        parse({"event_suppression_limit": 1.5})


def test_steps_8_and_9_review_and_report_in_persons(custodian, analyst, reviewer, client_for):
    from django.urls import reverse

    from apps.reports.content import report_html
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit

    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    searched(assessment, analyst)
    result, _ = applied(assessment, analyst)
    client = client_for(analyst)

    def step(slug: str) -> str:
        url = reverse(
            "assessment-step",
            kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": slug},
        )
        response = client.get(url)
        assert response.status_code == 200
        return response.content.decode()

    body = step("deidentify")
    assert 'data-testid="persons-suppressed">0<' in body
    assert 'data-testid="events-suppressed">1<' in body
    assert 'data-testid="min-person-count">9<' in body
    assert 'data-testid="applied-persons"' in body
    # each alternative in persons and events: code at * (none; all 20 persons alike), the
    # optimum (one event)
    assert "0 persons and 0 events suppressed; smallest per-person count 20" in body
    assert "0 persons and 1 event suppressed; smallest per-person count 9" in body
    assert "Rows (events) removed" in body
    assert "20 of 20 persons with 30 of 31 events" in body
    step("utility")
    services.assessment_accept_utility(
        assessment=assessment, user=analyst, note="The codes are kept; one event was removed."
    )
    # The altered variables (the person key, pseudonymized) each need a justification.
    assert [r["column"] for r in altered_variables(assessment.apply_result)] == ["patient_id"]
    justify_all(assessment)
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready for review.",
        intruder_waiver="No motivated-intruder test: this is a synthetic test release.",
    )
    review = client_for(reviewer).get(f"/o/{custodian.slug}/assessments/{assessment.id}/review/")
    assert review.status_code == 200
    assert 'data-testid="report-person-release"' in review.content.decode()
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets 0.5."
    )
    # The decision froze the written files by their digests, as for a single table.
    assert decision.digests["release_parquet"] == result["sha256"]["parquet"]
    assert decision.figures["passes"] is True
    html = report_html(assessment=assessment, decision=decision)
    assert 'data-testid="report-person-release"' in html
    assert 'data-testid="report-persons-in">20<' in html
    assert 'data-testid="report-persons-out">20<' in html
    assert "Events suppressed to protect their person" in html
    assert "top-coded at 2" in html
    assert "HMAC-SHA-256" in html
    assert "HN001" not in html


def test_the_record_level_precheck_is_not_run_on_persons(custodian, analyst, client_for):
    from apps.assessments.precheck import assessment_precheck

    assessment = prepared(custodian, analyst, SUPPRESSION, "code", "1")
    with pytest.raises(ApplicationError, match="in persons, not records"):
        assessment_precheck(assessment)
    body = (
        client_for(analyst)
        .get(f"/o/{custodian.slug}/assessments/{assessment.id}/steps/deidentify/")
        .content.decode()
    )
    assert 'data-testid="precheck-loading"' not in body
    assert 'data-testid="technique-form"' not in body
    assert 'data-testid="event-suppression-limit"' in body


def test_the_api_searches_chooses_and_writes_in_persons(custodian, analyst, client_for):
    from apps.jobs.claiming import job_execute

    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    client = client_for(analyst)
    base = f"/api/v1/assessments/{assessment.id}/"
    started = client.post(base + "search/", "{}", content_type="application/json")
    assert started.status_code == 202, started.json()
    assert job_execute(job_id=started.json()["id"])
    search = client.get(base + "search/").json()["result"]
    assert search["unit"] == "person"
    assert [(a["suppressed_persons"], a["suppressed_events"]) for a in search["pareto"]] == [
        (0, 0),
        (0, 1),
    ]
    # the alternative with code at * (no suppression) chosen, then written
    chosen = client.post(
        base + "choose/",
        json.dumps({"levels": {"sex": 0, "birth_year": 0, "code": 1}}),
        content_type="application/json",
    )
    assert chosen.status_code == 200, chosen.json()
    started = client.post(base + "apply/", "{}", content_type="application/json")
    assert started.status_code == 202, started.json()
    assert job_execute(job_id=started.json()["id"])
    result = client.get(base + "apply/").json()["result"]
    lg = result["longitudinal"]
    assert (lg["persons_out"], lg["events_out"]) == (20, 31)
    # every code is *: each person's set is {*} → all 20 alike at any power
    assert lg["risk_after"]["min_class_size"] == 20
    assert lg["risk_after"]["max_risk"] == pytest.approx(0.05)
    assert result["passes"] is True


def test_person_pseudonyms_follow_the_pseudonymisation_domain(custodian, analyst, admin_user):
    """Two person-keyed releases in one named domain give a person the same pseudonym
    (the domain's key); a release without a domain gives another (its own new key)."""
    domain = pseudonym_domain_create(
        organization=custodian, user=admin_user, name="Visits programme", description=""
    )

    def released_ids(in_domain: bool) -> tuple[dict, list[str]]:  # type: ignore[type-arg]
        assessment = prepared(custodian, analyst, SUPPRESSION, "code", "1")
        if in_domain:
            assessment_set_pseudonym_domain(
                assessment=assessment, user=analyst, domain_id=domain.id
            )
            assessment.refresh_from_db()
        hierarchy_set(
            assessment=assessment, column="code", kind=HierarchySpec.Kind.SUPPRESS, params={}
        )
        searched(assessment, analyst)
        result, released = applied(assessment, analyst)
        return result, released.get_column("patient_id").to_list()

    first, ids_first = released_ids(True)
    second, ids_second = released_ids(True)
    _, ids_own = released_ids(False)
    assert ids_first == ids_second
    key = base64.b64decode(
        crypto.open_text(domain.key_sealed, purpose=domain_key_purpose(domain.id))
    )
    kept = [
        i
        for i, line in zip(
            original_ids(SUPPRESSION), SUPPRESSION.strip().splitlines()[1:], strict=True
        )
        if not line.endswith(",Z")
    ]
    assert ids_first == [hmac_pseudonym(i, key, 32) for i in kept]
    assert not set(ids_own) & set(ids_first)
    assert first["longitudinal"]["pseudonym"]["domain"]["name"] == "Visits programme"
    assert first["pseudonym_domain"]["name"] == "Visits programme"
