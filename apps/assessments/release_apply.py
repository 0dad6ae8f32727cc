"""Step 7's release: the apply job that writes the de-identified files (masked,
generalized, suppressed, with any further techniques), measures them for Step 8
(`release_figures`), scans their text, and keeps the keys apart (`release_secrets`).
The settings and the search that come before it are in `apps.assessments.deidentify`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments.configuration import DeidConfig, Technique
from apps.assessments.deidentify import deid_config, masking_check, search_target
from apps.assessments.domains import KEYED_METHODS, domain_summary, release_pseudonym_keys
from apps.assessments.drafts import assessment_editable, assessment_lock_draft
from apps.assessments.hierarchies import hierarchies_ensure
from apps.assessments.models import Assessment
from apps.assessments.persons import refuse_longitudinal_deidentify, refuse_row_search
from apps.assessments.population import population_figures
from apps.assessments.privacy_models import encode_for_search
from apps.assessments.release_figures import (
    _distributions,
    _generalization_only,
    release_rows_checks,
)
from apps.assessments.release_files import (
    _apply_folders,
    _discard_unreferenced,
    release_store,
)
from apps.assessments.release_secrets import release_secrets_store
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.services import assessment_job_start
from apps.assessments.techniques import run_techniques
from apps.core.errors import ApplicationError
from apps.datasets import storage
from apps.datasets.storage import delete_quietly, local_path, sha256_of
from apps.engine.apply import (
    ApplyResult,
    apply_levels,
    apply_solution,
    write_release,
)
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.formula_guard import guard_formulas_lazy
from apps.engine.loss import EntropyMetric, entropy_percent
from apps.engine.masking import MaskMethod, MaskSpec
from apps.engine.reading import read_table
from apps.engine.release_measure import measure_release
from apps.engine.risk import risk_profile
from apps.engine.search.report import node_missingness, starred_cells, variable_distributions
from apps.jobs.context import JobContext
from apps.jobs.models import Job, JobStatus

logger = logging.getLogger(__name__)


def suppression_share(rows: int, suppressed: int) -> float:
    return suppressed / rows if rows else 0.0


# --------------------------------------------------------------------------- apply


@transaction.atomic
def assessment_start_apply(*, assessment: Assessment, user: User) -> Job:
    assessment_editable(assessment)
    refuse_longitudinal_deidentify(assessment)
    form = assessment.deid.release_form
    if form.form != "microdata":
        # one release per version: the one its release form says (issue 28)
        raise ApplicationError(
            f"The release form is {form.title.lower()}: write it from Step 7's release form, "
            "or choose de-identified records there first.",
            {"field": "form"},
            status=409,
        )
    if not assessment.chosen_levels:
        raise ApplicationError("Run the search and choose a solution first.", status=409)
    return assessment_job_start(
        assessment=assessment, user=user, kind="apply", levels=assessment.chosen_levels
    )


def _mask_specs(config: DeidConfig, keys: dict[str, bytes]) -> dict[str, Any]:
    """The engine's masking of each direct identifier; ``keys``: the keyed methods' keys
    (``domains.release_pseudonym_keys``: the domain's, or new ones)."""
    return {
        column: MaskSpec(
            method=cast("MaskMethod", masking.method),  # checked by masking_check
            length=masking.pseudonym_length,
            keep_leading=masking.leading,
            keep_trailing=masking.trailing,
            key=keys.get(column) if masking.method in KEYED_METHODS else None,
        )
        for column, masking in config.masking.items()
    }


def assessment_apply_handler(job: Job, context: JobContext) -> dict[str, Any]:
    import tempfile

    import polars as pl

    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    done = assessment.apply_result or {}
    if done.get("job") == str(job.id):
        # Delivered again after its worker died between writing the result and ending the
        # job: the release is in place; nothing to do again.
        return _apply_summary(done)
    # Files of an earlier attempt of this job (its worker died before they were swapped in).
    _discard_unreferenced(assessment, job)
    refuse_row_search(assessment)
    levels: dict[str, int] = job.params["levels"]
    quasi = quasi_identifiers(assessment)
    config = deid_config(assessment)
    # Settings saved before a rule on masking existed are refused here, as on the page.
    masking_check(assessment, config.masking)
    masking_json = {c: m.to_json() for c, m in config.masking.items()}
    # The keys of keyed pseudonyms: the Step 1 domain's, or new ones (unlinkable).
    keys = release_pseudonym_keys(
        assessment, [c for c, m in config.masking.items() if m.method in KEYED_METHODS]
    )
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    context.progress(5, "Encoding", force=True)
    release_folder, secrets_folder = _apply_folders(assessment, job)
    stored: list[str] = []
    with (
        local_path(assessment.dataset.parquet_path) as path,
        tempfile.TemporaryDirectory(prefix="deidweb-apply-") as scratch,
    ):
        data = read_table(path)
        inputs = encode_for_search(data, quasi, specs, config)
        problem, table = inputs.problem, inputs.sensitive
        try:
            criterion = criterion_for_release(
                target["release_model"], target["threshold"], target["context_risk"]
            )
            context.progress(20, "Masking, generalizing, suppressing and shuffling", force=True)
            out = Path(scratch) / "release.parquet"
            techniques = list(config.techniques or ())
            if techniques:
                applied, technique_results = _apply_with_techniques(
                    data, inputs, levels, criterion, config, out, techniques, quasi, keys
                )
            else:
                technique_results = []
                applied = apply_solution(
                    data,
                    problem=problem,
                    lookups=inputs.lookups,
                    dictionaries=inputs.dictionaries,
                    levels=levels,
                    criterion=criterion,
                    out=out,
                    suppression_limit=float(config.suppression_limit),
                    direct=_mask_specs(config, keys),
                    sensitive=table,
                )
        except EngineError as exc:
            raise ApplicationError(f"The de-identification could not be applied: {exc}") from None
        context.progress(70, "Writing the release files", force=True)
        # The release is read as a query over its file, never whole: the CSV is written
        # batch by batch and every measure below streams (any number of rows).
        released = pl.scan_parquet(applied.path)
        csv_path = Path(scratch) / "release.csv"
        guard = bool(config.csv_formula_guard)
        csv_frame, guarded_cells = guard_formulas_lazy(released) if guard else (released, {})
        csv_frame.sink_csv(csv_path)
        level_tuple = tuple(levels[q] for q in quasi)
        k = criterion.release_size
        # With privacy models, groups failing them are suppressed too (not only small ones).
        dropped = (
            table.tuple_suppressed(problem, level_tuple, criterion) if table is not None else None
        )
        if any(t["technique"] == "local_suppression" for t in technique_results):
            import numpy as np

            # Local suppression keeps every record (its blanks show in Step 8's variables).
            dropped = np.zeros(len(problem.counts), dtype=bool)
        distributions = variable_distributions(problem, level_tuple, k, suppressed=dropped)
        missing = node_missingness(problem, level_tuple, k, suppressed=dropped)
        starred = starred_cells(problem, level_tuple, k, suppressed=dropped)
        maximum = EntropyMetric(problem).maximum()
        before = risk_profile(problem.counts)
        context.progress(80, "Measuring the release: attribute disclosure, small cells", force=True)

        checks = release_rows_checks(
            assessment,
            data,
            released,
            quasi=quasi,
            specs=specs,
            levels=levels,
            config=config,
            target=target,
            release_size=k,
            technique_results=technique_results,
            progress=context.progress,
        )
        measure = applied.measure
        try:
            parquet_name = storage.store(applied.path, f"{release_folder}/deidentified.parquet")
            stored.append(parquet_name)
            csv_name = storage.store(csv_path, f"{release_folder}/deidentified.csv")
            stored.append(csv_name)
            secrets_name, wrapped_key = release_secrets_store(
                assessment, applied.secrets, secrets_folder, Path(scratch)
            )
            if secrets_name:
                stored.append(secrets_name)
            result = {
                "job": str(job.id),
                "levels": levels,
                "level_labels": {q: specs[q].level_labels[levels[q]] for q in quasi},
                "quasi_identifiers": quasi,
                "masking": masking_json,
                # whose key the keyed pseudonyms share (None: this release's own keys)
                "pseudonym_domain": domain_summary(assessment),
                "privacy_models": [m.to_json() for m in config.privacy_models],
                "techniques": technique_results,
                "generalization_only": _generalization_only(assessment, levels),
                "rows_in": measure.rows_in,
                "rows_out": measure.rows_out,
                "suppressed_rows": measure.suppressed_rows,
                "suppressed_share": suppression_share(measure.rows_in, measure.suppressed_rows),
                "passes": measure.passes,
                "risk_measure": target["risk_measure"],
                "data_risk_target": target["data_risk_target"],
                "risk_before": {
                    **before.to_dict(),
                    "data_risk": before.data_risk(target["release_model"]),
                },
                "risk_after": {
                    **measure.risk.to_dict(),
                    "data_risk": measure.risk.data_risk(target["release_model"]),
                },
                # attacker models and, for a sample, population uniques of the release (#17)
                "release_population": population_figures(
                    assessment,
                    measure.risk.class_size_counts,
                    threshold=target["data_risk_target"],
                ),
                "utility": {
                    **measure.information_loss,
                    "entropy_maximum": maximum,
                    "entropy_percent": entropy_percent(
                        measure.information_loss["entropy"], maximum
                    ),
                    "record_missingness": missing.records,
                    "cell_missingness": missing.cells,
                    # the quasi-identifier cells released as * (not counted as missing)
                    "starred": starred.to_dict(),
                    # the metric Step 7's search minimized: Step 8's headline
                    "metric": config.metric,
                },
                "distributions": _distributions(problem, level_tuple, distributions),
                # attribute disclosure, small cells, the other released columns, the
                # text scan, and the attack tests (singling out, linkability, inference)
                **checks,
                "sha256": {"parquet": sha256_of(applied.path), "csv": sha256_of(csv_path)},
                "columns": released.collect_schema().names(),
                "has_secrets": bool(secrets_name),
                # text cells of the CSV prefixed with ' per column (the Parquet is as is)
                "csv_formula_guard": {"enabled": guard, "cells": guarded_cells},
            }
            with transaction.atomic():
                locked = assessment_lock_draft(assessment.id)
                if locked.deid.release_form.form != "microdata":
                    raise ApplicationError(
                        "The release form changed while the records were written: the "
                        "version now releases another form (Step 7)."
                    )
                release_store(
                    locked,
                    result,
                    files=(parquet_name, csv_name, secrets_name),
                    wrapped_key=wrapped_key,
                    kept=stored,
                )
        except Exception:
            delete_quietly(*stored)
            raise
    return _apply_summary(result)


def _apply_summary(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "rows_out": result["rows_out"],
        "suppressed_rows": result["suppressed_rows"],
        "passes": result["passes"],
    }


def assessment_apply_finished(job: Job) -> None:
    """An apply job that did not succeed (failed, cancelled, its worker lost) leaves no
    files behind. Never raises."""
    assessment_id = (job.params or {}).get("assessment_id")
    if job.status == JobStatus.SUCCEEDED or not assessment_id:
        return
    try:
        assessment = Assessment.objects.filter(
            id=str(assessment_id), organization_id=job.organization_id
        ).first()
        if assessment is not None:
            _discard_unreferenced(assessment, job)
    except Exception:
        logger.exception("could not clean up the files of apply job %s", job.id)


def _apply_with_techniques(
    data: Any,
    inputs: Any,
    levels: dict[str, int],
    criterion: Any,
    config: DeidConfig,
    out: Any,
    techniques: list[Technique],
    quasi: list[str],
    keys: dict[str, bytes],
) -> tuple[Any, list[dict[str, Any]]]:
    """Write the release with Step 7's further techniques (apps.assessments.techniques).

    With local suppression no record is suppressed whole: the generalized data keeps every
    record and single values are blanked until every group reaches the release size. The
    other techniques then change the variables they were set on. The file is measured
    like any release (a blank counts as a value of its own)."""
    k = criterion.release_size
    local = any(t.technique == "local_suppression" for t in techniques)
    if local:
        frame, secret = apply_levels(
            data,
            lookups=inputs.lookups,
            dictionaries=inputs.dictionaries,
            levels=levels,
            release_size=1,
            direct=_mask_specs(config, keys),
        )
    else:
        first = apply_solution(
            data,
            problem=inputs.problem,
            lookups=inputs.lookups,
            dictionaries=inputs.dictionaries,
            levels=levels,
            criterion=criterion,
            out=out,
            suppression_limit=float(config.suppression_limit),
            direct=_mask_specs(config, keys),
            sensitive=inputs.sensitive,
        )
        import polars as pl

        frame, secret = pl.read_parquet(first.path), first.secrets
    frame, results = run_techniques(frame, techniques, quasi=quasi, k=k)
    path = write_release(frame, out)
    measure = measure_release(
        path,
        problem=inputs.problem,
        lookups=inputs.lookups,
        levels=levels,
        criterion=criterion,
        suppression_limit=float(config.suppression_limit),
        sensitive=inputs.sensitive if not local else None,
    )
    return ApplyResult(path=path, seed_used=False, measure=measure, secrets=secret), results
