import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments.services import assessment_create
from apps.classification.services import variables_accept_suggestions, variables_create_from_profile
from apps.datasets.models import DatasetStatus
from apps.datasets.profiling import profile_parquet
from apps.engine.context import CONTROLS

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
    path = tmp_path / "p.parquet"
    PEOPLE.write_parquet(path)
    variables_create_from_profile(dataset=dataset, profile=profile_parquet(path), sample=PEOPLE)
    dataset.status = DatasetStatus.READY
    dataset.save()
    return dataset


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
