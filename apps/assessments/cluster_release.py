"""Step 7's release of a cluster table (issue #27): written back to the cluster, with a
manifest whose digest is what the reviewer approves (docs/spark.md).

The apply job of an uploaded data set writes files into deidweb's storage
(`apps.assessments.release_apply`); the one of a cluster table runs the same release —
the same levels, masking, suppression of small classes and of classes failing a privacy
model, row-local techniques — as Spark jobs on the organization's cluster
(`apps.engine.rows.release_solution`), below the release prefix the organization allows.
deidweb keeps only the manifest (files, rows, SHA-256 of each file, its digest) and the
keys (sealed, in its storage, never on the cluster).

The risk and utility figures Step 8 shows are re-measured from the written release's own
histogram, counted on the cluster. The checks that read released rows beside original
ones (attribute disclosure, the other released columns, the text scan, the attack tests)
run on at most ``MEASURED_ROWS`` rows of each read back from the cluster — all of them for
a table that size; for a larger one ``measured_on`` says how many, and the report shows it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.db import transaction

from apps.assessments import release_apply, release_figures, release_files, release_secrets
from apps.assessments.configuration import Technique
from apps.assessments.deidentify import deid_config, masking_check, search_target
from apps.assessments.domains import KEYED_METHODS, domain_summary, release_pseudonym_keys
from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.hierarchies import hierarchies_ensure
from apps.assessments.models import Assessment
from apps.assessments.persons import refuse_longitudinal_deidentify
from apps.assessments.population import population_figures
from apps.assessments.search_job import search_inputs
from apps.assessments.techniques import TITLES, engine_params
from apps.core.errors import ApplicationError
from apps.datasets.cluster import cluster_source, dataset_is_cluster, job_progress
from apps.datasets.cluster_connection import cluster_engine, release_prefix_of
from apps.datasets.cluster_paths import release_path_check
from apps.datasets.storage import delete_quietly
from apps.engine.errors import EngineError
from apps.engine.loss import EntropyMetric, entropy_percent
from apps.engine.risk import risk_profile
from apps.engine.rows import ReleaseManifest, TableSource, cluster_refusal, release_solution
from apps.engine.search.report import node_missingness, starred_cells, variable_distributions
from apps.jobs.context import JobContext
from apps.jobs.models import Job

#: Rows of the original and of the release read back for the row-reading checks.
MEASURED_ROWS = 200_000


def assessment_apply_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """The apply job (``assessment-apply``): a cluster table's release here, an uploaded
    data set's in `apps.assessments.release_apply`."""
    assessment = Assessment.objects.select_related("dataset", "organization").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    if not dataset_is_cluster(assessment.dataset):
        return release_apply.assessment_apply_handler(job, context)
    return cluster_apply(job, context, assessment)


def cluster_techniques(entries: list[Technique], *, quasi: list[str], k: int) -> list[Any]:
    """The engine's parameters of Step 7's techniques; one that needs the whole data at
    once is refused with the engine's reason (`cluster_refusal`)."""
    params = []
    for entry in entries:
        p = engine_params(entry, quasi=quasi, k=k)
        refusal = cluster_refusal(p)
        if refusal:
            raise ApplicationError(f"{TITLES[entry.technique]}: {refusal}")
        params.append(p)
    return params


def release_location(assessment: Assessment, job: Job) -> str:
    """Where the release is written: below the organization's release prefix, in a folder
    of this job's attempt (a re-run after a lost worker never writes over another's)."""
    prefix = release_prefix_of(assessment.organization_id)
    folder = (
        f"{prefix}/{assessment.organization.slug}/assessment-{assessment.id}"
        f"/v{assessment.version}/{job.id}-{job.attempts}"
    )
    return release_path_check(prefix, folder)


def _technique_summary(entry: Technique) -> dict[str, Any]:
    """What Step 8 and the report list of a technique run on the cluster (its effect on
    the released column is measured by the release's checks, not per technique)."""
    return {
        "technique": entry.technique,
        "title": TITLES[entry.technique],
        "explanation": "Run on the cluster, batch by batch, next to the data.",
        "source": "",
        "parameters": {k: v for k, v in entry.to_json().items() if k != "technique"},
        "changed": [entry.column] if entry.column else [],
        "rule": "",
        "rule_explanation": "",
        "exact_max_risk": None,
        "linkage_share": None,
        "utility": [],
    }


def cluster_apply(job: Job, context: JobContext, assessment: Assessment) -> dict[str, Any]:
    done = assessment.apply_result or {}
    if done.get("job") == str(job.id):
        return _summary(done)  # delivered again after its result was stored
    refuse_longitudinal_deidentify(assessment)
    levels: dict[str, int] = job.params["levels"]
    config = deid_config(assessment)
    masking_check(assessment, config.masking)
    masking_json = {c: m.to_json() for c, m in config.masking.items()}
    # The keys of keyed pseudonyms: the Step 1 domain's, or new ones (unlinkable).
    keys = release_pseudonym_keys(
        assessment, [c for c, m in config.masking.items() if m.method in KEYED_METHODS]
    )
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    source = cluster_source(assessment.dataset)
    assert source is not None
    context.progress(3, "Counting the equivalence classes on the cluster", force=True)
    inputs = search_inputs(assessment, specs, progress=job_progress(context, 3, 15))
    quasi, problem, table, criterion = (
        inputs.quasi, inputs.problem, inputs.sensitive, inputs.criterion
    )  # fmt: skip
    k = criterion.release_size
    entries = list(config.techniques or ())
    techniques = cluster_techniques(entries, quasi=quasi, k=k)
    out = release_location(assessment, job)
    context.progress(
        15, "Masking, generalizing, suppressing and writing on the cluster", force=True
    )
    with cluster_engine(assessment.organization_id) as engine:
        try:
            released = release_solution(
                engine,
                source,
                problem=problem,
                lookups=inputs.encoded.lookups,
                dictionaries=inputs.encoded.dictionaries,
                levels=levels,
                criterion=criterion,
                out=out,
                suppression_limit=float(config.suppression_limit),
                direct=release_apply._mask_specs(config, keys),
                techniques=techniques,
                sensitive=table,
                progress=job_progress(context, 15, 75),
            )
            context.progress(76, "Reading rows back for the release's checks", force=True)
            original = engine.head(source, MEASURED_ROWS)
            written = TableSource(path=released.written.location, format="parquet")
            released_rows = engine.head(written, MEASURED_ROWS)
        except EngineError as exc:
            raise ApplicationError(
                f"The de-identification could not be applied on the cluster: {exc}"
            ) from None
    checks = release_figures.release_rows_checks(
        assessment,
        original.lazy(),
        released_rows.lazy(),
        quasi=quasi,
        specs=specs,
        levels=levels,
        config=config,
        target=target,
        release_size=k,
        technique_results=[],
        progress=context.progress,
    )
    context.progress(92, "Measuring the release", force=True)
    measure, manifest = released.measure, released.written.manifest
    level_tuple = tuple(levels[q] for q in quasi)
    dropped = table.tuple_suppressed(problem, level_tuple, criterion) if table is not None else None
    distributions = variable_distributions(problem, level_tuple, k, suppressed=dropped)
    missing = node_missingness(problem, level_tuple, k, suppressed=dropped)
    starred = starred_cells(problem, level_tuple, k, suppressed=dropped)
    maximum = EntropyMetric(problem).maximum()
    before = risk_profile(problem.counts)
    model = target["release_model"]
    result = {
        "job": str(job.id),
        "engine": "spark",
        "levels": levels,
        "level_labels": {q: specs[q].level_labels[levels[q]] for q in quasi},
        "quasi_identifiers": quasi,
        "masking": masking_json,
        # whose key the keyed pseudonyms share (None: this release's own keys)
        "pseudonym_domain": domain_summary(assessment),
        "privacy_models": [m.to_json() for m in config.privacy_models],
        "techniques": [_technique_summary(e) for e in entries],
        "generalization_only": release_figures._generalization_only(assessment, levels),
        "rows_in": measure.rows_in,
        "rows_out": measure.rows_out,
        "suppressed_rows": measure.suppressed_rows,
        "suppressed_share": release_apply.suppression_share(
            measure.rows_in, measure.suppressed_rows
        ),
        "passes": measure.passes,
        "risk_measure": target["risk_measure"],
        "data_risk_target": target["data_risk_target"],
        "risk_before": {**before.to_dict(), "data_risk": before.data_risk(model)},
        "risk_after": {**measure.risk.to_dict(), "data_risk": measure.risk.data_risk(model)},
        "release_population": population_figures(
            assessment, measure.risk.class_size_counts, threshold=target["data_risk_target"]
        ),
        "utility": {
            **measure.information_loss,
            "entropy_maximum": maximum,
            "entropy_percent": entropy_percent(measure.information_loss["entropy"], maximum),
            "record_missingness": missing.records,
            "cell_missingness": missing.cells,
            "starred": starred.to_dict(),
            "metric": config.metric,
        },
        "distributions": release_figures._distributions(problem, level_tuple, distributions),
        **checks,
        "measured_on": {
            "original_rows": original.height,
            "released_rows": released_rows.height,
            "of_released": measure.rows_out,
        },
        "sha256": {},
        "cluster_release": {
            "location": released.written.location,
            "manifest": manifest.to_dict(),
            "digest": manifest.digest,
        },
        "columns": released_rows.columns,
        "has_secrets": False,
        "csv_formula_guard": {"enabled": False, "cells": {}},
    }
    _store(assessment, job, result, released.written.secrets)
    return _summary(result)


def _store(assessment: Assessment, job: Job, result: dict[str, Any], secrets: Any) -> None:
    _, secrets_folder = release_files._apply_folders(assessment, job)
    with tempfile.TemporaryDirectory(prefix="deidweb-apply-") as scratch:
        secrets_name, wrapped_key = release_secrets.release_secrets_store(
            assessment, secrets, secrets_folder, Path(scratch)
        )
    result["has_secrets"] = bool(secrets_name)
    try:
        with transaction.atomic():
            locked = assessment_lock_draft(assessment.id)
            release_files.release_store(
                locked,
                result,
                files=("", "", secrets_name),
                wrapped_key=wrapped_key,
                kept=[secrets_name],
            )
    except Exception:
        delete_quietly(secrets_name)
        raise


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "rows_out": result["rows_out"],
        "suppressed_rows": result["suppressed_rows"],
        "passes": result["passes"],
        "manifest_digest": (result.get("cluster_release") or {}).get("digest", ""),
    }


def cluster_manifest(assessment: Assessment) -> ReleaseManifest | None:
    """The manifest of a cluster release as the apply job stored it (None otherwise)."""
    cluster = (assessment.apply_result or {}).get("cluster_release")
    return ReleaseManifest.from_dict(cluster["manifest"]) if cluster else None
