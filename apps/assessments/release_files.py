"""Where a release's files live and how a written release replaces the last one: every
apply job's (records, persons, a cluster table, synthetic data, a table) one way."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q

from apps.assessments import steps
from apps.assessments.models import Assessment
from apps.datasets.storage import delete_quietly
from apps.jobs.models import Job

#: ``apply_result``'s list of the release's further files (linked tables: each table in
#: Parquet and CSV), each ``{"name", "path", "sha256", "bytes", "format", "table",
#: "role", "rows", "persons", "columns"}``.
LISTED = "release_files"
#: The record's and the decision's name of a listed file: ``file:<name>``.
FILE_PREFIX = "file:"


@dataclass(frozen=True)
class ReleaseEntry:
    """One file of a release as :func:`release_manifest` lists it."""

    key: str  # the frozen record's and the decision's name of the file
    path: str  # in storage
    written_sha256: str | None  # what the apply job recorded (None: nothing recorded)
    released: bool  # leaves deidweb once approved (the sealed keys never do)
    facts: dict[str, Any] = field(default_factory=dict)  # name, table, rows, persons…


def file_key(name: str) -> str:
    return f"{FILE_PREFIX}{name}"


def listed_files(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [dict(f) for f in (result or {}).get(LISTED) or []]


def release_manifest(assessment: Assessment) -> list[ReleaseEntry]:
    """Every file of the release ``assessment`` holds (a live draft or a frozen view), the
    one list that the submission freezes, the decision digests, the downloads check and
    the clean-up deletes: the release's Parquet and CSV (one table), its sealed keys, and
    each further file the apply job listed (``LISTED``: a linked-tables release's tables)."""
    applied = assessment.apply_result or {}
    written = applied.get("sha256") or {}
    entries = [
        ReleaseEntry(key, name, written.get(fmt) if fmt else None, fmt is not None)
        for key, name, fmt in (
            ("release_parquet", assessment.output_parquet_path, "parquet"),
            ("release_csv", assessment.output_csv_path, "csv"),
            ("secrets", assessment.secrets_path, None),
        )
        if name
    ]
    for listed in listed_files(applied):
        facts = {k: v for k, v in listed.items() if k not in ("path", "sha256", "bytes")}
        entries.append(
            ReleaseEntry(
                file_key(str(listed["name"])), str(listed["path"]), listed["sha256"], True, facts
            )
        )
    return entries


def release_store(
    locked: Assessment,
    result: dict[str, Any],
    *,
    files: tuple[str, str, str],
    wrapped_key: str,
    kept: Collection[str],
) -> None:
    """Record a written release on ``locked``, a draft whose row lock the caller holds in a
    transaction: every release form's and engine's one way to replace the last release.
    ``files``: the release's Parquet, CSV and sealed keys (an empty name: none of that file),
    further files listed in ``result`` (``LISTED``);
    Step 7 is marked changed and Step 8's acceptance cleared; the previous files that this
    release keeps (``kept``) or no other version points at are deleted once it commits."""
    old = [entry.path for entry in release_manifest(locked)]
    locked.apply_result = result
    locked.output_parquet_path, locked.output_csv_path, locked.secrets_path = files
    locked.secrets_wrapped_key = wrapped_key
    steps.mark_changed(locked, "deidentify")
    locked.utility_accepted = False
    locked.save(
        update_fields=[
            "apply_result",
            "output_parquet_path",
            "output_csv_path",
            "secrets_path",
            "secrets_wrapped_key",
            "step_state",
            "utility_accepted",
            "updated_at",
        ]
    )
    # Earlier versions of the assessment may still point at the old files.
    unused = [n for n in old if n and n not in kept and not _referenced_elsewhere(n, locked)]
    transaction.on_commit(lambda: delete_quietly(*unused))


def _apply_folders(assessment: Assessment, job: Job) -> tuple[str, str]:
    """Where an apply job stores its files: folders of its own, so that a re-run of the job
    (its worker died) finds and replaces exactly the files of its earlier attempt."""
    prefix = (
        f"organizations/{assessment.organization_id}/assessments/{assessment.id}"
        f"/v{assessment.version}"
    )
    return f"{prefix}/release/{job.id}", f"{prefix}/secrets/{job.id}"


def _discard_unreferenced(assessment: Assessment, job: Job) -> list[str]:
    """Delete the files in an apply job's folders that no assessment refers to (left by an
    attempt whose worker died, or by a job that failed); returns their names."""
    discarded = []
    for folder in _apply_folders(assessment, job):
        try:
            _, files = default_storage.listdir(folder)
        except (FileNotFoundError, NotADirectoryError, NotImplementedError):
            continue
        for file in files:
            name = f"{folder}/{file}"
            if not _referenced_elsewhere(name, None):
                delete_quietly(name)
                discarded.append(name)
    return discarded


def _referenced_elsewhere(name: str, assessment: Assessment | None) -> bool:
    """Whether an assessment other than ``assessment`` (any, if None) refers to a file."""
    others = Assessment.objects.all()
    if assessment is not None:
        others = others.exclude(id=assessment.id)
    return others.filter(
        Q(output_parquet_path=name)
        | Q(output_csv_path=name)
        | Q(secrets_path=name)
        | Q(apply_result__contains={LISTED: [{"path": name}]})
    ).exists()
