"""Attack tests on a person release after apply (issues 25 and 28), counted in persons, in
Step 8, the review, the report and the recipient summary's JSON twin.

The data (persons_factory.SUPPRESSION): 20 persons, all (F, 1970); HN001…HN010
hold code A (twice each: 20 rows, 10 persons), HN011…HN019 code B once, HN020 codes A and
Z. At p = 1 and k = 2 the release keeps the codes and suppresses HN020's Z visit. The
adversary knows the person-level values and one code. By hand, per person:

* HN001…HN010 know {A}: 11 released persons hold A (HN001…HN010, HN020): linked 1/11;
* HN011…HN019 know {B}: 9 persons: 1/9;
* HN020 knows {A} (1/11) or {Z}, which no released person holds: no exact match (0);
  the nearest match is all 20 persons of (F, 1970), none holding Z (1/20). Exact
  (1/11 + 0)/2, nearest (1/11 + 1/20)/2.

No known code isolates a person (singling out 0), and a held-back person, their own
pseudonym taken out, is never linked (control 0). A released person picked at random is
right 1 time in 20 (baseline). Counted in rows, HN001's two visits would be two targets.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from apps.assessments.attack_tests import seed_of
from tests.assessments.persons_factory import (
    INTERVALS,
    SUPPRESSION,
    applied,
    persons_ready,
    searched,
    tc4_ready,
)

EXACT_BY_HAND = [1 / 11] * 10 + [1 / 9] * 9 + [(1 / 11 + 0) / 2]
NEAREST_BY_HAND = [1 / 11] * 10 + [1 / 9] * 9 + [(1 / 11 + 1 / 20) / 2]


def _result(attacks, criterion, variant):  # type: ignore[no-untyped-def]
    return next(
        r for r in attacks["results"] if (r["criterion"], r["variant"]) == (criterion, variant)
    )


def test_the_apply_job_attacks_a_person_release_in_persons(
    custodian, analyst, reviewer, client_for
):
    from django.urls import reverse

    from apps.assessments import services
    from apps.reports.content import report_html
    from apps.reports.summary import summary_data
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit
    from tests.justify import justify_all

    assessment = persons_ready(custodian, analyst, SUPPRESSION, "code", "1")
    searched(assessment, analyst)
    result, released = applied(assessment, analyst)
    assert released.height == 30  # rows: 31 visits, Z suppressed

    attacks = result["attacks"]
    assert attacks["status"] == "done", attacks.get("reason")
    assert attacks["unit"] == "person" and attacks["release_kind"] == "persons"
    assert attacks["power"] == "1"
    assert attacks["attacked_on"] == ["sex", "birth_year", "code"]
    # 20 persons: 10 attacked and 10 held back, never the 30 rows
    assert (attacks["original_persons"], attacks["released_persons"]) == (20, 20)
    assert attacks["targets"] == 10
    # the documented draw: a permutation of the persons (id order) under the release's seed
    seed = seed_of(f"{assessment.id}:{sorted(result['levels'].items())}")
    assert attacks["seed"] == seed
    order = np.random.default_rng(seed).permutation(20)
    attacked = np.sort(order[:10])
    exact = _result(attacks, "linkability", "exact match")
    nearest = _result(attacks, "linkability", "nearest match")
    single = _result(attacks, "singling_out", "exact match")
    assert exact["attacks"] == 10
    assert exact["attack"]["rate"] == pytest.approx(np.mean([EXACT_BY_HAND[i] for i in attacked]))
    assert nearest["attack"]["rate"] == pytest.approx(
        np.mean([NEAREST_BY_HAND[i] for i in attacked])
    )
    assert exact["control"]["rate"] == 0.0 and nearest["control"]["rate"] == 0.0
    assert exact["baseline"]["rate"] == pytest.approx(1 / 20)
    assert single["attack"]["rate"] == 0.0 and single["control"]["rate"] == 0.0

    def page(url: str) -> str:
        response = client_for(analyst).get(url)
        assert response.status_code == 200
        return response.content.decode()

    step8 = page(
        reverse(
            "assessment-step",
            kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": "utility"},
        )
    )
    assert 'data-testid="attacks-in-persons"' in step8
    assert step8.count('data-testid="attack-row"') == 3
    assert "10 persons attacked and as many held back (20 persons released)" in step8
    assert f"{exact['attack']['rate'] * 100:.1f} %" in step8
    assert "links the person to their own pseudonym" in step8

    services.assessment_accept_utility(
        assessment=assessment, user=analyst, note="The codes are kept; one event was removed."
    )
    justify_all(assessment)
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready for review.",
        intruder_waiver="No motivated-intruder test: this is a synthetic test release.",
    )
    review = client_for(reviewer).get(f"/o/{custodian.slug}/assessments/{assessment.id}/review/")
    assert 'data-testid="attacks-in-persons"' in review.content.decode()
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets 0.5."
    )
    html = report_html(assessment=assessment, decision=decision)
    assert 'data-testid="attacks-in-persons"' in html
    assert html.count('data-testid="attack-row"') == 3
    twin = summary_data(assessment=assessment, decision=decision)["attack_tests"]
    assert [(r["attack"], r["unit"], r["attacks"]) for r in twin] == [
        ("Singling out (exact match)", "person", 10),
        ("Linkability (exact match)", "person", 10),
        ("Linkability (nearest match)", "person", 10),
    ]
    assert twin[1]["attack_rate"]["rate"] == pytest.approx(exact["attack"]["rate"])


def test_linked_tables_a_person_without_events_is_one_target(custodian, analyst):
    from apps.assessments import release_apply
    from tests.assessments.conftest import _run
    from tests.assessments.test_linked_tables_release import _prepared

    # Persons 1…5 (person 4 without events), released at sex kept, birth year and
    # diagnosis at *: (F) {1, 4, 5}, (M) {2, 3}; 1, 2, 3 and 5 hold the one code "*".
    # At p = 1: 1 and 5 know {*} → 1 of 2 in F; 2 and 3 → 1 of 2 in M; person 4 knows no
    # event (the empty set) → the three of F hold it: 1/3.
    assessment = _prepared(custodian, analyst)
    _run(deidentify_search(assessment, analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    result = assessment.apply_result
    assert result["levels"] == {"sex": 0, "birth_year": 1, "diagnosis": 1}
    attacks = result["attacks"]
    assert attacks["status"] == "done", attacks.get("reason")
    assert (attacks["original_persons"], attacks["released_persons"]) == (5, 5)
    assert attacks["released_events"] == 7 and attacks["targets"] == 2
    by_hand = [1 / 2, 1 / 2, 1 / 2, 1 / 3, 1 / 2]
    order = np.random.default_rng(attacks["seed"]).permutation(5)
    exact = _result(attacks, "linkability", "exact match")
    assert exact["attack"]["rate"] == pytest.approx(
        np.mean([by_hand[i] for i in np.sort(order[:2])])
    )
    assert exact["control"]["rate"] == 0.0


def deidentify_search(assessment, analyst):  # type: ignore[no-untyped-def]
    from apps.assessments import deidentify

    return deidentify.assessment_start_search(assessment=assessment, user=analyst)


def test_a_release_k_anonymous_in_persons_is_linked_one_time_in_k(custodian, analyst):

    # TC4 at p = 2, diagnoses at their 3-character category: HN1, HN2 hold {I21, E11},
    # HN3, HN4 {I25, E11}; each person knows both codes → 2 persons each: linked 1/2
    # whoever is drawn, singled out never. Held back, the other of the pair is alone:
    # singled out every time, linked never (own pseudonym taken out).
    assessment = tc4_ready(custodian, analyst)
    searched(assessment, analyst)
    result, _ = applied(assessment, analyst)
    assert result["longitudinal"]["risk_after"]["min_class_size"] == 2
    attacks = result["attacks"]
    assert attacks["power"] == "2" and attacks["targets"] == 2
    for variant in ("exact match", "nearest match"):
        link = _result(attacks, "linkability", variant)
        assert (link["attack"]["rate"], link["control"]["rate"]) == (0.5, 0.0)
        assert link["baseline"]["rate"] == pytest.approx(1 / 4)
    single = _result(attacks, "singling_out", "exact match")
    assert (single["attack"]["rate"], single["control"]["rate"]) == (0.0, 1.0)


# --------------------------------------------------------------------------- derived facts
# The adversary also knows what the release reveals and the risk counts (LONGITUDINAL.md
# §2.6, §2.7): the number of a pseudonym's rows (the event count), the anchor of the
# anchored mode, and, with shifted dates, what the shift leaves (intervals, the anchor to
# the shift's granularity). Every person below is (F, 1960 or 1970) with one code or date.


def _drawn(attacks, by_hand):  # type: ignore[no-untyped-def]
    """The mean of the hand values over the persons the documented draw attacks."""
    n = attacks["original_persons"]
    order = np.random.default_rng(attacks["seed"]).permutation(n)
    a = attacks["targets"]
    return np.mean([by_hand[i] for i in np.sort(order[:a])]), np.mean(
        [by_hand[i] for i in np.sort(order[a : 2 * a])]
    )


# Six persons alike on sex, birth year and code A; 1, 1, 2, 2, 3 and 4 visits.
COUNTS = "patient_id,sex,birth_year,code\n" + "".join(
    f"HN{i},F,1970,A\n"
    for i, visits in enumerate((1, 1, 2, 2, 3, 4), start=1)
    for _ in range(visits)
)


def test_the_event_count_known_links_persons_alike_on_the_named_columns(custodian, analyst):
    from django.template.loader import render_to_string

    from apps.assessments.attack_tests import attack_rows

    # Top-coded at 3: the counts read 1, 1, 2, 2, 3+, 3+ ("3 or more": 3 and 4 alike) →
    # three classes of two persons, k = 2 at every level 0 (no suppression). Without the
    # count every person is alike: linked 1/6. With it: 1/2 whoever is drawn; held back,
    # the other of the pair is alone: singled out every time (without it: 5 left, never).
    assessment = persons_ready(
        custodian, analyst, COUNTS, "code", "1", {"event_count": {"enabled": True, "top": 3}}
    )
    searched(assessment, analyst)
    result, released = applied(assessment, analyst)
    assert released.height == 13
    assert result["longitudinal"]["risk_after"]["min_class_size"] == 2
    attacks = result["attacks"]
    assert attacks["status"] == "done", attacks.get("reason")
    assert attacks["targets"] == 3
    for variant in ("exact match", "nearest match"):
        link = _result(attacks, "linkability", variant)
        assert (link["attack"]["rate"], link["control"]["rate"]) == (0.5, 0.0)
        assert link["baseline"]["rate"] == pytest.approx(1 / 6)
    single = _result(attacks, "singling_out", "exact match")
    assert (single["attack"]["rate"], single["control"]["rate"]) == (0.0, 1.0)
    assert attacks["derived"] == [
        {"fact": "event_count", "level": "exact", "top_code": 3, "columns": []}
    ]
    assert attacks["attacked_on"] == ["sex", "birth_year", "code"]
    html = render_to_string(
        "assessments/_attack_tests.html", {"info": attacks, "rows": attack_rows(attacks)}
    )
    assert "the number of events (exact, &quot;3 or more&quot; beyond the top-code)" in html


# Seven persons, two visits ten days apart each: first dates in 2020-01 (HN1, HN2),
# 2021-03 (HN3…HN5) and 2022-07 (HN6, HN7).
ANCHORS = "patient_id,sex,birth_year,admission\n" + "".join(
    f"HN{i},F,1960,{day}\nHN{i},F,1960,{date.fromisoformat(day) + timedelta(days=10)}\n"
    for i, day in enumerate(
        (
            "2020-01-05",
            "2020-01-20",
            "2021-03-02",
            "2021-03-15",
            "2021-03-28",
            "2022-07-01",
            "2022-07-15",
        ),
        start=1,
    )
)


def test_the_anchor_known_singles_out_persons_in_an_anchored_release(custodian, analyst):

    # Anchored: the intervals are 0 and 10 days for all; anchors by day are unique (fail), by month in
    # classes of 2, 3, 2 (pass): the release writes the anchor by month, intervals in days.
    # Without the anchor all seven are alike (linked 1/7, never singled out). With it:
    # linked 1/2 (HN1, HN2, HN6, HN7) or 1/3 (HN3…HN5); held back, a pair's other person
    # is alone (singled out), a triple leaves two (not).
    assessment = persons_ready(
        custodian,
        analyst,
        ANCHORS,
        "admission",
        "1",
        {"dates": {"columns": ["admission"], "mode": "anchored"}},
    )
    search = searched(assessment, analyst)
    assert search["levels"]["anchor"] == 1 and search["levels"]["admission"] == 0
    result, released = applied(assessment, analyst)
    months = ["2020-01", "2020-01", "2021-03", "2021-03", "2021-03", "2022-07", "2022-07"]
    assert released.get_column("anchor").to_list() == [m for m in months for _ in range(2)]
    attacks = result["attacks"]
    assert attacks["status"] == "done", attacks.get("reason")
    linked = [1 / 2, 1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2]
    singled = [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    link = _result(attacks, "linkability", "exact match")
    assert link["attack"]["rate"] == pytest.approx(_drawn(attacks, linked)[0])
    single = _result(attacks, "singling_out", "exact match")
    assert single["attack"]["rate"] == 0.0
    assert single["control"]["rate"] == pytest.approx(_drawn(attacks, singled)[1])
    assert attacks["derived"] == [{"fact": "anchor", "level": "month", "columns": ["admission"]}]


def test_shifted_dates_attacked_on_what_the_shift_leaves(custodian, analyst):
    import json

    from django.template.loader import render_to_string

    from apps.assessments import release_secrets
    from apps.assessments.attack_tests import attack_rows

    # p = 2, dates shifted by ±30 days: the anchor is known to the year (2020 for all),
    # the intervals to the day. HN1…HN4 know both their events: {0, 30} or {0, 14} is
    # held by four persons → linked 1/4. HN5, HN6 know {0, 14} (4 persons), {0, 30} (4)
    # or {14, 30} (HN5, HN6) → (1/4 + 1/4 + 1/2) / 3 = 1/3. Held back, HN5's {14, 30}
    # leaves HN6 alone: singled out 1/3; the others never. Before, the shifted dates
    # were left out: everyone alike, linked 1/6.
    assessment = persons_ready(
        custodian,
        analyst,
        INTERVALS,
        "admission",
        "2",
        {"dates": {"columns": ["admission"], "mode": "anchored", "shift_days": 30}},
    )
    search = searched(assessment, analyst)
    assert search["levels"]["anchor"] == 2 and search["levels"]["admission"] == 0
    result, _ = applied(assessment, analyst)
    assert result["longitudinal"]["risk_after"]["min_class_size"] == 2
    attacks = result["attacks"]
    assert attacks["status"] == "done", attacks.get("reason")
    assert attacks["attacked_on"] == ["sex", "birth_year", "admission"]
    linked = [1 / 4] * 4 + [1 / 3] * 2
    singled = [0.0] * 4 + [1 / 3] * 2
    for variant in ("exact match", "nearest match"):
        link = _result(attacks, "linkability", variant)
        assert link["attack"]["rate"] == pytest.approx(_drawn(attacks, linked)[0])
    single = _result(attacks, "singling_out", "exact match")
    assert single["attack"]["rate"] == 0.0
    assert single["control"]["rate"] == pytest.approx(_drawn(attacks, singled)[1])
    assert attacks["derived"] == [
        {"fact": "anchor", "level": "year", "columns": ["admission"]},
        {"fact": "intervals", "level": "days", "columns": ["admission"]},
    ]
    # the shift's key and offsets are nowhere in the attacks' result
    secrets = json.loads(release_secrets.release_secrets_read(assessment=assessment))
    stored = json.dumps(attacks)
    assert secrets["date_shift"]["key"] not in stored and "offset" not in stored
    html = render_to_string(
        "assessments/_attack_tests.html", {"info": attacks, "rows": attack_rows(attacks)}
    )
    assert "the first event date (year; from admission)" in html
    assert "the intervals between the person&#x27;s events (days; what the date shift" in html
    assert secrets["date_shift"]["key"] not in html
