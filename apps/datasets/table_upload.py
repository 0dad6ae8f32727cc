"""Uploading a person table and its event tables together (issue 25): store the files,
then a job reads each, profiles each, checks and joins them (``apps.datasets.tables``)
into the data set's one long table, and profiles that as any data set."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from apps.accounts.models import Organization
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.datasets.ingest import IngestError, check_size, convert_to_parquet, detect_format
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.profiling import profile_parquet
from apps.datasets.services import (
    _materialize,
    _profile,
    ingest_error_to_application_error,
    ingest_limits_for,
    upload_limit_for,
)
from apps.datasets.storage import delete_quietly, local_path, sha256_of, store
from apps.datasets.tables import EVENT, MAX_EVENT_TABLES, PERSON, Table, long_view
from apps.jobs.context import JobContext
from apps.jobs.models import Job
from apps.jobs.queueing import job_create

JOB_KIND = "ingest-tables"
MAX_KEY = 300


def _stored_name(filename: str, index: int) -> str:
    short = filename if len(filename.encode()) <= 100 else "table" + Path(filename).suffix[-16:]
    return f"{index}-{short}"


def combined_digest(tables: list[dict[str, Any]]) -> str:
    """The data set's digest: SHA-256 of one line per table, ``role name sha256``, in the
    order uploaded (each file's own digest is in the structure)."""
    lines = "".join(f"{t['role']} {t['name']} {t['sha256']}\n" for t in tables)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def dataset_upload_tables(
    *,
    organization: Organization,
    user: User,
    persons: UploadedFile[Any],
    events: list[UploadedFile[Any]],
    person_key: str,
    name: str = "",
    description: str = "",
) -> Dataset:
    """Store a person table and its event tables as they are, and start the job that
    reads, checks, joins and profiles them. Nothing is kept when the request fails."""
    person_key = person_key.strip()
    if not person_key:
        raise ApplicationError(
            "Name the person key: the column that links each event to its person.",
            {"field": "person_key"},
        )
    if len(person_key) > MAX_KEY:
        raise ApplicationError("The person key is a column name.", {"field": "person_key"})
    if not events:
        raise ApplicationError("Give at least one event table.", {"field": "events"})
    if len(events) > MAX_EVENT_TABLES:
        raise ApplicationError(
            f"At most {MAX_EVENT_TABLES} event tables are uploaded together.", {"field": "events"}
        )
    uploads = [(PERSON, persons), *((EVENT, e) for e in events)]
    filenames = [Path(u.name or "table").name for _, u in uploads]
    repeated = sorted({n for n in filenames if filenames.count(n) > 1})
    if repeated:
        raise ApplicationError(
            f"Two tables have the same file name ({', '.join(repeated)}): rename one.",
            {"field": "events", "tables": repeated},
        )
    total = sum(int(u.size or 0) for _, u in uploads)
    try:
        check_size(total, upload_limit_for(organization))
    except IngestError as exc:
        raise ingest_error_to_application_error(exc, filenames[0]) from None
    dataset = Dataset(
        organization=organization,
        name=name.strip() or Path(filenames[0]).stem[:200],
        description=description,
        original_filename=", ".join(filenames)[:255],
        source_format="tables",
        size_bytes=total,
        sha256="",
        parquet_sha256="",
        parquet_path="",
        rows=0,
        column_count=0,
        status=DatasetStatus.CONVERTING,
        uploaded_by=user,
    )
    prefix = f"organizations/{organization.id}/datasets/{dataset.id}/original"
    stored: list[dict[str, str]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="deidweb-upload-") as scratch:
            for index, ((role, upload), filename) in enumerate(
                zip(uploads, filenames, strict=True)
            ):
                target = Path(scratch) / _stored_name(filename, index)
                source = _materialize(upload, target)
                try:
                    detect_format(source, filename)
                except IngestError as exc:
                    raise ingest_error_to_application_error(exc, filename) from None
                path = store(source, f"{prefix}/{_stored_name(filename, index)}")
                stored.append({"role": role, "name": filename, "path": path})
        with transaction.atomic():
            dataset.original_path = stored[0]["path"]
            dataset.save()
            job = job_create(
                organization=organization,
                kind=JOB_KIND,
                subject=f"datasets.dataset:{dataset.id}",
                params={"dataset_id": str(dataset.id), "person_key": person_key, "tables": stored},
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
                    "files": filenames,
                    "size": total,
                    "format": "tables",
                    "person_key": person_key,
                },
            )
    except Exception:
        delete_quietly(*(s["path"] for s in stored))
        raise
    return dataset


def dataset_tables_ingest_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job handler: read every table, profile each, check and join them into the long
    table, store it, then profile the long table (safe to run again)."""
    dataset = Dataset.objects.get(id=job.params["dataset_id"], organization=job.organization)
    if not dataset.parquet_path:
        _ingest_tables(dataset, job, context)
        dataset.refresh_from_db()
    return _profile(dataset, context, start=40)


def _read_table(
    entry: dict[str, str], scratch: Path, index: int, dataset: Dataset
) -> tuple[Table, dict[str, Any]]:
    with local_path(entry["path"]) as source:
        parquet = scratch / f"table-{index}.parquet"
        try:
            result = convert_to_parquet(
                source,
                entry["name"],
                parquet,
                limits=ingest_limits_for(dataset.organization),
            )
        except IngestError as exc:
            raise ingest_error_to_application_error(exc, entry["name"]) from None
        digest = sha256_of(source)
    profile = profile_parquet(parquet).to_dict()
    facts = {
        "sha256": digest,
        "format": result.format,
        "warnings": list(result.warnings),
        "profile": profile,
    }
    return Table(name=entry["name"], frame=pl.read_parquet(parquet)), facts


def _ingest_tables(dataset: Dataset, job: Job, context: JobContext) -> None:
    organization = dataset.organization
    entries: list[dict[str, str]] = job.params["tables"]
    key: str = job.params["person_key"]
    with tempfile.TemporaryDirectory(prefix="deidweb-ingest-") as scratch_dir:
        scratch = Path(scratch_dir)
        read: list[tuple[Table, dict[str, Any]]] = []
        for index, entry in enumerate(entries):
            context.progress(
                2 + 20 * index // len(entries), f"Reading '{entry['name']}'", force=True
            )
            read.append(_read_table(entry, scratch, index, dataset))
        context.progress(24, "Checking and joining the tables", force=True)
        persons, *events = [table for table, _ in read]
        joined, structure = long_view(persons, events, key)
        for table, (_, facts) in zip(structure["tables"], read, strict=True):
            table.update(facts)
        parquet = scratch / "data.parquet"
        joined.write_parquet(parquet)
        context.progress(32, "Storing the joined table", force=True)
        prefix = f"organizations/{organization.id}/datasets/{dataset.id}"
        parquet_path = store(parquet, f"{prefix}/data.parquet")
        parquet_digest = sha256_of(parquet)
    keep = organization.keep_original_uploads
    if keep:
        for table, entry in zip(structure["tables"], entries, strict=True):
            table["original_path"] = entry["path"]
    warnings = [f"{t['name']}: {w}" for t in structure["tables"] for w in t["warnings"]]
    fields = {
        "sha256": combined_digest(structure["tables"]),
        "parquet_sha256": parquet_digest,
        "parquet_path": parquet_path,
        "rows": joined.height,
        "column_count": joined.width,
        "ingest_warnings": warnings,
        "table_structure": structure,
        "status": DatasetStatus.PROFILING,
        "original_path": entries[0]["path"] if keep else "",
    }
    try:
        with transaction.atomic():
            Dataset.objects.filter(id=dataset.id).update(**fields)
            audit_record(
                organization=organization,
                actor=job.created_by,
                action="dataset.ingest",
                obj=dataset,
                details={
                    "files": [t["name"] for t in structure["tables"]],
                    "sha256": {t["name"]: t["sha256"] for t in structure["tables"]},
                    "person_key": key,
                    "persons": structure["persons"],
                    "events": structure["events"],
                    "rows": joined.height,
                    "columns": joined.width,
                    "original_kept": keep,
                },
            )
    except Exception:
        delete_quietly(parquet_path)
        raise
    if not keep:
        delete_quietly(*(e["path"] for e in entries))
