"""Writes for data sets: upload (validate, convert once to Parquet, store) and profiling."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from apps.accounts.models import Organization
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets.ingest import IngestError, IngestLimits, check_size, convert_to_parquet
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.profiling import profile_parquet
from apps.datasets.storage import delete_quietly, local_path, sha256_of, store
from apps.jobs.models import Job, JobStatus
from apps.jobs.services import JobContext, job_create

logger = logging.getLogger(__name__)

SAMPLE_ROWS = 2000


def upload_limit_for(organization: Organization) -> int:
    return int(organization.upload_limit_bytes or settings.DEIDWEB_UPLOAD_MAX_BYTES)


# A Parquet file is read by streaming: its expansion bounds time and disk, not memory, so
# its bound follows the upload limit rather than DEIDWEB_MAX_EXPANDED_BYTES.
PARQUET_EXPANSION = 20


def ingest_limits_for(organization: Organization) -> IngestLimits:
    return IngestLimits(
        max_columns=int(settings.DEIDWEB_MAX_COLUMNS),
        max_expanded_bytes=int(settings.DEIDWEB_MAX_EXPANDED_BYTES),
        max_parquet_expanded_bytes=PARQUET_EXPANSION * upload_limit_for(organization),
    )


def ingest_error_to_application_error(exc: IngestError, filename: str) -> ApplicationError:
    where = []
    if getattr(exc, "line", None):
        where.append(f"line {exc.line}")
    if getattr(exc, "column", None):
        where.append(f"column '{exc.column}'")
    return ApplicationError(
        str(exc),
        {
            "code": getattr(exc, "code", "invalid_file"),
            "file": filename,
            "line": getattr(exc, "line", None),
            "column": getattr(exc, "column", None),
            "where": ", ".join(where),
        },
    )


def dataset_upload(
    *,
    organization: Organization,
    user: User,
    upload: UploadedFile[Any],
    name: str = "",
    description: str = "",
    encoding: str | None = None,
    delimiter: str | None = None,
    sheet: str | None = None,
) -> Dataset:
    """Validate an uploaded file, store it once as Parquet and start profiling.

    Everything is checked and converted in a scratch directory first; the storage backend and
    the database are touched only when the file is known to be good, and a failure after that
    removes what this call stored — so a bad upload never disturbs what was saved before.
    """
    filename = Path(upload.name or "upload").name
    size = int(upload.size or 0)
    try:
        check_size(size, upload_limit_for(organization))
    except IngestError as exc:
        raise ingest_error_to_application_error(exc, filename) from None

    with tempfile.TemporaryDirectory(prefix="deidweb-upload-") as scratch_dir:
        scratch = Path(scratch_dir)
        source = _materialize(upload, scratch / filename)
        parquet = scratch / "data.parquet"
        try:
            result = convert_to_parquet(
                source,
                filename,
                parquet,
                encoding=encoding or None,
                delimiter=delimiter or None,
                sheet=sheet or None,
                limits=ingest_limits_for(organization),
            )
        except IngestError as exc:
            raise ingest_error_to_application_error(exc, filename) from None

        dataset = Dataset(
            organization=organization,
            name=name.strip() or Path(filename).stem,
            description=description,
            original_filename=filename,
            source_format=result.format,
            size_bytes=size,
            sha256=sha256_of(source),
            parquet_sha256=sha256_of(parquet),
            rows=result.rows,
            column_count=len(result.columns),
            delimiter=result.delimiter or "",
            encoding=result.encoding or "",
            sheet=result.sheet or "",
            ingest_warnings=list(result.warnings),
            uploaded_by=user,
        )
        prefix = f"organizations/{organization.id}/datasets/{dataset.id}"
        stored: list[str] = []
        try:
            dataset.parquet_path = store(parquet, f"{prefix}/data.parquet")
            stored.append(dataset.parquet_path)
            if organization.keep_original_uploads:
                dataset.original_path = store(source, f"{prefix}/original/{filename}")
                stored.append(dataset.original_path)
            with transaction.atomic():
                dataset.save()
                job = job_create(
                    organization=organization,
                    kind="profile",
                    subject=f"datasets.dataset:{dataset.id}",
                    params={"dataset_id": str(dataset.id)},
                    created_by=user,
                )
                dataset.profile_job = job
                dataset.save(update_fields=["profile_job"])
                audit_record(
                    organization=organization,
                    actor=user,
                    action="dataset.upload",
                    obj=dataset,
                    details={
                        "file": filename,
                        "sha256": dataset.sha256,
                        "rows": dataset.rows,
                        "columns": dataset.column_count,
                        "original_kept": bool(dataset.original_path),
                    },
                )
        except Exception:
            delete_quietly(*stored)
            raise
    return dataset


def _materialize(upload: UploadedFile[Any], target: Path) -> Path:
    """The upload as a file on disk: moved if Django already spooled it, else written in chunks."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        shutil.copyfile(temporary(), target)
        return target
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return target


def dataset_profile_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job handler: profile the stored Parquet file, then suggest a role for every column."""
    from apps.classification.services import variables_create_from_profile

    dataset = Dataset.objects.get(id=job.params["dataset_id"], organization=job.organization)
    context.progress(2, "Reading the data set", force=True)
    # A failure or a cancel leaves the data set "failed" through dataset_profile_finished.
    with local_path(dataset.parquet_path) as path:
        profile = profile_parquet(
            path, progress=lambda pct, msg: context.progress(5 + pct * 0.85, msg)
        )
        context.progress(92, "Suggesting variable roles", force=True)
        sample = _sample(path, profile.rows)
    profile_dict = profile.to_dict()
    with transaction.atomic():
        Dataset.objects.filter(id=dataset.id).update(
            profile=profile_dict, status=DatasetStatus.READY, rows=profile.rows
        )
        variables = variables_create_from_profile(dataset=dataset, profile=profile, sample=sample)
    return {"rows": profile.rows, "columns": len(profile.columns), "variables": len(variables)}


def dataset_profile_finished(job: Job) -> None:
    """Job hook: a profile that failed, was cancelled or lost its worker leaves its data set
    "failed", so the page offers to run it again or to delete the data set."""
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        Dataset.objects.filter(profile_job=job, status=DatasetStatus.PROFILING).update(
            status=DatasetStatus.FAILED
        )


def dataset_profile_retried(old: Job, new: Job) -> None:
    """Job hook: the data set follows the new profiling job."""
    Dataset.objects.filter(profile_job=old).update(profile_job=new, status=DatasetStatus.PROFILING)


def _sample(path: Path, rows: int) -> pl.DataFrame:
    frame = pl.scan_parquet(path)
    if rows <= SAMPLE_ROWS:
        return frame.collect()
    # Every k-th row: spread over the file, deterministic, and cheap on a lazy scan.
    step = max(1, rows // SAMPLE_ROWS)
    return frame.gather_every(step).head(SAMPLE_ROWS).collect()


def dataset_delete(*, dataset: Dataset, user: User | None = None) -> None:
    if dataset.assessments.exists():
        raise ApplicationError(
            f"'{dataset.name}' has assessments; it stays as the evidence they were made on."
        )
    names = [dataset.parquet_path, dataset.original_path]
    with transaction.atomic():
        audit_record(
            organization=dataset.organization,
            actor=user,
            action="dataset.delete",
            obj=dataset,
            details={"name": dataset.name, "sha256": dataset.sha256},
        )
        dataset.delete()
        transaction.on_commit(lambda: delete_quietly(*names))


def dataset_preview(
    *, dataset: Dataset, user: User | None = None, limit: int = 100
) -> pl.DataFrame:
    """The first rows as uploaded; raw values, so every look is in the audit trail."""
    with local_path(dataset.parquet_path) as path:
        frame = pl.scan_parquet(path).head(limit).collect()
    audit_record(
        organization=dataset.organization,
        actor=user,
        action="dataset.preview",
        obj=dataset,
        details={"rows": frame.height},
    )
    return frame
