import pytest

from apps.assessments import deidentify, release_apply, services
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import (  # noqa: F401  (fixtures)
    CONTROLS_ALL_YES,
    LOW_ANSWERS,
    MOTIVES_LOW,
    assessment,
    classified,
    ready_dataset,
    trade_off_people,
    traded,
)
from tests.justify import justify_all


def run(job):
    assert job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return job


def complete(assessment, analyst, *, release_model="non_public", recipient="University X"):
    """Every step done: Steps 1-8 on the 10-person data set."""
    services.assessment_set_release(
        assessment=assessment,
        release_model=release_model,
        recipient_organization=recipient,
        agreement_kind="dsa" if release_model == "non_public" else "",
        agreement_reference="DSA-7" if release_model == "non_public" else "",
    )
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    answers = {}
    if release_model == "non_public":
        answers = {
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 0.001,
            "prevalence_source": "Registry",
        }
    services.assessment_set_context(assessment=assessment, answers=answers)
    for start in (
        services.assessment_start_risk,
        deidentify.assessment_start_search,
        release_apply.assessment_start_apply,
    ):
        run(start(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Fit for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    return assessment


@pytest.fixture
def complete_assessment(assessment, analyst):
    return complete(assessment, analyst)
