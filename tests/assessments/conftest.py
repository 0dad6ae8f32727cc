import random

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments.services import assessment_create
from apps.classification.services import variables_accept_suggestions
from apps.engine.context import CONTROLS
from tests.conftest import read_now
from tests.justify import justify_all

# 10 people; quasi-identifiers age and sex; classes: (30,F)×3, (30,M)×2, (40,F)×4, (50,M)×1.
PEOPLE = pl.DataFrame(
    {
        "email": [f"p{i}@example.org" for i in range(10)],
        "age": ["30", "30", "30", "30", "30", "40", "40", "40", "40", "50"],
        "sex": ["F", "F", "F", "M", "M", "F", "F", "F", "F", "M"],
        "diagnosis": [
            "J45 Asthma",
            "J45 Asthma",
            "J45 Asthma",
            "E11 Diabetes",
            "I10 Hypertension",
            "J45 Asthma",
            "E11 Diabetes",
            "E11 Diabetes",
            "I10 Hypertension",
            "J45 Asthma",
        ],
    }
)


@pytest.fixture
def ready_dataset(custodian, analyst, tmp_path):
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("people.csv", PEOPLE.write_csv().encode()),
    )
    return read_now(dataset)


@pytest.fixture
def classified(ready_dataset, analyst):
    variables_accept_suggestions(dataset=ready_dataset, user=analyst)
    return ready_dataset


@pytest.fixture
def assessment(custodian, analyst, classified):
    return assessment_create(organization=custodian, dataset=classified, user=analyst)


LOW_ANSWERS = {
    "sensitivity": "low",
    "detail": "low",
    "individuals": "few",
    "harm": "low",
    "permitted_without_consent": "yes",
    "freely_given": "yes",
    "consent_or_notice": "yes",
}
HIGH_ANSWERS = {
    "sensitivity": "high",
    "detail": "high",
    "individuals": "very many",
    "harm": "high",
    "permitted_without_consent": "no",
    "freely_given": "no",
    "consent_or_notice": "no",
}

# Strong controls, low motives: T1 = 0.05 in the IPC table (a non-public release under a DSA).
CONTROLS_ALL_YES = {key: "yes" for key, _ in CONTROLS}
MOTIVES_LOW = {
    "past_without_incident": "yes",
    "reasons_to_reidentify": "no",
    "expertise_and_resources": "no",
    "linkable_data": "no",
}


def _run(job):  # type: ignore[no-untyped-def]
    from apps.jobs.claiming import job_execute

    assert job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return job


def trade_off_people(n: int = 400, seed: int = 7) -> pl.DataFrame:
    """A register whose search offers a real trade-off at k = 10 (public, low invasion):
    12 people aged 85-89 split over both sexes make five-year age bands need 12 records
    suppressed (the least loss), while suppressing age keeps every record."""
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {"email": [], "age": [], "sex": [], "diagnosis": []}
    for i in range(n):
        rows["email"].append(f"p{i}@example.org")
        rows["age"].append(str(rng.choice(range(85, 90)) if i < 12 else rng.choice(range(30, 50))))
        rows["sex"].append(rng.choice("FM"))
        rows["diagnosis"].append(rng.choice(["J45 Asthma", "E11 Diabetes", "I10 Hypertension"]))
    return pl.DataFrame(rows)


def uploaded_register(custodian, analyst, frame: pl.DataFrame):  # type: ignore[no-untyped-def]
    """`frame` uploaded as register.csv, read and profiled."""
    from apps.datasets.services import dataset_upload

    return read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("register.csv", frame.write_csv().encode()),
        )
    )


def through_risk(custodian, analyst, dataset):  # type: ignore[no-untyped-def]
    """A new assessment of `dataset` for a public release at low invasion (threshold 0.1,
    context 1: k = 10), Step 4 measured: ready for Step 7."""
    from apps.assessments import services

    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    return assessment


@pytest.fixture
def traded(custodian, analyst, tmp_path):  # type: ignore[no-untyped-def]
    """A public release of ``trade_off_people`` with the alternative applied, not the
    optimum: age suppressed (*) and sex kept, instead of five-year bands and 12 records
    suppressed. Every step done, ready to submit."""
    from apps.assessments import deidentify, release_apply, services

    dataset = uploaded_register(custodian, analyst, trade_off_people())
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result["levels"] == {"age": 1, "sex": 0}
    deidentify.assessment_choose_solution(assessment=assessment, levels={"age": 4, "sex": 0})
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Sex and diagnosis suffice.")
    justify_all(assessment)
    assessment.refresh_from_db()
    return assessment


# A public release submitted without a motivated-intruder test needs a written reason (#28).
WAIVER = "The custodian reviewed this open-data extract and waived the intruder test."
