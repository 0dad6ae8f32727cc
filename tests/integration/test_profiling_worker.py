"""An upload read and profiled by a real Celery worker against real Redis and PostgreSQL."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.classification.models import Variable
from apps.datasets.models import Dataset, DatasetStatus
from apps.jobs.models import JobStatus
from tests.conftest import wait_for_job

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

CSV = (
    b"patient_id,email,age,sex,postal_code,diagnosis\n"
    b"P001,ann.lee@example.org,34,F,K1A 0B1,J45 Asthma\n"
    b"P002,bo.chen@example.com,51,M,M5V 2T6,E11 Type 2 diabetes\n"
    b"P003,cy.roy@example.net,34,F,K1A 0B1,J45 Asthma\n"
    b"P004,dee.fox@example.org,,M,L4C 3G5,I10 Hypertension\n"
)


def test_upload_is_profiled_by_the_worker_and_suggestions_are_created(
    celery_worker_process, client_for, analyst, custodian
):
    client = client_for(analyst)
    response = client.post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("p.csv", CSV)},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    # The request only stored the file; the worker reads it, then profiles it.
    assert (body["rows"], body["column_count"], body["status"]) == (0, 0, "converting")

    job = wait_for_job(body["profile_job"], timeout=90)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result == {"rows": 4, "columns": 6, "variables": 6}
    assert job.started_at is not None and job.finished_at >= job.started_at

    dataset = Dataset.objects.get(id=body["id"])
    assert dataset.status == DatasetStatus.READY
    assert (dataset.rows, dataset.column_count, dataset.source_format) == (4, 6, "csv")
    columns = {c["name"]: c for c in dataset.profile["columns"]}
    assert columns["age"]["missing"] == 1
    assert columns["age"]["distinct"] == 2  # 34 and 51 (the missing value is not counted)
    assert columns["sex"]["distinct"] == 2
    assert columns["postal_code"]["missing"] == 0

    roles = dict(Variable.objects.filter(dataset=dataset).values_list("name", "suggested_role"))
    assert roles["email"] == "direct"
    assert roles["age"] == "quasi"
    assert roles["sex"] == "quasi"
    assert roles["postal_code"] == "quasi"
    assert roles["diagnosis"] == "sensitive"

    api_job = client.get(f"/api/v1/jobs/{job.id}/").json()
    assert (api_job["status"], api_job["progress"]) == ("succeeded", 100)
