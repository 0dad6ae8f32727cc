"""The cluster path (issue #27): data sets that are tables on an organization's Spark
Connect cluster, and the row passes the jobs run there (docs/spark.md). The connection
itself is in ``cluster_connection``, what a cluster path may be in ``cluster_paths``.

A cluster data set has no stored file: ``ClusterTable.source`` names the table
(``table:NAME``) or a Parquet/Delta path the cluster reads. Its profile, its histogram
(Step 4, Step 7) and its release run as Spark jobs (``apps.engine.rows``, ``SparkRows``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets import hooks
from apps.datasets.cluster_connection import _connection, cluster_engine
from apps.datasets.cluster_models import ClusterTable
from apps.datasets.cluster_paths import cluster_source_check
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.profile_rules import TOP_VALUES
from apps.datasets.profile_rules import _short as profile_text
from apps.datasets.profiling import ColumnProfile, DatasetProfile, profile_parquet
from apps.datasets.services import SAMPLE_ROWS
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineError
from apps.engine.rows import RowEngine, TableSource
from apps.jobs.context import JobContext
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create

# --------------------------------------------------------------------------- data sets


def cluster_source(dataset: Dataset) -> TableSource | None:
    """Where a cluster data set's rows are; None for an uploaded one."""
    table = ClusterTable.objects.filter(dataset_id=dataset.id).first()
    return None if table is None else cluster_source_check(table.source)


def dataset_is_cluster(dataset: Dataset) -> bool:
    return ClusterTable.objects.filter(dataset_id=dataset.id).exists()


def cluster_dataset_register(
    *,
    organization: Organization,
    user: User,
    source: str,
    name: str = "",
    description: str = "",
) -> Dataset:
    """A data set read on the organization's cluster; its profile job is queued."""
    if not membership_get(user=user, organization=organization).can_edit:
        raise ApplicationError(
            "Only analysts and administrators can register data sets.", status=403
        )
    parsed = cluster_source_check(source)
    _connection(organization.id)
    text = parsed.describe() if parsed.table else f"{parsed.format}:{parsed.path}"
    with transaction.atomic():
        dataset = Dataset.objects.create(
            organization=organization,
            name=(name.strip() or text.rsplit("/", 1)[-1].rsplit(":", 1)[-1])[:200],
            description=description,
            original_filename=text[:255],
            source_format="cluster",
            size_bytes=0,
            sha256="",
            parquet_sha256="",
            parquet_path="",
            rows=0,
            column_count=0,
            status=DatasetStatus.PROFILING,
            uploaded_by=user,
        )
        ClusterTable.objects.create(organization=organization, dataset=dataset, source=text)
        job = job_create(
            organization=organization,
            kind="cluster-profile",
            subject=f"datasets.dataset:{dataset.id}",
            params={"dataset_id": str(dataset.id)},
            created_by=user,
        )
        dataset.profile_job = job
        dataset.save(update_fields=["profile_job"])
        audit_record(
            organization=organization,
            actor=user,
            action="dataset.register_cluster",
            obj=dataset,
            details={"source": text},
        )
    return dataset


def job_progress(context: JobContext, start: float, end: float) -> Callable[[float, str], None]:
    """The engine's progress (a share 0..1) as the job's percent between start and end; a
    cancelled job raises from it, which interrupts the cluster's work (its job tag)."""

    def report(share: float, message: str) -> None:
        context.progress(start + (end - start) * share, message)

    return report


def cluster_histogram(
    dataset: Dataset,
    columns: Sequence[str],
    *,
    progress: Callable[[float, str], None] | None = None,
) -> EncodedData:
    """The class histogram over ``columns``, counted on the cluster."""
    source = cluster_source(dataset)
    assert source is not None
    with cluster_engine(dataset.organization_id) as engine:
        try:
            return engine.histogram(source, list(columns), progress=progress)
        except EngineError as exc:
            raise ApplicationError(
                f"The cluster could not count {source.describe()}: {exc}"
            ) from None


def cluster_column_values(dataset: Dataset, column: str) -> pl.DataFrame:
    """Distinct values of one column as text with their counts (``value``, ``count``),
    sorted, missing last: what `column_values` gives for a file."""
    encoded = cluster_histogram(dataset, [column])
    return (
        encoded.decoded()
        .select(
            pl.col(column).cast(pl.String).alias("value"),
            pl.col(COUNT_COLUMN).cast(pl.UInt32).alias("count"),
        )
        .sort("value", nulls_last=True)
    )


# --------------------------------------------------------------------------- profile


def cluster_profile(engine: RowEngine, source: TableSource) -> tuple[DatasetProfile, pl.DataFrame]:
    """The profile of a cluster table: rows, missing, distinct and top values counted
    exactly on the cluster; type, extremes, histogram and examples from a sample of
    ``SAMPLE_ROWS`` rows (the table is never copied here)."""
    columns = engine.columns(source)
    counts = {c.column: c for c in engine.column_counts(source, columns, top=TOP_VALUES)}
    sample = engine.head(source, SAMPLE_ROWS)
    with tempfile.TemporaryDirectory(prefix="deidweb-cluster-") as scratch:
        path = Path(scratch) / "sample.parquet"
        sample.write_parquet(path)
        approximate = profile_parquet(path)
    rows = next(iter(counts.values())).rows if counts else 0
    profiled = []
    for column in approximate.columns:
        exact = counts[column.name]
        present = exact.rows - exact.missing
        profiled.append(
            ColumnProfile(
                **{
                    **column.__dict__,
                    "missing": exact.missing,
                    "distinct": exact.distinct,
                    "unique_share": round(exact.distinct / present, 6) if present else 0.0,
                    # top values where the profile lists them (categories), counted exactly
                    "top_values": tuple((profile_text(v), n) for v, n in exact.top if v is not None)
                    if column.inferred_type not in ("identifier_like", "free_text", "empty")
                    else (),
                }
            )
        )
    return DatasetProfile(rows=rows, columns=tuple(profiled)), sample


def cluster_profile_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job handler: profile a cluster data set on its cluster, then suggest the roles."""
    dataset = Dataset.objects.get(id=job.params["dataset_id"], organization=job.organization)
    source = cluster_source(dataset)
    if source is None:
        raise ApplicationError("This data set is not a cluster table.")
    context.progress(2, f"Connecting to the cluster for {source.describe()}", force=True)
    with cluster_engine(dataset.organization_id) as engine:
        context.progress(10, "Counting values on the cluster", force=True)
        try:
            profile, sample = cluster_profile(engine, source)
        except EngineError as exc:
            raise ApplicationError(
                f"The cluster could not read {source.describe()}: {exc}"
            ) from None
    context.check_cancelled()
    context.progress(92, "Suggesting variable roles", force=True)
    with transaction.atomic():
        Dataset.objects.filter(id=dataset.id).update(
            profile=profile.to_dict(),
            status=DatasetStatus.READY,
            rows=profile.rows,
            column_count=len(profile.columns),
        )
        hooks.profile_stored.send(dataset=dataset, profile=profile, sample=sample)
        variables = dataset.variables.count()
    return {"rows": profile.rows, "columns": len(profile.columns), "variables": variables}


def cluster_profile_finished(job: Job) -> None:
    """A cluster profile that did not succeed leaves its data set "failed"."""
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        Dataset.objects.filter(profile_job=job, status=DatasetStatus.PROFILING).update(
            status=DatasetStatus.FAILED
        )


def cluster_profile_retried(old: Job, new: Job) -> None:
    Dataset.objects.filter(profile_job=old).update(profile_job=new, status=DatasetStatus.PROFILING)
