"""The issue's smoke test on a real Apache Spark (local mode, its Spark Connect server
started by the engine tests' fixture): a catalog table registered as a data set goes
through Steps 1-8, is approved, its report prints the manifest's digest, and the release
on the cluster is checked against the approved manifest (and a removed file refused)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from apps.assessments.models import Assessment
from apps.audit.models import AuditEvent
from apps.engine.rows import open_engine
from apps.jobs.claiming import job_execute
from apps.reports.content import report_html
from tests.assessments.conftest import trade_off_people
from tests.cluster.helpers import approve, assessed, connect

pytestmark = [pytest.mark.django_db, pytest.mark.spark]


def test_one_assessment_through_steps_1_to_8_approved_and_verified_on_apache_spark(
    custodian, analyst, reviewer, admin_user, client_for, spark_remote, tmp_path: Path
):
    from apps.datasets.cluster import cluster_dataset_register

    lake = tmp_path / "lake"
    lake.mkdir()
    trade_off_people().write_parquet(lake / "register.parquet")
    with open_engine("spark", remote=spark_remote) as engine:
        engine.session.read.parquet(str(lake / "register.parquet")).write.saveAsTable(
            "register_smoke"
        )
    connect(custodian, admin_user, spark_remote, lake)
    dataset = cluster_dataset_register(
        organization=custodian, user=analyst, source="table:register_smoke"
    )
    assert job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    assert dataset.status == "ready" and dataset.rows == 400

    assessment: Assessment = assessed(custodian, analyst, dataset)
    applied = assessment.apply_result
    assert applied["engine"] == "spark" and applied["rows_in"] == 400
    assert applied["rows_out"] + applied["suppressed_rows"] == 400
    # the records kept are released as one Parquet table below the release area
    location = Path(applied["cluster_release"]["location"])
    assert location.is_relative_to(lake / "releases" / custodian.slug)
    released = pl.read_parquet(sorted(location.glob("*.parquet")))
    assert released.height == applied["rows_out"]
    assert sorted(released.columns) == sorted(applied["columns"])

    decision = approve(assessment, analyst, reviewer)
    digest = applied["cluster_release"]["digest"]
    assert decision.digests["release_manifest"] == digest
    assert digest in report_html(assessment=assessment, decision=decision)
    check = f"/api/v1/assessments/{assessment.id}/release/cluster-check/"
    response = client_for(reviewer).get(check)
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "ok": True,
        "manifest_sha256": digest,
        "location": str(location),
        "rows": applied["rows_out"],
        "files": len(applied["cluster_release"]["manifest"]["files"]),
    }
    # bytes appended to a released file on the cluster's disk after the approval (Hadoop's
    # .crc beside it no longer matches): refused as changed, naming the file, and recorded
    part = sorted(location.glob("*.parquet"))[0]
    original = part.read_bytes()
    with part.open("ab") as handle:
        handle.write(b"appended after the approval")
    response = client_for(reviewer).get(check)
    assert response.status_code == 409, response.json()
    assert response.json()["extra"]["changed"] == [part.name]
    assert part.name in response.json()["message"]
    refused = AuditEvent.objects.get(action="release.cluster_refused")
    assert refused.details["changed"] == [part.name]
    part.write_bytes(original)
    assert client_for(reviewer).get(check).status_code == 200

    # a file of the release removed on the cluster after the approval: refused
    part.unlink()
    (location / f".{part.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum beside it
    response = client_for(reviewer).get(check)
    assert response.status_code == 409, response.json()
    assert response.json()["extra"]["missing"] == [part.name]
