"""Step 7's release of data with several rows per person (issue 25; LONGITUDINAL.md §3.2,
§6): the apply job that writes the long table at the chosen node, measures it again in
persons and stores it. The node is the search's own (its optimum or an alternative, with
the budgets it recorded: ``apps.engine.longitudinal.release.node_release`` reproduces its
suppression, events first, then whole persons). The table written
(``person_release_frame``: generalized, suppressed, the person key replaced by its keyed
pseudonym, the key sealed with the release's other keys under ``SECRETS_BUNDLE_PURPOSE``)
is read back and measured in persons (``person_release_measure``); the release passes
when its data risk (max risk, or the strict average for a non-public release) is within
Step 6's target. The other released columns are measured, free text scanned and the
attack tests run in persons. The result is stored like a single-table release
(``apply_result``, the file paths and their SHA-256), so the review freezes and digests it
in the same way, with a ``longitudinal`` part the report's longitudinal section reads. A
release of linked tables is also written again as its tables (``linked_release``), each
file listed in the result and frozen, digested and checked like the long table's. The
apply job of an assessment goes through :func:`assessment_apply_dispatch` (the job kind
``assessment-apply`` names it here).
"""

from __future__ import annotations

import base64
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from django.db import transaction

from apps.assessments.cluster_release import assessment_apply_handler
from apps.assessments.deidentify import masking_check
from apps.assessments.domains import domain_summary
from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.freetext import free_text_columns, release_text_scan
from apps.assessments.linked_release import (
    check_tables_measure,
    store_tables,
    tables_data,
    write_tables,
)
from apps.assessments.longitudinal_search import person_inputs
from apps.assessments.models import SECRETS_BUNDLE_PURPOSE, Assessment
from apps.assessments.person_attack_tests import person_release_attacks
from apps.assessments.person_dates import (
    dimension_levels,
    release_plan,
    released_dates,
    remeasure_settings,
    shift_release,
)
from apps.assessments.person_release_frame import pseudonymized, release_frame
from apps.assessments.person_release_measure import (
    count_distribution,
    data_risk,
    measure_release,
    measure_released_data,
    risk_before,
)
from apps.assessments.person_suppression import COUNTED_ONCE
from apps.assessments.release_apply import _apply_summary, suppression_share
from apps.assessments.release_columns import release_columns_measure
from apps.assessments.release_files import _apply_folders, _discard_unreferenced, release_store
from apps.assessments.selectors import sensitive_columns
from apps.classification.models import Variable
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets import storage
from apps.datasets.storage import delete_quietly, sha256_of
from apps.engine.errors import EngineError
from apps.engine.formula_guard import guard_formulas_lazy
from apps.engine.longitudinal.formulas import top_code
from apps.engine.longitudinal.release import Budgets, node_release
from apps.jobs.context import JobContext
from apps.jobs.models import Job

PSEUDONYM = "HMAC-SHA-256"


def _searched_node(assessment: Assessment, levels: dict[str, int]) -> dict[str, Any]:
    """The search's node with these levels (its optimum or an alternative), with the
    budgets that reproduce its suppression."""
    search = assessment.search_result or {}
    if search.get("unit") != "person":
        raise ApplicationError("Run the search again: it was not run in persons.", status=409)
    nodes = [search.get("solution") or {}, *(search.get("pareto") or [])]
    node = next((n for n in nodes if n and n.get("levels") == levels), None)
    if node is None or not node.get("budgets"):
        raise ApplicationError(
            "The chosen solution is not one the search over persons found: run the search "
            "again and choose one of its solutions.",
            status=409,
        )
    return dict(node)


def person_release_result(
    assessment: Assessment, job: Job, context: JobContext, scratch: Path
) -> tuple[dict[str, Any], Path, Path, dict[str, Any] | None]:
    """Write the release in ``scratch`` and measure it (module docstring): the result to
    store, the Parquet and CSV files, and the secrets to seal (None without any)."""
    levels: dict[str, int] = job.params["levels"]
    context.progress(5, "Reading the persons and their events", force=True)
    inputs = person_inputs(assessment, all_columns=True)
    config, target = inputs.config, inputs.target
    masking_check(assessment, config.masking)
    node = _searched_node(assessment, levels)
    context.progress(20, "Generalizing and suppressing events and persons", force=True)
    try:
        chosen = node_release(
            inputs.problem,
            levels,
            criterion=inputs.criterion,
            power=inputs.power,
            budgets=Budgets(**node["budgets"]),
        )
    except EngineError as exc:
        raise ApplicationError(f"The de-identification could not be applied: {exc}") from None
    generalized, released_tables = release_frame(inputs, levels, chosen)
    generalized, shift_secret = shift_release(generalized, inputs.problem, inputs.person_key)
    released, keys, tables, masking = pseudonymized(assessment, inputs, generalized)
    context.progress(60, "Writing the release files", force=True)
    parquet = scratch / "release.parquet"
    released.write_parquet(parquet)
    csv_path = scratch / "release.csv"
    guard = bool(config.csv_formula_guard)
    lazy = pl.scan_parquet(parquet)
    csv_frame, guarded = guard_formulas_lazy(lazy) if guard else (lazy, {})
    csv_frame.sink_csv(csv_path)
    context.progress(70, "Measuring the release in persons", force=True)
    threshold = float(target["data_risk_target"])
    written = pl.read_parquet(parquet)
    after = measure_release(inputs, written, threshold, released_tables, levels)
    listed: list[dict[str, Any]] = []  # linked tables: written again as the tables
    if released_tables is not None and inputs.structure is not None:
        listed = write_tables(
            inputs.structure, inputs.person_key, written, released_tables, scratch, guard=guard
        )
        added = remeasure_settings(inputs.problem, levels)[0]
        found = measure_released_data(inputs, tables_data(inputs, listed, added), threshold, levels)
        check_tables_measure(found, after)
    before_counts = inputs.problem.data.events_per_person()
    after_counts = after.pop("events_per_person")
    top = top_code(before_counts)
    # linked tables: persons without events are counted, with 0 events
    without_events = bool((before_counts == 0).any())
    model = target["release_model"]
    after_risk = data_risk(model, after["max_risk"], after["average_risk"])
    passes = after_risk <= threshold + 1e-12
    context.progress(80, "Measuring the other released columns", force=True)
    roles = dict(Variable.objects.filter(dataset=assessment.dataset).values_list("name", "role"))
    original = inputs.frame.lazy()
    # the anchor column of the anchored date mode is a quasi-identifier, measured as one
    released_quasi = [*inputs.quasi, *release_plan(inputs.problem, inputs.frame.columns)[1]]
    released_columns = release_columns_measure(
        original,
        lazy,
        quasi=released_quasi,
        sensitive=sensitive_columns(assessment),
        masking=masking,
        roles=roles,
        free_text=free_text_columns(assessment),
        release_size=inputs.criterion.release_size,
        release_model=model,
        data_risk_target=threshold,
    )
    text_scan = release_text_scan(
        original, lazy, quasi=released_quasi, masking=masking, roles=roles
    )
    context.progress(
        85, "Attack tests in persons: singling out, linkability, inference", force=True
    )
    attacks = person_release_attacks(
        assessment, inputs, levels, generalized, released_tables, written
    )
    problem = inputs.problem
    labels = dimension_levels(problem, inputs.specs)[1]
    events_removed = chosen.events_suppressed + chosen.events_of_suppressed_persons
    # the persons kept are those released: a person whose every event was suppressed has
    # no row left and is among the persons suppressed (released.settle)
    if int(chosen.alive.sum()) != int(after["persons"]):
        raise ApplicationError(
            f"The release holds {after['persons']:,} persons where the solution keeps "
            f"{int(chosen.alive.sum()):,}: it is not written. Run the search again."
        )
    longitudinal = {
        "person_key": inputs.person_key,
        "person_quasi": inputs.person_quasi,
        "event_quasi": inputs.event_quasi,
        "power": str(inputs.power),
        "persons_in": problem.persons,
        "events_in": problem.events,
        "persons_out": after["persons"],
        "events_out": after["events"],
        "limits": {
            "persons": float(config.suppression_limit),
            "events": float(config.event_suppression_limit),
        },
        "budgets": dict(node["budgets"]),
        "suppressed": {
            "persons": chosen.persons_suppressed,
            "events_of_suppressed_persons": chosen.events_of_suppressed_persons,
            "events": chosen.events_suppressed,
            # among "persons": event suppression left them no event (so no row)
            "persons_every_event_suppressed": chosen.persons_emptied,
            "counting": COUNTED_ONCE,  # read by person_suppression
        },
        "event_counts": {
            "top_code": top,
            "before": count_distribution(before_counts, top, zero=without_events),
            "after": count_distribution(after_counts, top, zero=without_events),
            "max_before": int(before_counts.max()) if before_counts.size else 0,
            "max_after": int(after_counts.max()) if after_counts.size else 0,
        },
        "risk_after": after,
        # date mode, columns and levels, shift range (never an offset); event count
        **released_dates(problem, levels, labels),
        "pseudonym": {
            "column": inputs.person_key,
            "method": PSEUDONYM,
            "length": masking[inputs.person_key]["length"],
            # the named pseudonymisation domain whose key it shares (None: its own key)
            "domain": domain_summary(assessment),
        },
    }
    result = {
        "job": str(job.id),
        "unit": "person",
        "levels": levels,
        "level_labels": {q: labels[q][lv] for q, lv in levels.items() if q in labels},
        "quasi_identifiers": inputs.quasi,
        "masking": masking,
        "pseudonym_domain": domain_summary(assessment),
        "privacy_models": [],
        "techniques": [],
        "generalization_only": dict(node),
        "rows_in": problem.events,
        "rows_out": written.height,
        "suppressed_rows": events_removed,
        "suppressed_share": suppression_share(problem.events, events_removed),
        "passes": passes,
        "risk_measure": target["risk_measure"],
        "data_risk_target": target["data_risk_target"],
        "risk_before": risk_before(assessment, model),
        "risk_after": {
            "max_risk": after["max_risk"],
            "average_risk": after["average_risk"],
            "min_class_size": after["min_class_size"],
            "data_risk": after_risk,
        },
        "utility": {
            "metric": "loss",
            "loss": node.get("information_loss"),
            "record_missingness": suppression_share(problem.events, events_removed),
        },
        "longitudinal": longitudinal,
        **text_scan,
        "released_columns": released_columns,
        "attacks": attacks,
        "sha256": {"parquet": sha256_of(parquet), "csv": sha256_of(csv_path)},
        "release_files": listed,
        "columns": written.columns,
        "has_secrets": True,
        "csv_formula_guard": {"enabled": guard, "cells": guarded},
    }
    linking: dict[str, str] = {}
    for column, table in tables.items():
        buffer = io.StringIO()
        table.write_csv(buffer)
        linking[column] = buffer.getvalue()
    secrets: dict[str, Any] = {
        "assessment": str(assessment.id),
        "keys": {c: base64.b64encode(k).decode() for c, k in keys.items()},
        "linking_tables": linking,
    }
    if shift_secret is not None:  # sealed with the keys, never in the result or report
        secrets["date_shift"] = shift_secret
    return result, parquet, csv_path, secrets


def person_apply_handler(job: Job, context: JobContext, assessment: Assessment) -> dict[str, Any]:
    """The apply job on person-keyed data: write, measure, store (module docstring)."""
    done = assessment.apply_result or {}
    if done.get("job") == str(job.id):
        return _apply_summary(done)
    _discard_unreferenced(assessment, job)
    release_folder, secrets_folder = _apply_folders(assessment, job)
    stored: list[str] = []
    with tempfile.TemporaryDirectory(prefix="deidweb-apply-") as folder:
        scratch = Path(folder)
        result, parquet, csv_path, secrets = person_release_result(
            assessment, job, context, scratch
        )
        context.progress(90, "Storing the release and its sealed keys", force=True)
        try:
            parquet_name = storage.store(parquet, f"{release_folder}/deidentified.parquet")
            stored.append(parquet_name)
            csv_name = storage.store(csv_path, f"{release_folder}/deidentified.csv")
            stored.append(csv_name)
            store_tables(result["release_files"], release_folder, stored)
            secrets_name = wrapped_key = ""
            if secrets is not None:
                # sealed before it reaches any disk (as for single-table releases)
                wrapped_key, sealed = crypto.seal_bytes(
                    json.dumps(secrets).encode("utf-8"), purpose=SECRETS_BUNDLE_PURPOSE
                )
                bundle = scratch / "secrets.sealed"
                bundle.write_bytes(sealed)
                secrets_name = storage.store(
                    bundle, f"{secrets_folder}/keys-and-linking-tables.sealed"
                )
                stored.append(secrets_name)
            _save(assessment, result, parquet_name, csv_name, secrets_name, wrapped_key, stored)
        except Exception:
            delete_quietly(*stored)
            raise
    return _apply_summary(result)


def _save(
    assessment: Assessment,
    result: dict[str, Any],
    parquet_name: str,
    csv_name: str,
    secrets_name: str,
    wrapped_key: str,
    stored: list[str],
) -> None:
    with transaction.atomic():
        release_store(
            assessment_lock_draft(assessment.id),
            result,
            files=(parquet_name, csv_name, secrets_name),
            wrapped_key=wrapped_key,
            kept=stored,
        )


def assessment_apply_dispatch(job: Job, context: JobContext) -> dict[str, Any]:
    """The apply job: in persons when the data set has a person key, else on records (an
    upload's or a cluster table's, `cluster_release.assessment_apply_handler`)."""
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    if assessment.person_key:
        return person_apply_handler(job, context, assessment)
    return assessment_apply_handler(job, context)
