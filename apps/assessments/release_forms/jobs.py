"""The jobs that write a synthetic-data release and a table release (Celery, like the
microdata apply job in ``apps.assessments.release_apply``).

Each reads the original data, runs the engine (``apps.engine.techniques.synthetic`` or
``apps.engine.techniques.aggregation``), writes the release as Parquet and CSV (the CSV's
text cells guarded against spreadsheet formulas), and stores the files and the figures in
the same fields as the microdata release (``apply_result``, ``output_parquet_path``,
``output_csv_path``) with their SHA-256 digests: the submission freezes them, the decision
names them, and the approved download serves exactly those bytes (``apps.reviews``).

Synthetic data: the generator holds back a control share of the records before it learns;
the attacks every release gets (``apps.engine.attacks``: singling out, linkability,
inference) run on the people it learnt from against the held-back people and a naive
intruder (PDPC 2018 §3.10; Article 29 WP Opinion 05/2014).  The release passes when no
attack beats its reference by more than the data-risk target of Step 6.

Tables: a cell with fewer contributors than the threshold is suppressed (primary), further
cells are suppressed so that no hidden cell can be worked back from the totals
(complementary), and a linear program audits every hidden cell's feasible range (PDPC 2018
§3.8; Hundepool et al. 2012, §4.3).  The release passes when every hidden cell is protected.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from django.db import transaction

from apps.assessments.attack_tests import attack_rows
from apps.assessments.deidentify import search_target
from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.freetext import release_text_scan
from apps.assessments.hierarchies import class_threshold
from apps.assessments.models import Assessment
from apps.assessments.persons import refuse_longitudinal_deidentify
from apps.assessments.release_files import _apply_folders, _discard_unreferenced, release_store
from apps.assessments.release_forms.config import FORM_TITLES, SYNTHETIC, TABLE, ReleaseForm
from apps.assessments.release_forms.services import release_form_check, synthetic_columns
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets import storage
from apps.datasets.storage import delete_quietly, local_path, sha256_of
from apps.engine.errors import EngineError
from apps.engine.formula_guard import guard_formulas_lazy
from apps.engine.reading import read_table
from apps.engine.techniques.aggregation import SuppressedTable, TableParams, suppress_table
from apps.engine.techniques.synthetic import SyntheticParams, SyntheticResult, synthesize
from apps.jobs.context import JobContext
from apps.jobs.models import Job

#: Attack targets drawn from the training people and as many from the held-back ones.
SYNTHETIC_TARGETS = 500


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {"form": result["form"], "rows_out": result["rows_out"], "passes": result["passes"]}


def _start(job: Job, form: str) -> tuple[Assessment, ReleaseForm, dict[str, Any] | None]:
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    done = assessment.apply_result or {}
    if done.get("job") == str(job.id):
        # Delivered again after its worker died between writing and ending: nothing to redo.
        return assessment, ReleaseForm(), _summary(done)
    _discard_unreferenced(assessment, job)
    refuse_longitudinal_deidentify(assessment)
    config = ReleaseForm.from_json(job.params["release_form"])
    if config.form != form:
        raise ApplicationError(f"This job writes {FORM_TITLES[form].lower()}, not {config.title}.")
    release_form_check(assessment, config)
    return assessment, config, None


# --------------------------------------------------------------------------- synthetic


def synthetic_figures(
    outcome: SyntheticResult, *, columns: list[str], secret: str, tolerance: float
) -> dict[str, Any]:
    """The Step 8 figures of a synthetic release: the attacks (with the verdicts the
    microdata release's get), the utility, the distance to closest record."""
    report = outcome.privacy.attacks
    known = [c for c in columns if c != secret]
    attacks = {
        "status": "done",
        "known_columns": known,
        "attacked_on": known,
        "known_not_released": [],
        "tolerance": tolerance,
        **report.to_dict(),
    }
    rows = attack_rows(attacks)
    privacy = outcome.privacy
    return {
        "passes": bool(rows) and all(r["verdict"]["within"] for r in rows),
        "attacks": attacks,
        "synthetic": {
            "columns": columns,
            "secret": secret,
            "tree": [list(edge) for edge in outcome.tree],
            "marginal": dict(outcome.utility.marginal),
            "pairwise": outcome.utility.pairwise,
            "closer_to_training": privacy.closer_to_training,
            "exact_copies": privacy.exact_copies,
            "copies_of_training": privacy.copies_of_training,
            "copies_of_control": privacy.copies_of_control,
            "control_share": outcome.params.control_share,
            "bins": outcome.params.bins,
        },
    }


def assessment_synthetic_handler(job: Job, context: JobContext) -> dict[str, Any]:
    assessment, config, done = _start(job, SYNTHETIC)
    if done is not None:
        return done
    columns, secret = synthetic_columns(assessment, config)
    target = search_target(assessment)
    tolerance = min(float(target["data_risk_target"]), 1.0)
    settings = config.synthetic
    context.progress(5, "Reading the data", force=True)
    with local_path(assessment.dataset.parquet_path) as path:
        data = read_table(path).select(columns).collect()
    context.progress(20, "Learning the model and drawing synthetic records", force=True)
    try:
        outcome = synthesize(
            data,
            SyntheticParams(
                columns=tuple(columns),
                rows=settings.rows,
                bins=settings.bins,
                control_share=settings.control_share,
                secret=secret,
                targets=SYNTHETIC_TARGETS,
            ),
        )
    except EngineError as exc:
        raise ApplicationError(f"The synthetic data could not be generated: {exc}") from None
    context.progress(80, "Writing the release files", force=True)
    figures = synthetic_figures(outcome, columns=columns, secret=secret, tolerance=tolerance)
    figures["synthetic"]["training_rows"] = data.height - int(
        round(settings.control_share * data.height)
    )
    result = {
        "form": SYNTHETIC,
        "form_title": FORM_TITLES[SYNTHETIC],
        "release_form": config.to_json(),
        "rows_in": data.height,
        "rows_out": outcome.data.height,
        "data_risk_target": target["data_risk_target"],
        "risk_measure": target["risk_measure"],
        **figures,
    }
    return _write(assessment, job, config, outcome.data, result)


# --------------------------------------------------------------------------- tables


def table_figures(table: SuppressedTable, params: TableParams) -> dict[str, Any]:
    """The Step 8 figures of a table release: its cells, which are hidden and why, and what
    the audit's linear programs found an intruder can narrow each hidden cell to."""
    rows, columns = table.row_labels, table.column_labels

    def cells(mask: Any) -> list[dict[str, str]]:
        return [
            {"row": rows[r], "column": columns[c]}
            for r in range(len(rows))
            for c in range(len(columns))
            if mask[r, c]
        ]

    return {
        "passes": table.protected and not table.unprotectable,
        "table": {
            "rows_variable": params.rows,
            "columns_variable": params.columns,
            "value": params.value or "",
            "threshold": params.threshold,
            "row_labels": list(rows),
            "column_labels": list(columns),
            "cells": len(rows) * len(columns),
            "primary": cells(table.primary),
            "complementary": cells(table.complementary),
            "audit": [
                {
                    "row": a.row,
                    "column": a.column,
                    "lower": a.lower,
                    "upper": a.upper,
                    "required_width": a.required_width,
                    "primary": a.primary,
                    "attainable": a.attainable,
                    "protected": a.protected,
                }
                for a in table.audit
            ],
            "protected": table.protected,
            "unprotectable": [{"row": a.row, "column": a.column} for a in table.unprotectable],
            # what is published: hidden cells are empty (null)
            "published": {
                "header": table.table.columns,
                "rows": [list(r) for r in table.table.rows()],
            },
        },
    }


def assessment_table_handler(job: Job, context: JobContext) -> dict[str, Any]:
    assessment, config, done = _start(job, TABLE)
    if done is not None:
        return done
    settings = config.table
    target = search_target(assessment)
    params = TableParams(
        rows=settings.rows,
        columns=settings.columns,
        value=settings.value or None,
        threshold=settings.threshold or class_threshold(assessment),
    )
    context.progress(5, "Reading the data", force=True)
    wanted = [settings.rows, settings.columns, *([settings.value] if settings.value else [])]
    with local_path(assessment.dataset.parquet_path) as path:
        data = read_table(path).select(wanted).collect()
    context.progress(20, "Suppressing small cells and auditing the table", force=True)
    try:
        table = suppress_table(data, params)
    except EngineError as exc:
        raise ApplicationError(f"The table could not be protected: {exc}") from None
    result = {
        "form": TABLE,
        "form_title": FORM_TITLES[TABLE],
        "release_form": config.to_json(),
        "rows_in": data.height,
        "rows_out": table.table.height,
        "data_risk_target": target["data_risk_target"],
        "risk_measure": target["risk_measure"],
        **table_figures(table, params),
    }
    return _write(assessment, job, config, table.table, result)


# --------------------------------------------------------------------------- writing


def _write(
    assessment: Assessment,
    job: Job,
    config: ReleaseForm,
    frame: pl.DataFrame,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Store the release files and the figures, as the microdata apply job does: under the
    row lock, only on a draft whose release form is still the one this job wrote."""
    release_folder, _ = _apply_folders(assessment, job)
    stored: list[str] = []
    guard = bool(assessment.deid.csv_formula_guard)
    with tempfile.TemporaryDirectory(prefix="deidweb-form-") as scratch:
        parquet = Path(scratch) / "release.parquet"
        csv = Path(scratch) / "release.csv"
        frame.write_parquet(parquet)
        lazy = pl.scan_parquet(parquet)
        csv_frame, guarded = guard_formulas_lazy(lazy) if guard else (lazy, {})
        csv_frame.sink_csv(csv)
        roles = dict(
            Variable.objects.filter(dataset=assessment.dataset).values_list("name", "role")
        )
        result = {
            **result,
            # identifiers in released text, as every release is scanned (a free-text value
            # drawn by the generator or used as a table label is released as it is)
            **release_text_scan(lazy, frame, quasi=[], masking={}, roles=roles),
            # no released record is a person's: no other column to measure against them
            "released_columns": {
                "columns": [],
                "release_size": class_threshold(assessment),
                "data_risk_target": result["data_risk_target"],
            },
            "job": str(job.id),
            "columns": frame.columns,
            "sha256": {"parquet": sha256_of(parquet), "csv": sha256_of(csv)},
            "has_secrets": False,
            "csv_formula_guard": {"enabled": guard, "cells": guarded},
        }
        try:
            parquet_name = storage.store(parquet, f"{release_folder}/{result['form']}.parquet")
            stored.append(parquet_name)
            csv_name = storage.store(csv, f"{release_folder}/{result['form']}.csv")
            stored.append(csv_name)
            with transaction.atomic():
                locked = assessment_lock_draft(assessment.id)
                if locked.deid.release_form != config:
                    raise ApplicationError(
                        "The release form's settings changed while this job ran: write the "
                        "release again."
                    )
                release_store(
                    locked, result, files=(parquet_name, csv_name, ""), wrapped_key="", kept=stored
                )
        except Exception:
            delete_quietly(*stored)
            raise
    return _summary(result)


__all__ = [
    "assessment_synthetic_handler",
    "assessment_table_handler",
    "synthetic_figures",
    "table_figures",
]
