"""The frozen record of a submitted version, and the one way to read what a decision rests on.

At submission everything the decision rests on is copied into an ``AssessmentSnapshot``:
the stored inputs and results of every step, the variables' roles and reasons, the
hierarchies, the completed Step 7 configuration, and the release files with their SHA-256
read back from storage. ``assessment_record`` is what the review page, the decision and the
Step 9 report read: the snapshot for a submitted or decided version, the live rows only for a
draft (whose pages show work in progress).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.serializers.json import DjangoJSONEncoder
from django.utils.dateparse import parse_datetime

from apps.assessments.configuration import DeidConfig
from apps.assessments.deidentify import deid_config
from apps.assessments.models import RELEASE_FIELDS, Assessment, AssessmentStatus, HierarchySpec
from apps.assessments.release_files import FILE_PREFIX, file_key, listed_files, release_manifest
from apps.assessments.selectors import overall_risk
from apps.assessments.threat_model import threat_model_of
from apps.audit.models import canonical_dumps
from apps.classification.models import ClassificationChange, Variable
from apps.core.errors import ApplicationError
from apps.datasets.models import Dataset
from apps.engine.rows import ReleaseManifest
from apps.reviews.models import AssessmentSnapshot

SCHEMA = 1

# The assessment's own stored fields that a decision rests on (status and dates stay live:
# they are what the review does to the version, not what it decides on).
FROZEN_FIELDS = (
    "title",
    "version",
    *RELEASE_FIELDS,
    "person_key",
    "person_levels",
    "adversary_power",
    "threat_model",
    "pseudonym_domain_id",  # whose key the keyed pseudonyms share (None: the release's own)
    "threshold_profile",
    "threshold_mode",
    "threshold_answers",
    "threshold_preset",
    "threshold_custom_value",
    "threshold_justification",
    "threshold_result",
    "risk_result",
    "population",
    "context_answers",
    "context_result",
    "deid_config",
    "search_result",
    "chosen_levels",
    "apply_result",
    "output_parquet_path",
    "output_csv_path",
    "secrets_path",
    "utility_note",
    "utility_accepted",
    "variable_justifications",
    "step_state",
)


def _stored_digest(name: str) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    with default_storage.open(name, "rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
            size += len(chunk)
    return {"path": name, "sha256": digest.hexdigest(), "bytes": size}


def release_files(assessment: Assessment, *, check: bool = True) -> dict[str, Any]:
    """The stored release files (``release_files.release_manifest``: one table's Parquet
    and CSV, the sealed keys, each table of a linked-tables release) with the digest of the
    bytes in storage now, under the key the decision records it by.

    With ``check``, a release file whose bytes differ from the digest recorded when it was
    written (or that is gone) stops the submission: the reviewer would approve a file that
    is not the one that was measured."""
    applied = assessment.apply_result or {}
    files: dict[str, Any] = {}
    for entry in release_manifest(assessment):
        what = entry.facts.get("name") or entry.key.replace("_", " ")
        try:
            files[entry.key] = {**_stored_digest(entry.path), **entry.facts}
        except OSError:
            if check:
                raise ApplicationError(
                    f"The {what} file written in Step 7 is missing from "
                    "storage: apply the de-identification again."
                ) from None
            files[entry.key] = {
                "path": entry.path,
                "sha256": "",
                "bytes": 0,
                "missing": True,
                **entry.facts,
            }
            continue
        if check and entry.written_sha256 not in (None, files[entry.key]["sha256"]):
            raise ApplicationError(
                f"The {what} file changed after Step 7 wrote it (its SHA-256 "
                "no longer matches): apply the de-identification again."
            )
    cluster = applied.get("cluster_release")
    if cluster:
        # A release on the cluster: what is frozen and approved is its manifest's digest
        # (files, rows, SHA-256 of each); the files are checked against it on the cluster.
        files["release_manifest"] = cluster_manifest_entry(cluster, check=check)
    return files


def cluster_manifest_entry(cluster: dict[str, Any], *, check: bool) -> dict[str, Any]:
    """The frozen entry of a cluster release: its location and manifest digest, the digest
    recomputed from the stored manifest (a manifest edited in the database stops the
    submission, as a changed file does)."""
    manifest = ReleaseManifest.from_dict(cluster["manifest"])
    if check and manifest.digest != cluster.get("digest"):
        raise ApplicationError(
            "The release manifest changed after Step 7 wrote it (its digest no longer "
            "matches): apply the de-identification again."
        )
    return {
        "path": cluster["location"],
        "sha256": manifest.digest,
        "bytes": sum(f.bytes for f in manifest.files),
        "rows": manifest.rows,
        "files": len(manifest.files),
    }


def _models(models: Any = None) -> Any:
    """The model classes the record is read from: the app's own, or a migration's
    historical ones (so a data migration builds the same record)."""
    if models is not None:
        return models
    return SimpleNamespace(
        Variable=Variable,
        ClassificationChange=ClassificationChange,
        HierarchySpec=HierarchySpec,
        Dataset=Dataset,
    )


def _variables(assessment: Assessment, models: Any = None) -> tuple[list[dict[str, Any]], int]:
    m = _models(models)
    Variable, ClassificationChange = m.Variable, m.ClassificationChange  # noqa: N806
    variables = list(
        Variable.objects.filter(dataset_id=assessment.dataset_id)
        .select_related("confirmed_by")
        .order_by("position")
    )
    changes = ClassificationChange.objects.filter(variable__dataset_id=assessment.dataset_id)
    counts: dict[Any, int] = {}
    for variable_id in changes.values_list("variable_id", flat=True):
        counts[variable_id] = counts.get(variable_id, 0) + 1
    rows = []
    for v in variables:
        confirmed_by = ""
        if v.confirmed_by is not None:  # attributes, not methods: a migration's model has none
            person = v.confirmed_by
            confirmed_by = f"{person.first_name} {person.last_name}".strip() or person.username
        rows.append(
            {
                "name": v.name,
                "position": v.position,
                "type": v.inferred_type,
                "role": v.role,
                "role_label": v.get_role_display() if v.role else "Not confirmed",
                "reason": v.reason or v.suggested_reason,
                "suggested_role": v.suggested_role,
                "suggested_label": v.get_suggested_role_display(),
                "suggested_reason": v.suggested_reason,
                "overridden": bool(v.role) and v.role != v.suggested_role,
                "keep_for_analysis": v.keep_for_analysis,
                "needs_review": v.needs_review,
                "confirmed_by": confirmed_by,
                "confirmed_at": v.confirmed_at,
                "changes": counts.get(v.id, 0),
            }
        )
    return rows, changes.count()


def _hierarchies(assessment: Assessment, models: Any = None) -> list[dict[str, Any]]:
    return [
        {
            "column": spec.column,
            "kind": spec.kind,
            "kind_label": spec.get_kind_display(),
            "params": spec.params,
            "arx_csv": spec.arx_csv,
            "height": spec.height,
            "level_labels": list(spec.level_labels or []),
        }
        for spec in _models(models)
        .HierarchySpec.objects.filter(assessment_id=assessment.id)
        .order_by("column")
    ]


def _dataset(assessment: Assessment, models: Any = None) -> dict[str, Any]:
    row: dict[str, Any] = (
        _models(models)
        .Dataset.objects.filter(id=assessment.dataset_id)
        .values("id", "name", "rows", "column_count", "sha256", "parquet_sha256")
        .first()
    ) or {}
    return {**row, "id": str(row.get("id", ""))}


def snapshot_content(
    assessment: Assessment, *, check_files: bool = True, models: Any = None
) -> dict[str, Any]:
    """Everything the decision on this version rests on, as JSON-safe data.

    ``models`` lets a data migration pass its historical model classes; ``assessment`` is
    then an unsaved instance of the app's Assessment holding the historical row's fields."""
    variables, change_count = _variables(assessment, models)
    directs = [v["name"] for v in variables if v["role"] == "direct"]
    config = deid_config(assessment, directs=directs)
    content = {
        "schema": SCHEMA,
        "assessment": {name: getattr(assessment, name) for name in FROZEN_FIELDS},
        "effective_release_model": assessment.effective_release_model,
        "deid_config": config.to_json(),
        # The threat model as it stood, its defaults resolved (known columns = the
        # quasi-identifiers of the frozen classification unless edited).
        "threat_model": threat_model_of(
            assessment,
            quasi=[v["name"] for v in variables if v["role"] == "quasi"],
            masking=config.to_json().get("masking"),
        ),
        "overall": overall_risk(assessment),
        "dataset": _dataset(assessment, models),
        "variables": variables,
        "classification_changes": change_count,
        "hierarchies": _hierarchies(assessment, models),
        "files": release_files(assessment, check=check_files),
    }
    # Through JSON once, as the database will store it: dates and ids become text, numbers
    # stay numbers (a threshold of 1e-07 must read back as a number, not as text).
    safe: dict[str, Any] = json.loads(json.dumps(content, cls=DjangoJSONEncoder))
    return safe


def content_sha256(content: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_dumps(content).encode("utf-8")).hexdigest()


def snapshot_take(
    *, assessment: Assessment, user: User | None, origin: str = "submission"
) -> AssessmentSnapshot:
    """Freeze the version's record. Call inside the transaction that locks the assessment."""
    content = snapshot_content(assessment, check_files=origin == "submission")
    return AssessmentSnapshot.objects.create(
        organization_id=assessment.organization_id,
        assessment=assessment,
        version=assessment.version,
        content=content,
        sha256=content_sha256(content),
        taken_by=user,
        origin=origin,
    )


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class AssessmentRecord:
    """What a review, a decision and a report show of one version."""

    assessment: Assessment  # for a frozen version, a read-only copy holding the frozen fields
    frozen: bool
    variables: list[dict[str, Any]]
    classification_changes: int
    hierarchies: list[dict[str, Any]]
    deid_config: DeidConfig  # completed (``apps.assessments.deidentify.deid_config``)
    overall: dict[str, Any] | None
    dataset: dict[str, Any]
    files: dict[str, Any] = field(default_factory=dict)
    snapshot: AssessmentSnapshot | None = None
    threat_model: dict[str, Any] = field(default_factory=dict)

    @property
    def quasi_identifiers(self) -> list[str]:
        return [v["name"] for v in self.variables if v["role"] == "quasi"]

    def digests(self) -> dict[str, str]:
        """The digests a decision records: the upload, its Parquet copy, the release files."""
        files = self.files
        return {
            "upload": self.dataset.get("sha256", ""),
            "input_parquet": self.dataset.get("parquet_sha256", ""),
            "release_parquet": (files.get("release_parquet") or {}).get("sha256", ""),
            "release_csv": (files.get("release_csv") or {}).get("sha256", ""),
            "release_manifest": (files.get("release_manifest") or {}).get("sha256", ""),
            # each further file of the release (a linked-tables release's tables)
            **{k: f.get("sha256", "") for k, f in files.items() if k.startswith(FILE_PREFIX)},
        }

    def release_tables(self) -> list[dict[str, Any]]:
        """The frozen further files of the release (a linked-tables release's tables in
        Parquet and CSV): name, table, role, format, rows, persons, SHA-256, bytes; in the
        order the apply job wrote them (the stored record does not keep key order)."""
        order = [file_key(str(f["name"])) for f in listed_files(self.assessment.apply_result)]
        keys = [k for k in self.files if k.startswith(FILE_PREFIX)]
        keys.sort(key=lambda k: order.index(k) if k in order else len(order))
        return [{"key": k, **self.files[k]} for k in keys]


def _frozen_view(assessment: Assessment, content: dict[str, Any]) -> Assessment:
    """An unsaved copy of the assessment holding the snapshot's fields; it refuses to be
    saved (``Assessment.read_only``)."""
    fields = dict(content["assessment"])
    if fields.get("agreement_date"):
        fields["agreement_date"] = dt.date.fromisoformat(fields["agreement_date"])
    view = Assessment(
        id=assessment.id,
        organization=assessment.organization,
        dataset=assessment.dataset,
        status=assessment.status,
        previous_id=assessment.previous_id,
        submitted_at=assessment.submitted_at,
        decided_at=assessment.decided_at,
        created_by_id=assessment.created_by_id,
        created_at=assessment.created_at,
        updated_at=assessment.updated_at,
        **fields,
    )
    view._state.adding = False
    view.read_only = True
    return view


def _with_datetimes(variables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for v in variables:
        at = v.get("confirmed_at")
        out.append({**v, "confirmed_at": parse_datetime(at) if isinstance(at, str) else at})
    return out


def assessment_record(assessment: Assessment) -> AssessmentRecord:
    """The record of a version: its snapshot once submitted, the live rows while a draft.

    A submitted or decided version without a snapshot cannot be shown as decided: that would
    read rows that may have changed since."""
    snapshot = AssessmentSnapshot.objects.filter(assessment_id=assessment.id).first()
    if snapshot is not None:
        content = snapshot.content
        view = _frozen_view(assessment, content)
        frozen_threat = content.get("threat_model") or threat_model_of(
            view,
            quasi=[v["name"] for v in content["variables"] if v["role"] == "quasi"],
            masking=(content.get("deid_config") or {}).get("masking"),
        )
        return AssessmentRecord(
            assessment=view,
            frozen=True,
            variables=_with_datetimes(content["variables"]),
            classification_changes=int(content.get("classification_changes") or 0),
            hierarchies=content["hierarchies"],
            deid_config=DeidConfig.from_json(content["deid_config"]),
            overall=content["overall"],
            dataset=content["dataset"],
            files=content["files"],
            snapshot=snapshot,
            threat_model=frozen_threat,
        )
    if assessment.status != AssessmentStatus.DRAFT:
        raise ApplicationError(
            f"Version {assessment.version} is {assessment.get_status_display().lower()} but has "
            "no frozen record; an administrator must run the migrations."
        )
    variables, change_count = _variables(assessment)
    config = deid_config(assessment)
    return AssessmentRecord(
        assessment=assessment,
        frozen=False,
        variables=variables,
        classification_changes=change_count,
        hierarchies=_hierarchies(assessment),
        deid_config=config,
        threat_model=threat_model_of(
            assessment,
            quasi=[v["name"] for v in variables if v["role"] == "quasi"],
            masking=config.to_json().get("masking"),
        ),
        overall=overall_risk(assessment),
        dataset=_dataset(assessment),
        files=release_files(assessment, check=False),
    )
