"""A data set uploaded as a file and the same rows registered as a cluster table, both
taken through Steps 1-8 and approved, for comparing their figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from apps.assessments.services import assessment_create
from apps.classification.services import variables_accept_suggestions
from apps.datasets.cluster import cluster_dataset_register
from apps.datasets.cluster_connection import spark_connection_set
from apps.datasets.storage import local_path
from apps.jobs.claiming import job_execute
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import trade_off_people, uploaded_register
from tests.reviews.conftest import complete


def connect(custodian: Any, admin: Any, remote: str, lake: Path) -> None:
    spark_connection_set(
        organization=custodian, user=admin, remote=remote, release_prefix=str(lake / "releases")
    )


def uploaded_and_cluster(custodian: Any, analyst: Any, lake: Path) -> tuple[Any, Any]:
    """The register uploaded as a CSV file, and its stored Parquet copy (the very same
    rows and types) registered as a cluster table; both profiled by their jobs."""
    uploaded = uploaded_register(custodian, analyst, trade_off_people())
    table = lake / "register.parquet"
    lake.mkdir(parents=True, exist_ok=True)
    with local_path(uploaded.parquet_path) as path:
        pl.read_parquet(path).write_parquet(table)
    cluster = cluster_dataset_register(
        organization=custodian, user=analyst, source=f"parquet:{table}", name="register"
    )
    assert job_execute(job_id=str(cluster.profile_job_id))
    cluster.refresh_from_db()
    assert cluster.status == "ready", cluster.profile_job.error
    return uploaded, cluster


def assessed(custodian: Any, analyst: Any, dataset: Any) -> Any:
    """Steps 1-8 done (a non-public release under a DSA), utility accepted."""
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    return complete(assessment, analyst)


def approve(assessment: Any, analyst: Any, reviewer: Any) -> Any:
    assessment_submit(assessment=assessment, user=analyst, note="Ready for review.")
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets the target."
    )
    assessment.refresh_from_db()
    assert assessment.status == "approved"
    return decision
