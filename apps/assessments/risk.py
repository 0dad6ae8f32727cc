"""Step 4 as a job: the data risk of the classified quasi-identifiers, and why it is high."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import polars as pl
from django.db import transaction

from apps.assessments import steps
from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.models import Assessment
from apps.assessments.person_risk import person_risk_result
from apps.assessments.population import population_figures
from apps.assessments.selectors import (
    data_risk_of,
    overall_risk,
    quasi_identifiers,
    sensitive_columns,
)
from apps.core.errors import ApplicationError
from apps.datasets.cluster import cluster_histogram, dataset_is_cluster, job_progress
from apps.datasets.storage import local_path
from apps.engine.attribute import SensitiveDiversity, l_diversity
from apps.engine.drivers import (
    default_msu_size,
    distinction,
    leave_one_out,
    minimal_sample_uniques,
    separation,
)
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.frame import encode
from apps.engine.reading import read_table
from apps.engine.risk import records_at_risk, risk_profile
from apps.engine.rows import l_diversity_from_histogram
from apps.engine.smallcells import small_cells
from apps.jobs.context import JobContext
from apps.jobs.models import Job


def class_sizes(encoded: EncodedData, columns: list[str] | None = None) -> pl.Series:
    """Equivalence class sizes on all quasi-identifiers, or on a subset of them — regrouping
    the distinct-tuple table, never the raw rows."""
    if columns is None or list(columns) == list(encoded.quasi):
        return encoded.counts()
    if not columns:
        return pl.Series([encoded.rows], dtype=pl.UInt64)
    return (
        encoded.tuples.group_by(columns)
        .agg(pl.col(COUNT_COLUMN).cast(pl.UInt64).sum())
        .get_column(COUNT_COLUMN)
    )


def risk_drivers(
    encoded: EncodedData, model: str, data_risk: float, target: float | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per quasi-identifier, the risk without it (data risk, average risk, uniques and
    records at risk), its distinction and separation and its SUDA contribution; and the
    smallest combinations of quasi-identifiers that single records out
    (``apps.engine.drivers``). Sorted by the records at risk it would remove."""
    msu = minimal_sample_uniques(encoded, max_size=default_msu_size(len(encoded.quasi)))
    drivers: list[dict[str, Any]] = []
    for left in leave_one_out(encoded, target):
        without = left.strict_average_risk if model == "non_public" else left.max_risk
        drivers.append(
            {
                "left_out": left.left_out,
                "max_risk": left.max_risk,
                "average_risk": left.average_risk,
                "strict_average_risk": left.strict_average_risk,
                "data_risk": without,
                "uniques": left.uniques,
                "records_at_risk": left.records_at_risk,
                "reduction": data_risk - without,
                "distinction": distinction(encoded, left.left_out),
                "separation": separation(encoded, left.left_out),
                "msu_count": msu.msu_counts[left.left_out],
                "contribution": msu.contributions[left.left_out],
            }
        )
    drivers.sort(
        key=lambda d: (
            d["records_at_risk"] if d["records_at_risk"] is not None else d["uniques"],
            -d["reduction"],
            -d["contribution"],
            d["left_out"],
        )
    )
    return drivers, {
        "max_size": msu.max_size,
        "records_unique": msu.records_unique,
        "records_with_msu": msu.records_with_msu,
        "by_size": {str(size): n for size, n in msu.by_size.items()},
        "combinations": [
            {"columns": list(columns), "records": n} for columns, n in msu.combinations
        ],
    }


def _person_risk(
    assessment: Assessment, context: JobContext, quasi: list[str], model: str
) -> dict[str, Any]:
    """Step 4 on data with several rows per person: risk counted in persons (issue 25)."""
    context.progress(5, "Counting persons and their events", force=True)
    overall = overall_risk(assessment)
    threshold = float(assessment.threshold_result["value"]) if assessment.threshold_result else None
    target = overall["data_risk_target"] if overall else threshold
    result = person_risk_result(assessment, quasi=quasi, model=model, target=target)
    context.check_cancelled()
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.risk_result = result
        steps.mark_changed(locked, "data-risk")
        locked.save(update_fields=["risk_result", "step_state", "updated_at"])
    return {
        "data_risk": result["data_risk"],
        "unit": "person",
        "persons": result["persons"],
        "events": result["events"],
        "power": result["power"],
        "measure": data_risk_of(result, model),
    }


def _histogram_and_diversity(
    assessment: Assessment, quasi: list[str], sensitive: list[str], context: JobContext
) -> tuple[EncodedData, tuple[SensitiveDiversity, ...]]:
    """The class histogram over the quasi-identifiers and the attribute disclosure of the
    sensitive variables: read from the stored file, or counted on the cluster where a
    cluster table's rows are (apps.datasets.cluster; the same figures)."""
    if dataset_is_cluster(assessment.dataset):
        encoded = cluster_histogram(
            assessment.dataset, quasi, progress=job_progress(context, 5, 35)
        )
        diversity = tuple(
            l_diversity_from_histogram(
                cluster_histogram(assessment.dataset, [*quasi, column]), quasi, column
            )
            for column in sensitive
        )
        return encoded, diversity
    with local_path(assessment.dataset.parquet_path) as path:
        frame = read_table(path)
        encoded = encode(frame, quasi)
        diversity = l_diversity(frame, quasi, sensitive) if sensitive else ()
    return encoded, diversity


def assessment_risk_handler(job: Job, context: JobContext) -> dict[str, Any]:
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    quasi = quasi_identifiers(assessment)
    if not quasi:
        raise ApplicationError("No confirmed quasi-identifier: finish Step 2 first.")
    sensitive = sensitive_columns(assessment)
    model = assessment.effective_release_model or "public"
    if assessment.person_key:
        if dataset_is_cluster(assessment.dataset):
            raise ApplicationError(
                "Risk counted in persons (several rows per person) needs the data on one "
                "machine: it is not offered for a cluster table; clear the person key."
            )
        return _person_risk(assessment, context, quasi, model)
    context.progress(5, "Encoding the quasi-identifiers", force=True)
    encoded, diversity = _histogram_and_diversity(assessment, quasi, sensitive, context)
    context.progress(40, "Measuring equivalence classes", force=True)
    sizes = class_sizes(encoded).to_numpy()
    profile = risk_profile(sizes)
    data_risk = profile.data_risk(model)
    overall = overall_risk(assessment)
    threshold = float(assessment.threshold_result["value"]) if assessment.threshold_result else None
    target = overall["data_risk_target"] if overall else threshold
    at_risk = asdict(records_at_risk(sizes, target)) if target else None
    context.progress(45, "Attacker models and population uniqueness", force=True)
    population = population_figures(
        assessment, profile.class_size_counts, threshold=target, curve=True
    )

    context.progress(55, "Which quasi-identifiers drive the risk", force=True)
    drivers, msu = risk_drivers(encoded, model, data_risk, target)
    context.check_cancelled()

    context.progress(70, "Small cells", force=True)
    cells = small_cells(encoded)

    result = {
        "release_model": model,
        "quasi_identifiers": quasi,
        "sensitive": sensitive,
        "profile": profile.to_dict(),
        "max_risk": profile.max_risk,
        "average_risk": profile.average_risk,
        "strict_average_risk": profile.strict_average_risk,
        "data_risk": data_risk,
        "risk_measure": "strict average risk" if model == "non_public" else "max risk",
        "target": target,
        "records_at_risk": at_risk,
        **population,
        "drivers": drivers,
        "minimal_uniques": msu,
        "small_cells": {
            "min_count": cells.min_count,
            "min_share": cells.min_share,
            "univariate": [asdict(c) for c in cells.univariate[:200]],
            "bivariate": [asdict(c) for c in cells.bivariate[:200]],
            "univariate_total": len(cells.univariate),
            "bivariate_total": len(cells.bivariate),
        },
        "attribute_disclosure": [asdict(d) for d in diversity],
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.risk_result = result
        steps.mark_changed(locked, "data-risk")
        locked.save(update_fields=["risk_result", "step_state", "updated_at"])
    return {
        "data_risk": data_risk,
        "rows": profile.rows,
        "equivalence_classes": profile.equivalence_classes,
        "measure": data_risk_of(result, model),
    }
