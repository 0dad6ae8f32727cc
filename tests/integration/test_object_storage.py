"""Files in S3-compatible object storage (a real SeaweedFS started here): an upload, its
Parquet, the release files and their download go through the bucket and nothing through
the local media folder; the engine reads stored Parquet through a temporary local copy
that is removed after use."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from apps.assessments.services import assessment_create
from apps.classification.services import variables_accept_suggestions
from apps.datasets.models import Dataset
from apps.datasets.storage import local_path
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import trade_off_people
from tests.conftest import read_now
from tests.reviews.conftest import complete
from tests.seaweedfs import S3Server, seaweedfs_server

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with seaweedfs_server() as server:
        yield server


@pytest.fixture
def bucket(s3: S3Server) -> Iterator[str]:
    name = s3.create_bucket()
    with override_settings(STORAGES=s3.storages(name)):
        yield name


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary files of this test in a folder of its own, to see that none is left."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def media_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_default_storage_is_the_bucket_and_local_path_is_a_removed_copy(
    s3, bucket, private_tmp
):
    from storages.backends.s3 import S3Storage

    name = default_storage.save("organizations/x/data.parquet", ContentFile(b"PAR1 not really"))
    assert isinstance(default_storage._wrapped, S3Storage)
    assert s3.keys(bucket) == ["organizations/x/data.parquet"]
    # a name that is taken is never overwritten
    other = default_storage.save("organizations/x/data.parquet", ContentFile(b"second"))
    assert other != name and len(s3.keys(bucket)) == 2
    with local_path(name) as path:
        assert path.read_bytes() == b"PAR1 not really"
        assert path.parent == private_tmp and path.suffix == ".parquet"
    assert not path.exists() and list(private_tmp.iterdir()) == []


def test_upload_to_release_download_round_trips_through_the_bucket(
    s3, bucket, private_tmp, custodian, analyst, reviewer, client_for
):
    before = media_files()
    csv = trade_off_people().write_csv().encode()
    response = client_for(analyst).post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("people.csv", csv)},
    )
    assert response.status_code == 201, response.content
    dataset = read_now(Dataset.objects.get(id=response.json()["id"]))  # ingest + profile
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = complete(  # risk, search, apply: the job handlers, as a worker runs them
        assessment_create(organization=custodian, dataset=dataset, user=analyst), analyst
    )
    assessment_submit(assessment=assessment, user=analyst, note="Ready.")
    review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets the target."
    )
    assessment.refresh_from_db()
    assert assessment.status == "approved"

    keys = set(s3.keys(bucket))
    stored = {
        dataset.parquet_path,
        assessment.output_parquet_path,
        assessment.output_csv_path,
    }
    if dataset.original_path:
        stored.add(dataset.original_path)
    assert all(stored) and stored <= keys, (stored, keys)
    # the uploaded file's bytes are in the bucket as uploaded
    if dataset.original_path:
        body = s3.client().get_object(Bucket=bucket, Key=dataset.original_path)["Body"].read()
        assert sha256(body) == dataset.sha256 == sha256(csv)

    recorded = assessment.apply_result["sha256"]
    client = client_for(reviewer)
    for fmt, key in (("csv", "csv"), ("parquet", "parquet")):
        response = client.get(
            f"/api/v1/assessments/{assessment.id}/release/download/", {"format": fmt}
        )
        assert response.status_code == 200, response
        body = b"".join(response.streaming_content)
        assert sha256(body) == recorded[key]
        path = assessment.output_csv_path if fmt == "csv" else assessment.output_parquet_path
        in_bucket = s3.client().get_object(Bucket=bucket, Key=path)["Body"].read()
        assert sha256(in_bucket) == recorded[key]

    # Nothing went to the local media folder; every temporary copy was removed.
    assert media_files() == before
    assert list(private_tmp.iterdir()) == []
