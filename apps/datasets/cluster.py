"""The cluster path (issue #27): an organization's Spark Connect connection, data sets that
are tables on that cluster, and the row passes the jobs run there (docs/spark.md).

The connection's address carries the cluster's credentials (``sc://HOST:PORT/;token=…``):
it is sealed like every other secret (apps.core.crypto, docs/secrets-at-rest.md), set and
cleared by an organization's administrator only, opened only to hand it to the engine
inside a job, and never shown back — not on a page, not in the API, not in the audit trail.

A cluster data set has no stored file: ``ClusterTable.source`` names the table
(``table:NAME``) or a Parquet/Delta path the cluster reads. Its profile, its histogram
(Step 4, Step 7) and its release run as Spark jobs (``apps.engine.rows``, ``SparkRows``).
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.audit.services import audit_record
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets import hooks
from apps.datasets.cluster_models import ClusterTable, SparkConnection, spark_remote_purpose
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.profile_rules import TOP_VALUES
from apps.datasets.profile_rules import _short as profile_text
from apps.datasets.profiling import ColumnProfile, DatasetProfile, profile_parquet
from apps.datasets.services import SAMPLE_ROWS
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineError
from apps.engine.rows import RowEngine, TableSource, open_engine
from apps.engine.rows.spark.session import check_remote
from apps.jobs.context import external_work
from apps.jobs.models import Job, JobStatus
from apps.jobs.services import JobContext, job_create

#: A catalog table: ``name``, ``schema.name`` or ``catalog.schema.name``.
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
#: A path the cluster reads: an absolute path or a URI of a file system Spark knows.
_PATH = re.compile(r"^(/|(s3a|s3|gs|abfss|abfs|wasbs|hdfs|dbfs|file):/)[^\s]*$")
SOURCE_FORMATS = ("parquet", "delta")


# --------------------------------------------------------------------------- checks


def _check_path(path: str, what: str) -> str:
    path = path.strip()
    if not _PATH.match(path):
        raise ApplicationError(
            f"{what} {path!r} is not a cluster path: give an absolute path (/lake/…) or a "
            "URI (s3a://…, abfss://…, gs://…, hdfs://…, dbfs:/…).",
            {"field": what},
        )
    if any(part in (".", "..") for part in path.split("/")):
        raise ApplicationError(f"{what} {path!r} contains '.' or '..' parts.", {"field": what})
    return path


def cluster_source_check(text: str) -> TableSource:
    """``table:NAME``, ``parquet:PATH``, ``delta:PATH`` or a plain path (a folder or file of
    Parquet), as the cluster reads it; anything else is refused naming the problem."""
    text = text.strip()
    prefix, colon, rest = text.partition(":")
    if colon and prefix == "table":
        if not _TABLE.match(rest.strip()):
            raise ApplicationError(
                f"{rest.strip()!r} is not a table name: letters, digits and _ in up to three "
                "dotted parts (catalog.schema.table).",
                {"field": "source"},
            )
        return TableSource(table=rest.strip(), format="table")
    if colon and prefix in SOURCE_FORMATS and not rest.startswith("//"):
        return TableSource(path=_check_path(rest, "source"), format=prefix)  # type: ignore[arg-type]
    if colon and prefix == "csv":
        raise ApplicationError(
            "A CSV file is uploaded, not read on the cluster: give a table, Parquet or Delta.",
            {"field": "source"},
        )
    return TableSource(path=_check_path(text, "source"), format="parquet")


def release_prefix_check(prefix: str) -> str:
    """The organization's release prefix, without a trailing slash."""
    return _check_path(prefix, "release_prefix").rstrip("/")


def release_path_check(prefix: str, path: str) -> str:
    """``path`` when it lies below ``prefix`` (the organization's allowed release area);
    anything else is refused, whatever wrote it."""
    prefix = release_prefix_check(prefix)
    path = _check_path(path, "release path").rstrip("/")
    if not path.startswith(prefix + "/"):
        raise ApplicationError(
            f"The release path {path!r} is outside the organization's release area {prefix!r}.",
            {"field": "release_path"},
            status=403,
        )
    return path


# --------------------------------------------------------------------------- connection


def _require_admin(user: User, organization: Organization) -> None:
    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError(
            "Only the organization's administrators manage its Spark connection.", status=403
        )


def spark_connection_set(
    *,
    organization: Organization,
    user: User,
    remote: str,
    release_prefix: str,
    probe: bool = True,
) -> SparkConnection:
    """Store (sealed) the organization's Spark Connect address and its release prefix. With
    ``probe`` the server is asked for a session first: a wrong address or token is refused
    now, not in the first job. An empty ``remote`` keeps the stored address."""
    _require_admin(user, organization)
    prefix = release_prefix_check(release_prefix)
    existing = SparkConnection.objects.filter(organization=organization).first()
    remote = remote.strip()
    if not remote and existing is None:
        raise ApplicationError("Give the Spark Connect address (sc://HOST:PORT).")
    if remote:
        try:
            check_remote(remote)
            if probe:
                open_engine("spark", remote=remote).close()
        except EngineError as exc:
            raise ApplicationError(str(exc), {"field": "remote"}) from None
    with transaction.atomic():
        connection = existing or SparkConnection(organization=organization)
        if remote:
            connection.remote_sealed = crypto.seal_text(
                remote, purpose=spark_remote_purpose(organization.id)
            )
        connection.release_prefix = prefix
        connection.updated_by = user
        connection.save()
        audit_record(
            organization=organization,
            actor=user,
            action="cluster.connection_set",
            obj=connection,
            # the address and its token stay out of the trail: whether it changed is enough
            details={"release_prefix": prefix, "address_changed": bool(remote)},
        )
    return connection


def spark_connection_clear(*, organization: Organization, user: User) -> None:
    _require_admin(user, organization)
    with transaction.atomic():
        deleted, _ = SparkConnection.objects.filter(organization=organization).delete()
        if deleted:
            audit_record(
                organization=organization,
                actor=user,
                action="cluster.connection_clear",
                object_type="datasets.sparkconnection",
                object_id=str(organization.id),
            )


def spark_connection_status(organization: Organization) -> dict[str, Any]:
    """What may be shown of the connection: whether there is one, its release prefix."""
    connection = SparkConnection.objects.filter(organization=organization).first()
    if connection is None:
        return {"configured": False, "release_prefix": "", "updated_at": None}
    return {
        "configured": True,
        "release_prefix": connection.release_prefix,
        "updated_at": connection.updated_at.isoformat(),
    }


def _connection(organization_id: Any) -> SparkConnection:
    connection = SparkConnection.objects.filter(organization_id=organization_id).first()
    if connection is None:
        raise ApplicationError(
            "This organization has no Spark connection: an administrator sets it first."
        )
    return connection


def release_prefix_of(organization_id: Any) -> str:
    return _connection(organization_id).release_prefix


@contextlib.contextmanager
def cluster_engine(organization_id: Any) -> Iterator[RowEngine]:
    """The organization's cluster as a `RowEngine` (the address opened for this only).

    Every cluster job (profile, Step 4, Step 7's search and apply) and the release check
    run their Spark work through here, registered as the job's external work: a cancelled
    job's process interrupts its Spark jobs on the server (their job tags) before it ends
    (`apps.jobs.context.external_work`; outside a job's process, the registration does
    nothing)."""
    connection = _connection(organization_id)
    remote = crypto.open_text(
        connection.remote_sealed, purpose=spark_remote_purpose(organization_id)
    )
    try:
        engine = open_engine("spark", remote=remote)
    except EngineError as exc:
        raise ApplicationError(f"The cluster cannot be reached: {exc}") from None
    with (
        engine,
        external_work(engine.cancel, "the Spark jobs it started on the cluster were interrupted"),
    ):
        yield engine


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
