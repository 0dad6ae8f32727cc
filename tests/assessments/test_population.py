"""Step 4 (and 7, 9) with a population: the setting, the job's figures, the pages, the API.

The people fixture has 10 records in classes of 3, 2, 4 and 1 on (age, sex) (conftest.py).
"""

from __future__ import annotations

import json
import math

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.urls import reverse

from apps.assessments import population, services
from apps.assessments.models import AssessmentStatus
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import LOW_ANSWERS
from tests.assessments.test_pages import complete


def zayatz_people(population_size: int) -> float:
    """Zayatz by hand for classes 1, 2, 3, 4 (n = 10, u = 4, c1 = 1) from N people:
    P_k = k·(n/N)·Π_{j<k−1} (N−n−j)/(N−1−j); uniques = c1 · (P_1/u) / (Σ P_k/u) / (n/N)."""
    n, big = 10, population_size
    chance = [
        k * (n / big) * math.prod((big - n - j) / (big - 1 - j) for j in range(k - 1))
        for k in (1, 2, 3, 4)
    ]
    return 1 * (chance[0] / sum(chance)) / (n / big)


def url(assessment, slug="data-risk"):
    return reverse(
        "assessment-step",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id, "slug": slug},
    )


def measure(assessment, analyst):
    job = services.assessment_start_risk(assessment=assessment, user=analyst)
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assessment.refresh_from_db()
    return assessment.risk_result


@pytest.fixture
def prepared(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


# --------------------------------------------------------------------------- the setting


def test_set_population_validates_marks_stale_and_audits(prepared, analyst):
    assessment = prepared
    assert population.population_setting(assessment) is None
    measure(assessment, analyst)
    stale = population.assessment_set_population(
        assessment=assessment, region="yukon", user=analyst
    )
    assert stale == ["data-risk"] and assessment.population == {"region": "yukon"}
    assert assessment.step_state["data-risk"]["stale"] is True
    setting = population.population_setting(assessment)
    assert setting is not None and setting["size"] == 40_232
    assert setting["region"]["name"] == "Yukon" and setting["region"]["year"] == 2021
    event = AuditEvent.objects.filter(action="assessment.population").latest("sequence")
    assert event.details["population"] == {"region": "yukon"}
    # the same choice again changes nothing
    assert population.assessment_set_population(assessment=assessment, region="yukon") == []
    population.assessment_set_population(assessment=assessment, size=500)
    assert population.population_setting(assessment) == {"size": 500, "region": None}
    population.assessment_set_population(assessment=assessment)
    assert assessment.population == {} and population.population_setting(assessment) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"region": "atlantis"}, "unknown population region 'atlantis'"),
        ({"size": 9}, "smaller than the data set's 10 records"),
        ({"size": 0}, "at least 1"),
    ],
)
def test_bad_population_is_refused(prepared, kwargs, message):
    with pytest.raises(ApplicationError, match=message):
        population.assessment_set_population(assessment=prepared, **kwargs)
    assert prepared.population == {}


def test_frozen_assessment_refuses_a_population(prepared):
    # The status as stored decides (not the copy in memory): the service reads it locked.
    type(prepared).objects.filter(id=prepared.id).update(status=AssessmentStatus.SUBMITTED)
    with pytest.raises(ApplicationError, match="frozen"):
        population.assessment_set_population(assessment=prepared, size=1000)


# --------------------------------------------------------------------------- the job


def test_without_population_the_attacker_models_only(prepared, analyst):
    result = measure(prepared, analyst)
    assert result["population"] is None
    attackers = result["attacker_models"]
    # target = threshold 0.1 / context 1: every class is smaller than 10, all records at risk
    assert attackers["threshold"] == pytest.approx(0.1)
    assert attackers["prosecutor"] == {
        "highest": 1.0,
        "records_at_risk": 1.0,
        "success_rate": pytest.approx(0.4),  # 4 classes / 10 records
    }
    assert attackers["journalist"] == attackers["prosecutor"]
    assert attackers["marketer"] == {"success_rate": pytest.approx(0.4)}


def test_job_estimates_population_uniques_and_the_curve(prepared, analyst):
    population.assessment_set_population(assessment=prepared, size=1000, user=analyst)
    result = measure(prepared, analyst)
    pop = result["population"]
    assert pop["size"] == 1000 and pop["sampling_fraction"] == 0.01 and pop["region"] is None
    assert pop["sample_uniques"] == 1
    # Pitman finds no solution here (ARX neither): Dankar's rule falls back on Zayatz
    assert pop["pitman"] == {"available": False, "fraction": None, "uniques": None}
    assert pop["zayatz"]["uniques"] == pytest.approx(zayatz_people(1000), rel=1e-12)
    assert pop["zayatz"]["uniques"] == pytest.approx(10.182365100752738, rel=1e-9)  # ARX
    assert pop["dankar"]["model"] == "zayatz"
    assert pop["dankar"]["fraction"] == pytest.approx(zayatz_people(1000) / 1000)
    curve = pop["curve"]
    fractions = [p["sampling_fraction"] for p in curve]
    assert fractions == sorted(fractions) and len(curve) == 15  # 0.01 is one of ARX's points
    (own,) = [p for p in curve if p["release"]]
    assert own["sampling_fraction"] == 0.01 and own["zayatz"] == pop["zayatz"]["fraction"]
    assert result["attacker_models"]["prosecutor"]["success_rate"] == pytest.approx(0.4)
    assert prepared.step_state["data-risk"]["stale"] is False  # measured again: current


def test_release_figures_in_step_7(prepared, analyst):
    population.assessment_set_population(assessment=prepared, region="yukon")
    complete(prepared, analyst)
    figures = prepared.apply_result["release_population"]
    after = prepared.apply_result["risk_after"]
    rows, classes = after["rows"], after["equivalence_classes"]
    assert figures["population_setting"] == {"region": "yukon"}
    assert figures["population"]["size"] == 40_232
    assert figures["population"]["sampling_fraction"] == pytest.approx(rows / 40_232)
    assert figures["population"]["sample_uniques"] == after["uniques"]
    success = classes / rows if rows else 0.0
    assert figures["attacker_models"]["marketer"]["success_rate"] == pytest.approx(success)
    assert figures["attacker_models"]["threshold"] == pytest.approx(
        prepared.apply_result["data_risk_target"]
    )


# --------------------------------------------------------------------------- pages


def test_step_4_page_shows_attacker_models_and_population(client_for, prepared, analyst):
    client = client_for(analyst)
    page = client.get(url(prepared)).content.decode()
    assert 'data-testid="population-form"' in page and "Yukon — 40,232 (2021)" in page
    assert 'data-testid="no-population"' not in page  # nothing measured yet
    response = client.post(url(prepared), {"population_kind": "size", "population_size": "1000"})
    assert response.status_code == 302
    prepared.refresh_from_db()
    assert prepared.population == {"size": 1000}
    job_execute(job_id=str(prepared.risk_job_id))
    page = client.get(url(prepared)).content.decode()
    assert 'data-testid="attacker-models"' in page
    assert 'data-testid="prosecutor"' in page and "40.00%" in page  # success rate 4/10
    assert 'data-testid="population-uniqueness"' in page
    assert f"in a population of {intcomma(1000)}. Sampling fraction 1.0000%" in page
    zayatz = zayatz_people(1000)
    assert f"{zayatz / 1000 * 100:.4f}%" in page  # 1.0182%
    assert "not available (no solution found)" in page  # Pitman and SNB
    assert "Dankar&#x27;s rule picks it" in page or "Dankar's rule picks it" in page
    assert "Population uniques against the sampling fraction" in page and "<svg" in page
    assert "this release" in page


def test_step_4_page_without_population_keeps_the_ipc_default(client_for, prepared, analyst):
    measure(prepared, analyst)
    page = client_for(analyst).get(url(prepared)).content.decode()
    assert 'data-testid="attacker-models"' in page
    assert 'data-testid="no-population"' in page and "prosecutor" in page
    assert 'data-testid="population-uniqueness"' not in page


def test_step_4_bad_population_form(client_for, prepared, analyst):
    client = client_for(analyst)
    response = client.post(url(prepared), {"population_kind": "size", "population_size": ""})
    assert response.status_code == 400 and "Give the population size." in response.content.decode()
    response = client.post(url(prepared), {"population_kind": "size", "population_size": "3"})
    assert response.status_code == 302
    prepared.refresh_from_db()
    assert prepared.population == {} and prepared.risk_job_id is None
    followed = client.get(url(prepared)).content.decode()
    assert "smaller than the data set&#x27;s 10 records" in followed


def test_step_7_page_shows_the_release_figures(client_for, prepared, analyst):
    population.assessment_set_population(assessment=prepared, size=1000)
    complete(prepared, analyst)
    client = client_for(analyst)
    page = client.get(url(prepared, "deidentify")).content.decode()
    assert 'data-testid="release-population"' in page
    assert f"a population of {intcomma(1000)}" in page
    assert 'data-testid="release-population-changed"' not in page
    population.assessment_set_population(assessment=prepared, size=2000)
    page = client.get(url(prepared, "deidentify")).content.decode()
    assert 'data-testid="release-population-changed"' in page


# --------------------------------------------------------------------------- API


def test_api_sets_the_population_and_reports_it(client_for, prepared, analyst):
    api = client_for(analyst)
    path = f"/api/v1/assessments/{prepared.id}/risk/"
    body = {"population": {"region": "ontario"}}
    response = api.post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 202, response.json()
    assert job_execute(job_id=response.json()["id"])
    data = api.get(path).json()
    assert data["population"] == {"region": "ontario"}
    pop = data["result"]["population"]
    assert pop["size"] == 14_223_942 and pop["region"]["key"] == "ontario"
    assert pop["zayatz"]["uniques"] == pytest.approx(zayatz_people(14_223_942), rel=1e-9)
    bad = api.post(path, json.dumps({"population": {"size": 3}}), content_type="application/json")
    assert bad.status_code == 400 and "smaller than" in json.dumps(bad.json())


# --------------------------------------------------------------------------- Step 9 report


def test_report_carries_attacker_models_and_population(prepared, analyst, reviewer):
    from apps.reports.content import report_html
    from tests.reports.helpers import compute, decide

    population.assessment_set_population(assessment=prepared, region="ontario")
    decision = decide(compute(prepared, analyst), analyst, reviewer)
    prepared.refresh_from_db()
    html = report_html(assessment=prepared, decision=decision)
    assert 'data-testid="report-attacker-models"' in html
    assert html.count('data-testid="attacker-models"') == 2  # before, and for the release
    assert 'data-testid="report-population-before"' in html
    assert 'data-testid="report-population-after"' in html
    assert f"a population of {intcomma(14_223_942)} — Ontario: Statistics Canada, 2021" in html
    zayatz = prepared.risk_result["population"]["zayatz"]["fraction"]
    assert zayatz == pytest.approx(zayatz_people(14_223_942) / 14_223_942)
    assert f"{zayatz * 100:.4f}%" in html
    assert "Population uniques against the sampling fraction" in html


def test_report_without_population_says_so(prepared, analyst, reviewer):
    from apps.reports.content import report_html
    from tests.reports.helpers import compute, decide

    decision = decide(compute(prepared, analyst), analyst, reviewer)
    prepared.refresh_from_db()
    html = report_html(assessment=prepared, decision=decision)
    assert 'data-testid="report-attacker-models"' in html
    assert "was not declared a sample of a larger population" in html
    assert 'data-testid="report-population-before"' not in html
