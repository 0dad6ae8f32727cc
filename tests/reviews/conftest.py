import random

import polars as pl
import pytest

from apps.assessments import deidentify, services
from apps.jobs.services import job_execute
from tests.assessments.conftest import (  # noqa: F401  (fixtures)
    CONTROLS_ALL_YES,
    LOW_ANSWERS,
    MOTIVES_LOW,
    assessment,
    classified,
    ready_dataset,
)


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
        deidentify.assessment_start_apply,
    ):
        run(start(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Fit for the study.")
    assessment.refresh_from_db()
    return assessment


@pytest.fixture
def complete_assessment(assessment, analyst):
    return complete(assessment, analyst)


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


@pytest.fixture
def traded(custodian, analyst, tmp_path):  # type: ignore[no-untyped-def]
    """A public release of ``trade_off_people`` with the alternative applied, not the
    optimum: age suppressed (*) and sex kept, instead of five-year bands and 12 records
    suppressed. Every step done, ready to submit."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.assessments.services import assessment_create
    from apps.classification.services import (
        variables_accept_suggestions,
        variables_create_from_profile,
    )
    from apps.datasets.models import DatasetStatus
    from apps.datasets.profiling import profile_parquet
    from apps.datasets.services import dataset_upload

    frame = trade_off_people()
    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("register.csv", frame.write_csv().encode()),
    )
    path = tmp_path / "register.parquet"
    frame.write_parquet(path)
    variables_create_from_profile(dataset=dataset, profile=profile_parquet(path), sample=frame)
    dataset.status = DatasetStatus.READY
    dataset.save()
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    run(services.assessment_start_risk(assessment=assessment, user=analyst))
    run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result["levels"] == {"age": 1, "sex": 0}
    deidentify.assessment_choose_solution(assessment=assessment, levels={"age": 4, "sex": 0})
    run(deidentify.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Sex and diagnosis suffice.")
    assessment.refresh_from_db()
    return assessment
