"""Step 7 (masking, generalization, suppression found by the optimal search) and the
output that Step 8 measures. Search and apply run as jobs."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments import steps
from apps.assessments.hierarchies import hierarchies_ensure
from apps.assessments.models import SECRETS_BUNDLE_PURPOSE, Assessment, HierarchySpec
from apps.assessments.selectors import overall_risk
from apps.assessments.services import _editable, assessment_lock_draft, quasi_identifiers
from apps.classification.models import Variable
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.frame import read_table
from apps.engine.lattice import MAX_NODES
from apps.engine.masking import mapped_values_refusal
from apps.engine.progress import SearchProgress
from apps.engine.search import optimal_search
from apps.engine.search.problem import lattice_tops
from apps.jobs.models import Job, JobStatus
from apps.jobs.services import JobContext, job_create

logger = logging.getLogger(__name__)

METRICS = ("loss", "entropy", "precision", "discernibility", "aecs")
MASKING_METHODS = ("remove", "hmac", "random", "encrypt", "mask", "scrub")
DEFAULT_SUPPRESSION_LIMIT = 0.05


def direct_identifiers(assessment: Assessment) -> list[str]:
    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="direct")
        .order_by("position")
        .values_list("name", flat=True)
    )


def deid_config(assessment: Assessment, *, directs: list[str] | None = None) -> dict[str, Any]:
    """The stored configuration completed with defaults: every direct identifier removed,
    5% suppression, the `loss` metric, no maximum levels, the released CSV guarded against
    spreadsheet formulas. ``directs`` overrides the data set's current direct identifiers
    (a frozen record passes the roles it froze)."""
    config = dict(assessment.deid_config or {})
    masking = dict(config.get("masking") or {})
    if directs is None:
        directs = direct_identifiers(assessment)
    for column in directs:
        masking.setdefault(column, {"method": "remove"})
    config["masking"] = {c: m for c, m in masking.items() if c in directs}
    config.setdefault("suppression_limit", DEFAULT_SUPPRESSION_LIMIT)
    config.setdefault("metric", "loss")
    config.setdefault("max_levels", {})
    config.setdefault("privacy_models", [])
    if directs is None and config["privacy_models"]:
        from apps.assessments.services import sensitive_columns

        # a variable no longer classified as sensitive loses its model
        still = set(sensitive_columns(assessment))
        config["privacy_models"] = [m for m in config["privacy_models"] if m["column"] in still]
    config.setdefault("csv_formula_guard", True)
    return config


PSEUDONYM_LENGTHS = (8, 64)  # hex characters: 32 to 256 bits (apps.engine.masking)
MAX_KEPT_CHARACTERS = 1000  # of character masking; keeping more than a value has keeps it all


def _check_masking_numbers(column: str, spec: dict[str, Any]) -> None:
    """Refused here, not when the file is written: a pseudonym of 3 hex characters has 4,096
    values (collisions, and a table an intruder can enumerate); 10^9 is not a length."""
    low, high = PSEUDONYM_LENGTHS
    length = spec.get("length")
    if length is not None and (
        not isinstance(length, int) or isinstance(length, bool) or not low <= length <= high
    ):
        raise ApplicationError(
            f"The pseudonym length of '{column}' must be {low} to {high} hex characters, "
            f"not {length!r}.",
            {"column": column, "field": "length"},
        )
    for field, label in (("keep_leading", "leading"), ("keep_trailing", "trailing")):
        kept = spec.get(field, 0)
        if (
            not isinstance(kept, int)
            or isinstance(kept, bool)
            or not 0 <= kept <= MAX_KEPT_CHARACTERS
        ):
            raise ApplicationError(
                f"The number of {label} characters kept of '{column}' must be a whole number "
                f"from 0 to {MAX_KEPT_CHARACTERS}, not {kept!r}.",
                {"column": column, "field": field},
            )


def _distinct_values(assessment: Assessment, column: str) -> int:
    """The column's distinct values from the data set's profile (0 if not profiled)."""
    for entry in (assessment.dataset.profile or {}).get("columns") or []:
        if entry.get("name") == column:
            return int(entry.get("distinct") or 0)
    return 0


@transaction.atomic
def deid_config_set(
    *,
    assessment: Assessment,
    masking: dict[str, dict[str, Any]],
    suppression_limit: float,
    metric: str,
    max_levels: dict[str, int],
    privacy_models: list[dict[str, Any]] | None = None,
    csv_formula_guard: bool = True,
) -> None:
    """Step 7's settings. ``privacy_models`` (``[{"column", "spec"}]``, see
    ``apps.assessments.privacy_models``) — None keeps the current ones.
    ``csv_formula_guard``: prefix text cells of the released CSV that a spreadsheet would
    run as a formula (``apps.engine.formula_guard``); off only for analysis pipelines that
    need the raw values. The Parquet file is never altered."""
    from apps.assessments.privacy_models import privacy_models_check
    from apps.assessments.services import sensitive_columns

    _editable(assessment)
    directs = set(direct_identifiers(assessment))
    for column, spec in masking.items():
        if column not in directs:
            raise ApplicationError(f"'{column}' is not a direct identifier.", {"column": column})
        if spec.get("method") not in MASKING_METHODS:
            raise ApplicationError(
                f"'{spec.get('method')}' is not a masking method ({column}).", {"column": column}
            )
        _check_masking_numbers(column, spec)
        refusal = mapped_values_refusal(
            column, spec["method"], _distinct_values(assessment, column)
        )
        if refusal:
            raise ApplicationError(refusal, {"column": column})
        if spec["method"] == "mask":
            keep = int(spec.get("keep_leading", 0) or 0) + int(spec.get("keep_trailing", 0) or 0)
            if keep <= 0:
                raise ApplicationError(
                    f"Character masking of '{column}' keeps nothing: say how many leading or "
                    "trailing characters to keep, or remove the column.",
                    {"column": column},
                )
    if not 0 <= suppression_limit <= 1:
        raise ApplicationError(
            "The suppression limit is a share between 0 and 1 (e.g. 0.05).",
            {"field": "suppression_limit"},
        )
    if metric not in METRICS:
        raise ApplicationError(
            f"'{metric}' is not an information-loss metric.", {"field": "metric"}
        )
    specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    for column, level in max_levels.items():
        hierarchy = specs.get(column)
        if hierarchy is None:
            raise ApplicationError(f"'{column}' has no hierarchy.", {"column": column})
        if not 0 <= int(level) <= hierarchy.height:
            raise ApplicationError(
                f"The maximum level of '{column}' must be between 0 and {hierarchy.height}.",
                {"column": column},
            )
    old = deid_config(assessment)
    sensitive = sensitive_columns(assessment)
    numeric = set(
        Variable.objects.filter(
            dataset=assessment.dataset, name__in=sensitive, inferred_type__in=("integer", "decimal")
        ).values_list("name", flat=True)
    )
    models = privacy_models_check(
        old["privacy_models"] if privacy_models is None else privacy_models,
        sensitive=sensitive,
        numeric=sorted(numeric),
    )
    new = {
        "masking": masking,
        "suppression_limit": suppression_limit,
        "metric": metric,
        "max_levels": {c: int(v) for c, v in max_levels.items()},
        "privacy_models": [{"column": m["column"], "spec": m["spec"]} for m in models],
        "csv_formula_guard": bool(csv_formula_guard),
    }
    assessment.deid_config = {
        **new,
        # the analyst's reading of detections in released text (apps.assessments.freetext)
        "identifiers_reviewed": old.get("identifiers_reviewed") or {},
    }
    search_inputs_changed = any(
        old.get(k) != new[k]
        for k in ("suppression_limit", "metric", "max_levels", "privacy_models")
    )
    if search_inputs_changed:
        assessment.search_result = None
        assessment.chosen_levels = None
    if assessment.apply_result is not None and old != {**old, **new}:
        steps.mark_stale(assessment, "deidentify")
    assessment.save(
        update_fields=["deid_config", "search_result", "chosen_levels", "step_state", "updated_at"]
    )


def search_target(assessment: Assessment) -> dict[str, Any]:
    overall = overall_risk(assessment)
    if overall is None:
        raise ApplicationError(
            "Set the threshold (Step 3) and the context risk (Step 5) first: the search needs "
            "the data-risk target of Step 6.",
            {"step": "overall-risk"},
        )
    return overall


@transaction.atomic
def assessment_start_search(*, assessment: Assessment, user: User) -> Job:
    _editable(assessment)
    search_target(assessment)
    if not quasi_identifiers(assessment):
        raise ApplicationError(
            "No confirmed quasi-identifier: finish Step 2 first.", {"step": "classification"}
        )
    hierarchies_ensure(assessment=assessment)
    job = job_create(
        organization=assessment.organization,
        kind="assessment-search",
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id)},
        created_by=user,
    )
    Assessment.objects.filter(id=assessment.id).update(search_job=job)
    assessment.search_job = job
    return job


def _node(node: Any, quasi: list[str]) -> dict[str, Any]:
    return {
        "levels": dict(zip(quasi, node.levels, strict=True)),
        "passes": node.passes,
        "suppressed_rows": node.suppressed_rows,
        "equivalence_classes": node.equivalence_classes,
        "min_class_size": node.min_class_size,
        "max_risk": node.max_risk,
        "average_risk": node.average_risk,
        "information_loss": node.information_loss,
    }


def assessment_search_handler(job: Job, context: JobContext) -> dict[str, Any]:
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    quasi = quasi_identifiers(assessment)
    config = deid_config(assessment)
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    context.progress(3, "Encoding the quasi-identifiers", force=True)
    from apps.assessments.privacy_models import search_inputs

    with local_path(assessment.dataset.parquet_path) as path:
        encoded = search_inputs(read_table(path), quasi, specs, config)
    problem = encoded.problem
    try:
        criterion = criterion_for_release(
            target["release_model"], target["threshold"], target["context_risk"]
        )
    except EngineError as exc:
        raise ApplicationError(f"Step 7 cannot start: {exc}") from None

    def listen(progress: SearchProgress) -> None:
        best = (
            ""
            if progress.best_loss is None
            else f"; best information loss so far {progress.best_loss:.4f}"
        )
        context.progress(
            5 + 90 * progress.fraction,
            f"{progress.nodes_evaluated:,} of {progress.nodes_total:,} generalizations evaluated{best}",
        )

    tops = lattice_tops(problem, config["max_levels"] or None)
    if math.prod(t + 1 for t in tops) > MAX_NODES:
        if encoded.sensitive is not None:
            raise ApplicationError(
                "Privacy models on sensitive variables need the exact search, and this lattice "
                f"has more than {MAX_NODES:,} combinations: drop or merge quasi-identifiers, or "
                "lower their maximum levels."
            )
        return _heuristic(
            assessment, job, context, problem, criterion, config, target, quasi, specs, encoded
        )
    context.progress(5, "Searching the generalization lattice", force=True)
    try:
        result = optimal_search(
            problem,
            criterion,
            metric=config["metric"],
            suppression_limit=float(config["suppression_limit"]),
            max_levels=config["max_levels"] or None,
            progress=listen,
            pareto=True,
            sensitive=encoded.sensitive,
        )
    except EngineError as exc:
        raise ApplicationError(f"The search failed: {exc}") from None
    stored = {
        "quasi_identifiers": quasi,
        "rows": encoded.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "metric": config["metric"],
        "suppression_limit": float(config["suppression_limit"]),
        "max_levels": config["max_levels"],
        "privacy_models": config.get("privacy_models") or [],
        "release_model": target["release_model"],
        "criterion": result.criterion,
        "data_risk_target": target["data_risk_target"],
        "target_class_size": target.get("target_class_size"),
        "heights": {q: specs[q].height for q in quasi},
        "level_labels": {q: specs[q].level_labels for q in quasi},
        "solution": _node(result.solution, quasi) if result.solution else None,
        "levels": result.levels,
        "pareto": _alternatives(result, quasi),
        "levels_text": _levels_text(result.levels, specs) if result.levels else "",
        "nodes_total": result.nodes_total,
        "nodes_evaluated": result.nodes_evaluated,
        "optimal": result.optimal,
        "seconds": result.seconds,
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.search_result = stored
        locked.chosen_levels = result.levels
        locked.save(update_fields=["search_result", "chosen_levels", "updated_at"])
    if result.solution is None:
        return {"found": False, "nodes_evaluated": result.nodes_evaluated}
    return {
        "found": True,
        "levels": result.levels,
        "nodes_evaluated": result.nodes_evaluated,
        "information_loss": result.solution.information_loss,
    }


def _heuristic(
    assessment: Assessment,
    job: Job,
    context: JobContext,
    problem: Any,
    criterion: Any,
    config: dict[str, Any],
    target: dict[str, Any],
    quasi: list[str],
    specs: dict[str, HierarchySpec],
    encoded: Any,
) -> dict[str, Any]:
    """More quasi-identifiers than the exact search can settle: a heuristic solution, with
    its bound on optimality, clearly labelled (``apps.engine.search.heuristic``)."""
    from apps.assessments.precheck import suggestions_to_drop
    from apps.engine.search.heuristic import heuristic_search

    context.progress(
        5, "The lattice is too large for the exact search: heuristic search", force=True
    )
    try:
        result = heuristic_search(
            problem,
            criterion,
            metric=config["metric"],
            suppression_limit=float(config["suppression_limit"]),
            max_levels=config["max_levels"] or None,
        )
    except EngineError as exc:
        raise ApplicationError(f"The search failed: {exc}") from None
    solution = _node(result.solution, quasi) if result.solution else None
    stored = {
        "quasi_identifiers": quasi,
        "rows": encoded.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "metric": config["metric"],
        "suppression_limit": float(config["suppression_limit"]),
        "max_levels": config["max_levels"],
        "release_model": target["release_model"],
        "criterion": criterion.describe(),
        "data_risk_target": target["data_risk_target"],
        "target_class_size": target.get("target_class_size"),
        "heights": {q: specs[q].height for q in quasi},
        "level_labels": {q: specs[q].level_labels for q in quasi},
        "solution": solution,
        "levels": result.levels,
        "pareto": [solution] if solution else [],
        "levels_text": _levels_text(result.levels, specs) if result.levels else "",
        "nodes_total": result.nodes_total,
        "nodes_evaluated": result.nodes_evaluated,
        "optimal": False,
        "heuristic": {
            "method": result.method,
            "lower_bound": result.lower_bound,
            "gap": result.gap,
            "minimum_levels": dict(zip(quasi, result.minimum_levels, strict=True))
            if result.minimum_levels
            else None,
            "max_nodes": MAX_NODES,
            "drop_or_merge": suggestions_to_drop(assessment, quasi, list(problem.heights)),
        },
        "seconds": result.seconds,
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.search_result = stored
        locked.chosen_levels = result.levels
        locked.save(update_fields=["search_result", "chosen_levels", "updated_at"])
    return {
        "found": result.solution is not None,
        "levels": result.levels,
        "nodes_evaluated": result.nodes_evaluated,
        "heuristic": True,
        "gap": result.gap,
    }


def _alternatives(result: Any, quasi: list[str]) -> list[dict[str, Any]]:
    """The Pareto set with the optimum in it, ordered by records suppressed."""
    nodes = [_node(n, quasi) for n in result.pareto]
    if result.solution is not None and all(n["levels"] != result.levels for n in nodes):
        nodes.append(_node(result.solution, quasi))
    return sorted(nodes, key=lambda n: (n["suppressed_rows"], n["information_loss"]))


def _levels_text(levels: dict[str, int], specs: dict[str, HierarchySpec]) -> str:
    return ", ".join(
        f"{q}: {specs[q].level_labels[lv] if lv < len(specs[q].level_labels) else lv}"
        for q, lv in levels.items()
    )


@transaction.atomic
def assessment_choose_solution(*, assessment: Assessment, levels: dict[str, int]) -> None:
    """Pick the optimum or one of the Pareto alternatives (Step 8's trade-off)."""
    _editable(assessment)
    search = assessment.search_result
    if not search:
        raise ApplicationError("Run the search first.")
    offered = [search["solution"]["levels"]] if search.get("solution") else []
    offered += [p["levels"] for p in search.get("pareto", [])]
    if levels not in offered:
        raise ApplicationError("Choose the optimum or one of the alternatives the search found.")
    assessment.chosen_levels = levels
    if assessment.apply_result is not None:
        steps.mark_stale(assessment, "deidentify")
    assessment.save(update_fields=["chosen_levels", "step_state", "updated_at"])


def suppression_share(rows: int, suppressed: int) -> float:
    return suppressed / rows if rows else 0.0


# --------------------------------------------------------------------------- apply


@transaction.atomic
def assessment_start_apply(*, assessment: Assessment, user: User) -> Job:
    _editable(assessment)
    if not assessment.chosen_levels:
        raise ApplicationError("Run the search and choose a solution first.")
    job = job_create(
        organization=assessment.organization,
        kind="assessment-apply",
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id), "levels": assessment.chosen_levels},
        created_by=user,
    )
    Assessment.objects.filter(id=assessment.id).update(apply_job=job)
    assessment.apply_job = job
    return job


def _mask_specs(config: dict[str, Any]) -> dict[str, Any]:
    from apps.engine.masking import MaskSpec

    specs = {}
    for column, spec in config["masking"].items():
        specs[column] = MaskSpec(
            method=spec["method"],
            length=int(spec.get("length") or 32),
            keep_leading=int(spec.get("keep_leading") or 0),
            keep_trailing=int(spec.get("keep_trailing") or 0),
        )
    return specs


def assessment_apply_handler(job: Job, context: JobContext) -> dict[str, Any]:
    import base64
    import io
    import json
    import tempfile
    from pathlib import Path

    import polars as pl

    from apps.assessments.population import population_figures
    from apps.datasets.storage import delete_quietly, sha256_of, store
    from apps.engine.apply import apply_solution
    from apps.engine.formula_guard import guard_formulas_lazy
    from apps.engine.loss import EntropyMetric, entropy_percent
    from apps.engine.risk import risk_profile
    from apps.engine.search.report import node_missingness, variable_distributions

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
    levels: dict[str, int] = job.params["levels"]
    quasi = quasi_identifiers(assessment)
    config = deid_config(assessment)
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    context.progress(5, "Encoding", force=True)
    release_folder, secrets_folder = _apply_folders(assessment, job)
    stored: list[str] = []
    with (
        local_path(assessment.dataset.parquet_path) as path,
        tempfile.TemporaryDirectory(prefix="deidweb-apply-") as scratch,
    ):
        from apps.assessments.privacy_models import search_inputs

        data = read_table(path)
        inputs = search_inputs(data, quasi, specs, config)
        problem, table = inputs.problem, inputs.sensitive
        try:
            criterion = criterion_for_release(
                target["release_model"], target["threshold"], target["context_risk"]
            )
            context.progress(20, "Masking, generalizing, suppressing and shuffling", force=True)
            out = Path(scratch) / "release.parquet"
            techniques = list(config.get("techniques") or [])
            if techniques:
                applied, technique_results = _apply_with_techniques(
                    data, inputs, levels, criterion, config, out, techniques, quasi
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
                    suppression_limit=float(config["suppression_limit"]),
                    direct=_mask_specs(config),
                    sensitive=table,
                )
        except EngineError as exc:
            raise ApplicationError(f"The de-identification could not be applied: {exc}") from None
        context.progress(70, "Writing the release files", force=True)
        # The release is read as a query over its file, never whole: the CSV is written
        # batch by batch and every measure below streams (any number of rows).
        released = pl.scan_parquet(applied.path)
        csv_path = Path(scratch) / "release.csv"
        guard = bool(config["csv_formula_guard"])
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
        maximum = EntropyMetric(problem).maximum()
        before = risk_profile(problem.counts)
        context.progress(80, "Measuring the release: attribute disclosure, small cells", force=True)
        from apps.assessments.release_measures import release_measures
        from apps.assessments.services import sensitive_columns

        measured = release_measures(
            data,
            released,
            quasi=quasi,
            sensitive=sensitive_columns(assessment),
            levels=levels,
            tops={q: specs[q].height for q in quasi},
            masked=[c for c, m in config["masking"].items() if m.get("method") != "remove"],
        )
        from apps.assessments.freetext import release_text_scan
        from apps.classification.models import Variable

        context.progress(85, "Scanning released text for identifiers", force=True)
        text_scan = release_text_scan(
            data,
            released,
            quasi=quasi,
            masking=config["masking"],
            roles=dict(
                Variable.objects.filter(dataset=assessment.dataset).values_list("name", "role")
            ),
        )
        measure = applied.measure
        try:
            parquet_name = store(applied.path, f"{release_folder}/deidentified.parquet")
            stored.append(parquet_name)
            csv_name = store(csv_path, f"{release_folder}/deidentified.csv")
            stored.append(csv_name)
            secrets_name = wrapped_key = ""
            if applied.secrets.keys or applied.secrets.linking_tables:
                payload: dict[str, Any] = {
                    "assessment": str(assessment.id),
                    "keys": {
                        c: base64.b64encode(k_).decode() for c, k_ in applied.secrets.keys.items()
                    },
                    "linking_tables": {},
                }
                for column, table in applied.secrets.linking_tables.items():
                    buffer = io.StringIO()
                    table.write_csv(buffer)
                    payload["linking_tables"][column] = buffer.getvalue()
                # Sealed before it reaches any disk: the scratch folder is private, but
                # the plaintext keys would outlive it in a backup of /tmp or of swap.
                wrapped_key, sealed = crypto.seal_bytes(
                    json.dumps(payload).encode("utf-8"), purpose=SECRETS_BUNDLE_PURPOSE
                )
                bundle = Path(scratch) / "secrets.sealed"
                bundle.write_bytes(sealed)
                secrets_name = store(bundle, f"{secrets_folder}/keys-and-linking-tables.sealed")
                stored.append(secrets_name)
            result = {
                "job": str(job.id),
                "levels": levels,
                "level_labels": {q: specs[q].level_labels[levels[q]] for q in quasi},
                "quasi_identifiers": quasi,
                "masking": config["masking"],
                "privacy_models": config.get("privacy_models") or [],
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
                },
                "distributions": _distributions(problem, level_tuple, distributions),
                **measured,
                **text_scan,
                "sha256": {"parquet": sha256_of(applied.path), "csv": sha256_of(csv_path)},
                "columns": released.collect_schema().names(),
                "has_secrets": bool(secrets_name),
                # text cells of the CSV prefixed with ' per column (the Parquet is as is)
                "csv_formula_guard": {"enabled": guard, "cells": guarded_cells},
            }
            with transaction.atomic():
                locked = assessment_lock_draft(assessment.id)
                old = [locked.output_parquet_path, locked.output_csv_path, locked.secrets_path]
                locked.apply_result = result
                locked.output_parquet_path = parquet_name
                locked.output_csv_path = csv_name
                locked.secrets_path = secrets_name
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
                unused = [
                    n for n in old if n and n not in stored and not _referenced_elsewhere(n, locked)
                ]
                transaction.on_commit(lambda: delete_quietly(*unused))
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
    from django.core.files.storage import default_storage

    from apps.datasets.storage import delete_quietly

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
    config: dict[str, Any],
    out: Any,
    techniques: list[dict[str, Any]],
    quasi: list[str],
) -> tuple[Any, list[dict[str, Any]]]:
    """Write the release with Step 7's further techniques (apps.assessments.techniques).

    With local suppression no record is suppressed whole: the generalized data keeps every
    record and single values are blanked until every group reaches the release size. The
    other techniques then change the variables they were set on. The file is measured
    like any release (a blank counts as a value of its own)."""
    from apps.assessments.techniques import run_techniques
    from apps.engine.apply import (
        ApplyResult,
        apply_levels,
        apply_solution,
        measure_release,
        write_release,
    )

    k = criterion.release_size
    local = any(t["technique"] == "local_suppression" for t in techniques)
    if local:
        frame, secret = apply_levels(
            data,
            lookups=inputs.lookups,
            dictionaries=inputs.dictionaries,
            levels=levels,
            release_size=1,
            direct=_mask_specs(config),
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
            suppression_limit=float(config["suppression_limit"]),
            direct=_mask_specs(config),
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
        suppression_limit=float(config["suppression_limit"]),
        sensitive=inputs.sensitive if not local else None,
    )
    return ApplyResult(path=path, seed_used=False, measure=measure, secrets=secret), results


def _generalization_only(assessment: Assessment, levels: dict[str, int]) -> dict[str, Any] | None:
    """The search's own figures for the applied levels (record suppression, no further
    technique): what Step 8 compares the techniques against."""
    search = assessment.search_result or {}
    nodes = [search.get("solution") or {}, *(search.get("pareto") or [])]
    return next((dict(n) for n in nodes if n and n.get("levels") == levels), None)


def release_secrets_read(*, assessment: Assessment) -> bytes:
    """The keys and linking tables of a release (JSON), opened for an administrator's
    download. The caller checks the role and records the download."""
    from django.core.files.storage import default_storage

    if not assessment.secrets_path:
        raise ApplicationError("This release has no keys or linking tables.", status=404)
    try:
        with default_storage.open(assessment.secrets_path, "rb") as handle:
            sealed = handle.read()
        return crypto.open_bytes(
            assessment.secrets_wrapped_key, sealed, purpose=SECRETS_BUNDLE_PURPOSE
        )
    except (OSError, crypto.SecretUnreadable):
        logger.exception("the keys of assessment %s cannot be opened", assessment.id)
        raise ApplicationError(
            "The keys and linking tables cannot be read from storage (missing, damaged, or "
            "sealed with a master key this server does not have).",
            status=409,
        ) from None


MAX_CHART_VALUES = 30


def _distributions(problem: Any, levels: tuple[int, ...], released: Any) -> list[dict[str, Any]]:
    """Per quasi-identifier, on the generalized values: records before de-identification
    (original values grouped) and records released (suppressed rows removed). The largest
    groups first, at most 30 of them for a readable chart."""
    import numpy as np

    out = []
    for j, (lookup, level) in enumerate(zip(problem.lookups, levels, strict=True)):
        mapped = lookup.maps[level][problem.codes[j]]
        before = np.bincount(mapped, weights=problem.counts.astype(np.float64)).astype(np.int64)
        after_by_label = {label: n for label, n in released[j].after}
        labels = lookup.labels[level]
        rows = sorted(
            (
                (labels[g], int(before[g]), int(after_by_label.get(labels[g], 0)))
                for g in np.flatnonzero(before)
            ),
            key=lambda r: (-r[1], str(r[0])),
        )
        shown = rows[:MAX_CHART_VALUES]
        out.append(
            {
                "column": lookup.column,
                "level": level,
                "labels": [r[0] if r[0] is not None else "(missing)" for r in shown],
                "before": [r[1] for r in shown],
                "after": [r[2] for r in shown],
                "groups": len(rows),
                "original_values": int(np.count_nonzero(problem.frequencies[j][0])),
                "suppressed_rows": released[j].suppressed_rows,
            }
        )
    return out


def _referenced_elsewhere(name: str, assessment: Assessment | None) -> bool:
    """Whether an assessment other than ``assessment`` (any, if None) refers to a file."""
    from django.db.models import Q

    others = Assessment.objects.all()
    if assessment is not None:
        others = others.exclude(id=assessment.id)
    return others.filter(
        Q(output_parquet_path=name) | Q(output_csv_path=name) | Q(secrets_path=name)
    ).exists()
