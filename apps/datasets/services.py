"""Writes for data sets: upload (store the file, start a job), reading it into Parquet and
profiling it (job handlers), deletion."""

from __future__ import annotations

import logging
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
from apps.datasets import hooks
from apps.datasets.ingest import (
    TEXT_FORMATS,
    IngestError,
    IngestLimits,
    check_encoding_choice,
    check_size,
    convert_to_parquet,
    detect_format,
)
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.profiling import profile_parquet
from apps.datasets.storage import delete_quietly, local_path, sha256_of, store
from apps.jobs.context import JobContext
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create

logger = logging.getLogger(__name__)

SAMPLE_ROWS = 2000


def upload_limit_for(organization: Organization) -> int:
    return int(organization.upload_limit_bytes or settings.DEIDWEB_UPLOAD_MAX_BYTES)


# Parquet, SAS, SPSS and Stata files are read by streaming: what their values decode to
# bounds time and disk, not memory, so its bound follows the upload limit rather than
# DEIDWEB_MAX_EXPANDED_BYTES.
DECODED_EXPANSION = 20


def ingest_limits_for(organization: Organization) -> IngestLimits:
    return IngestLimits(
        max_columns=int(settings.DEIDWEB_MAX_COLUMNS),
        max_expanded_bytes=int(settings.DEIDWEB_MAX_EXPANDED_BYTES),
        max_sheet_cells=int(settings.DEIDWEB_MAX_SHEET_CELLS),
        max_decoded_bytes=DECODED_EXPANSION * upload_limit_for(organization),
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
    """Store an uploaded file as it is and start the job that reads and profiles it.

    The request only checks what needs no reading of the content (the size, and that the
    file's first bytes agree with its extension) and streams the file to storage; the
    conversion to Parquet, the detection of encoding and delimiter, and profiling run in a
    worker (``dataset_ingest_handler``), whose errors appear on the job and data set pages.
    A failure here removes what this call stored, so nothing saved before is disturbed.
    """
    filename = Path(upload.name or "upload").name
    size = int(upload.size or 0)
    try:
        check_size(size, upload_limit_for(organization))
    except IngestError as exc:
        raise ingest_error_to_application_error(exc, filename) from None

    # Stored and scratch copies under a bounded name (a path column holds 300 characters,
    # a file system 255 bytes); the name as uploaded is kept in original_filename.
    stored_name = (
        filename if len(filename.encode()) <= 120 else "upload" + Path(filename).suffix[-16:]
    )
    with tempfile.TemporaryDirectory(prefix="deidweb-upload-") as scratch_dir:
        source = _materialize(upload, Path(scratch_dir) / stored_name)
        try:
            source_format = detect_format(source, filename)
            if source_format in TEXT_FORMATS:
                check_encoding_choice(source, encoding)
        except IngestError as exc:
            raise ingest_error_to_application_error(exc, filename) from None
        dataset = Dataset(
            organization=organization,
            name=name.strip() or Path(filename).stem[:200],  # the column holds 200
            description=description,
            original_filename=filename,
            source_format=source_format,
            size_bytes=size,
            sha256="",  # the worker fills in what it reads (ingest)
            parquet_sha256="",
            parquet_path="",
            rows=0,
            column_count=0,
            status=DatasetStatus.CONVERTING,
            uploaded_by=user,
        )
        prefix = f"organizations/{organization.id}/datasets/{dataset.id}"
        dataset.original_path = store(source, f"{prefix}/original/{stored_name}")
    try:
        with transaction.atomic():
            dataset.save()
            job = job_create(
                organization=organization,
                kind="ingest",
                subject=f"datasets.dataset:{dataset.id}",
                params={
                    "dataset_id": str(dataset.id),
                    "encoding": encoding or "",
                    "delimiter": delimiter or "",
                    "sheet": sheet or "",
                },
                created_by=user,
            )
            dataset.profile_job = job
            dataset.save(update_fields=["profile_job"])
            audit_record(
                organization=organization,
                actor=user,
                action="dataset.upload",
                obj=dataset,
                details={"file": filename, "size": size, "format": source_format},
            )
    except Exception:
        delete_quietly(dataset.original_path)
        raise
    return dataset


def dataset_ingest_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job handler: read the uploaded file into Parquet (once), then profile it.

    Safe to run again: a data set already converted is only profiled again. The upload is
    kept until the conversion succeeds (so a failed one can be retried), then only where
    the organization keeps original uploads.
    """
    dataset = Dataset.objects.get(id=job.params["dataset_id"], organization=job.organization)
    if not dataset.parquet_path:
        _ingest(dataset, job, context)
        dataset.refresh_from_db()
    return _profile(dataset, context, start=30)


def _ingest(dataset: Dataset, job: Job, context: JobContext) -> None:
    organization = dataset.organization
    filename = dataset.original_filename
    context.progress(2, "Reading the file", force=True)
    with (
        tempfile.TemporaryDirectory(prefix="deidweb-ingest-") as scratch,
        local_path(dataset.original_path) as source,
    ):
        parquet = Path(scratch) / "data.parquet"
        try:
            result = convert_to_parquet(
                source,
                filename,
                parquet,
                encoding=job.params.get("encoding") or None,
                delimiter=job.params.get("delimiter") or None,
                sheet=job.params.get("sheet") or None,
                limits=ingest_limits_for(organization),
            )
        except IngestError as exc:
            raise ingest_error_to_application_error(exc, filename) from None
        context.progress(25, "Storing the converted file", force=True)
        digests = {"sha256": sha256_of(source), "parquet_sha256": sha256_of(parquet)}
        prefix = f"organizations/{organization.id}/datasets/{dataset.id}"
        parquet_path = store(parquet, f"{prefix}/data.parquet")
    fields = {
        **digests,
        "parquet_path": parquet_path,
        "source_format": result.format,
        "rows": result.rows,
        "column_count": len(result.columns),
        "delimiter": result.delimiter or "",
        "encoding": result.encoding or "",
        "sheet": result.sheet or "",
        "ingest_warnings": list(result.warnings),
        "status": DatasetStatus.PROFILING,
    }
    keep = organization.keep_original_uploads
    if not keep:
        fields["original_path"] = ""
    try:
        with transaction.atomic():
            Dataset.objects.filter(id=dataset.id).update(**fields)
            audit_record(
                organization=organization,
                actor=job.created_by,
                action="dataset.ingest",
                obj=dataset,
                details={
                    "file": filename,
                    "sha256": digests["sha256"],
                    "rows": result.rows,
                    "columns": len(result.columns),
                    "original_kept": keep,
                },
            )
    except Exception:
        delete_quietly(parquet_path)
        raise
    if not keep:
        delete_quietly(dataset.original_path)


def _materialize(upload: UploadedFile[Any], target: Path) -> Path:
    """The upload as a file on disk: where Django already spooled it (no copy), else written
    to `target` in chunks."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        return Path(temporary())
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return target


def dataset_profile_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job handler: profile the stored Parquet file, then suggest a role for every column."""
    dataset = Dataset.objects.get(id=job.params["dataset_id"], organization=job.organization)
    return _profile(dataset, context, start=2)


def _profile(dataset: Dataset, context: JobContext, *, start: int) -> dict[str, Any]:
    """Profile the data set's Parquet file (progress from `start` to 100)."""
    span = 90 - start
    context.progress(start, "Reading the data set", force=True)
    # A failure or a cancel leaves the data set "failed" through dataset_profile_finished.
    with local_path(dataset.parquet_path) as path:
        profile = profile_parquet(
            path, progress=lambda pct, msg: context.progress(start + 3 + pct * span / 100, msg)
        )
        context.progress(92, "Suggesting variable roles", force=True)
        sample = _sample(path, profile.rows)
    profile_dict = profile.to_dict()
    with transaction.atomic():
        Dataset.objects.filter(id=dataset.id).update(
            profile=profile_dict, status=DatasetStatus.READY, rows=profile.rows
        )
        hooks.profile_stored.send(dataset=dataset, profile=profile, sample=sample)
        variables = dataset.variables.count()  # made by the subscribers (classification)
    return {"rows": profile.rows, "columns": len(profile.columns), "variables": variables}


def dataset_profile_finished(job: Job) -> None:
    """Job hook: a profile that failed, was cancelled or lost its worker leaves its data set
    "failed", so the page offers to run it again or to delete the data set."""
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        Dataset.objects.filter(
            profile_job=job, status__in=[DatasetStatus.CONVERTING, DatasetStatus.PROFILING]
        ).update(status=DatasetStatus.FAILED)


def dataset_profile_retried(old: Job, new: Job) -> None:
    """Job hook: the data set follows the new job (reading its file again if it never was)."""
    datasets = Dataset.objects.filter(profile_job=old)
    datasets.filter(parquet_path="").update(profile_job=new, status=DatasetStatus.CONVERTING)
    datasets.update(profile_job=new, status=DatasetStatus.PROFILING)


# Text values of the sample are cut to an equal share of this (at least SAMPLE_MIN_CHARS
# each): 2,000 notes of 50 KB in each of 100 columns would be 10 GB.
SAMPLE_BYTES = 64 * 1024**2
SAMPLE_MIN_CHARS = 256


def _sample(path: Path, rows: int) -> pl.DataFrame:
    """Up to SAMPLE_ROWS rows spread over the file (every k-th: deterministic, and cheap on
    a lazy scan), read by the streaming engine, which holds a row group at a time."""
    frame = pl.scan_parquet(path)
    schema = frame.collect_schema()
    texts = [name for name, dtype in schema.items() if dtype == pl.String]
    if texts:
        chars = max(SAMPLE_MIN_CHARS, SAMPLE_BYTES // (SAMPLE_ROWS * len(texts)))
        frame = frame.with_columns(pl.col(texts).str.slice(0, chars))
    step = max(1, rows // SAMPLE_ROWS)
    return frame.gather_every(step).head(SAMPLE_ROWS).collect(engine="streaming")


def dataset_delete(*, dataset: Dataset, user: User | None = None) -> None:
    if dataset.assessments.exists():
        raise ApplicationError(
            f"'{dataset.name}' has assessments; it stays as the evidence they were made on.",
            status=409,
        )
    # Linked tables: each table's upload (named by the job until the join records them).
    uploads = (dataset.profile_job.params or {}).get("tables", []) if dataset.profile_job else []
    names = [
        dataset.parquet_path,
        dataset.original_path,
        *(t.get("original_path", "") for t in (dataset.table_structure or {}).get("tables", [])),
        *(str(t.get("path", "")) for t in uploads),
    ]
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
