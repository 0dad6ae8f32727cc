"""Attack tests after apply (issue 28) on a hand-made register whose linkage success is known:
200 people, every one unique on (age, sex) — ages 0-99, each sex once.

* Released as it is, an intruder holding a person's age and sex links them to their own
  record every time (attack 100 %), never a held-back person (control 0 %: their record is
  out), and a random pick is right 1 time in 200 (baseline).
* Generalized to ten-year bands (classes of exactly 10, k = 10), the pick is right 1 time in
  10: success 10 %, at most 1/10 above the baseline, within the data-risk target of 0.1.
"""

from __future__ import annotations

import uuid

import polars as pl
import pytest
from django.urls import reverse

from apps.assessments import deidentify, release_apply, services
from apps.assessments.attack_tests import attack_rows, release_attacks, seed_of
from apps.assessments.hierarchies import hierarchies_ensure, hierarchy_set
from apps.assessments.selectors import quasi_identifiers
from apps.classification.services import variables_accept_suggestions
from tests.assessments.conftest import LOW_ANSWERS, _run, uploaded_register

UNIQUE = pl.DataFrame(
    {
        "email": [f"p{i}@example.org" for i in range(200)],
        "age": [str(a) for a in range(100)] * 2,
        "sex": ["F"] * 100 + ["M"] * 100,
        "diagnosis": ["J45 Asthma", "E11 Diabetes"] * 100,
    }
)


@pytest.fixture
def register(custodian, analyst):  # type: ignore[no-untyped-def]
    dataset = uploaded_register(custodian, analyst, UNIQUE)
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    assert quasi_identifiers(assessment) == ["age", "sex"]
    services.assessment_set_release(assessment=assessment, release_model="public")
    # Low invasion under the IPC 2016 profile: threshold 0.1; public: context 1 → k = 10.
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    hierarchy_set(assessment=assessment, column="age", kind="interval", params={"widths": [10]})
    return assessment


def _linkability(attacks):  # type: ignore[no-untyped-def]
    return next(
        r
        for r in attacks["results"]
        if (r["criterion"], r["variant"]) == ("linkability", "exact match")
    )


def test_unique_records_released_as_they_are_are_all_linked(register):
    specs = {s.column: s for s in hierarchies_ensure(assessment=register)}
    released = UNIQUE.drop("email").sample(fraction=1.0, shuffle=True, seed=3)
    attacks = release_attacks(
        UNIQUE,
        released.lazy(),
        quasi=["age", "sex"],
        hierarchies=specs,
        levels={"age": 0, "sex": 0},
        sensitive=["diagnosis"],
        known_columns=["age", "sex"],
        masked=["email"],
        data_risk_target=0.1,
        seed_key=uuid.UUID(int=7),
    )
    assert attacks["status"] == "done" and attacks["targets"] == 100  # half the rows each
    linked = _linkability(attacks)
    assert (linked["attack"]["rate"], linked["control"]["rate"]) == (1.0, 0.0)
    assert linked["baseline"]["rate"] == pytest.approx(1 / 200)
    row = next(r for r in attack_rows(attacks) if r["attack"] == "Linkability (exact match)")
    assert row["verdict"]["within"] is False
    assert row["verdict"]["text"].startswith(
        "The intruder links the person to their own record in 100.0 % of the attacks, +99.5 "
        "points against a naive intruder (baseline): more than the data-risk target of 10.0 %"
    )


def test_generalized_to_k10_the_apply_job_links_one_in_ten(register, analyst, client_for):
    _run(services.assessment_start_risk(assessment=register, user=analyst))
    _run(deidentify.assessment_start_search(assessment=register, user=analyst))
    register.refresh_from_db()
    deidentify.assessment_choose_solution(assessment=register, levels={"age": 1, "sex": 0})
    _run(release_apply.assessment_start_apply(assessment=register, user=analyst))
    register.refresh_from_db()
    applied = register.apply_result
    assert (applied["rows_out"], applied["passes"]) == (200, True)  # 20 classes of exactly 10
    attacks = applied["attacks"]
    assert attacks["status"] == "done"
    assert (attacks["seed"], attacks["attacked_on"]) == (
        seed_of(f"{register.id}:{[('age', 1), ('sex', 0)]}"),
        ["age", "sex"],
    )
    linked = _linkability(attacks)
    attack, control, baseline = (linked[k]["rate"] for k in ("attack", "control", "baseline"))
    # Each person is one of 10 identical records: the intruder's pick is theirs 1 time in 10.
    assert attack == pytest.approx(0.1) and control == 0.0
    assert baseline == pytest.approx(1 / 200)
    assert attack <= 0.1 + baseline
    singled = next(r for r in attacks["results"] if r["criterion"] == "singling_out")
    assert singled["attack"]["rate"] == 0.0  # no class of one left
    rows = attack_rows(attacks)
    assert [r["attack"] for r in rows] == [
        "Singling out (exact match)",
        "Linkability (exact match)",
        "Linkability (nearest match)",
        "Inference of diagnosis",
    ]
    assert rows[1]["verdict"]["within"] is True
    page = client_for(analyst).get(
        reverse(
            "assessment-step",
            kwargs={
                "org": register.organization.slug,
                "assessment_id": register.id,
                "slug": "utility",
            },
        )
    )
    html = page.content.decode()
    assert html.count('data-testid="attack-row"') == 4
    assert f'<td class="num">{attacks["seed"]}</td>' in html
    assert "10.0% <small>(" in html and attacks["method_version"] in html


def test_an_adversary_given_no_released_column_is_not_tested(register):
    specs = {s.column: s for s in hierarchies_ensure(assessment=register)}
    attacks = release_attacks(
        UNIQUE,
        UNIQUE.drop("email").lazy(),
        quasi=["age", "sex"],
        hierarchies=specs,
        levels={"age": 1, "sex": 0},
        sensitive=["diagnosis"],
        known_columns=["email"],
        masked=["email"],
        data_risk_target=0.1,
        seed_key=uuid.UUID(int=7),
    )
    assert attacks["status"] == "not_run" and attacks["known_not_released"] == ["email"]
    assert attack_rows(attacks) == []
