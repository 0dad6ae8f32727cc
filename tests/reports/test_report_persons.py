"""Step 9 on data with several rows per person (issue 25): the report states the unit
(persons), the number of persons and events, the adversary power and the per-power risks."""

from django.template.loader import render_to_string

from apps.assessments import persons
from apps.assessments.presenters import person_risk_chart
from apps.reports.content_assumptions import standing_assumptions
from tests.assessments.persons_factory import TC1, TC1_ROLES, assessment_of, measured, upload


def test_the_report_states_persons_events_power_and_risks(custodian, analyst):
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, TC1, TC1_ROLES))
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    persons.assessment_set_power(assessment=assessment, user=analyst, power="2")
    risk = measured(assessment, analyst)
    html = render_to_string(
        "reports/_person_risk.html",
        {"risk": risk, "charts": {"persons": person_risk_chart(risk)}},
    )
    assert "Unit of risk: persons" in html
    assert "3 persons with 6 events (rows)" in html
    assert "Person-level quasi-identifiers (one value per person): sex, birth_year" in html
    assert "at most <strong>2</strong> of their events" in html
    # One row per power, p = 2 marked; TC1: max 1, average over persons 2/3 at every power.
    assert html.count('<td class="num">0.6667</td>') == 6
    assert "2 (chosen)" in html and "all events" in html
    assert "max risk 1, average risk over persons 0.6667, 3 persons above 0.2" in html
    assert "Risk against the adversary power" in html
    assumptions = standing_assumptions(assessment, None)
    assert any("counted in persons" in a and "at most 2 of their events" in a for a in assumptions)
