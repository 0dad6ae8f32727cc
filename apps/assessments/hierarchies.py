"""Step 7.2 for an assessment: its hierarchy spec per quasi-identifier, and what the
original values of a column may show. A spec keeps the builder's settings and the
hierarchy they produced (ARX CSV text), built over the column's actual distinct values
(``hierarchy_builders``), so the search, the report and a later re-run all use exactly the
same table: set by the analyst, proposed by default where none was set (and saved when a
job needs them), previewed level by level with its record counts. The value lists of the
report and the review, and the preview for someone not allowed raw values, never show an
original value held by fewer than k records (``class_threshold``).
"""

from __future__ import annotations

import logging
from typing import Any

import polars as pl
from django.db import transaction

from apps.assessments import steps
from apps.assessments.drafts import assessment_editable
from apps.assessments.hierarchy_builders import build_hierarchy, level_labels
from apps.assessments.hierarchy_defaults import completed_params, default_spec
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.services import forget_search
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets.cluster import cluster_column_values, dataset_is_cluster
from apps.datasets.storage import local_path
from apps.engine import hierarchies as h
from apps.engine.criteria import size_for_risk
from apps.engine.hierarchies.mapping import MAX_GROUPS, level_mapping
from apps.engine.threshold import DEFAULT_PROFILE, get_profile

Kind = HierarchySpec.Kind
logger = logging.getLogger(__name__)


def column_values(assessment: Assessment, column: str) -> pl.DataFrame:
    """Distinct values of one column (as text, as the engine compares them) with counts;
    of a cluster table, counted on its cluster."""
    if dataset_is_cluster(assessment.dataset):
        return cluster_column_values(assessment.dataset, column)
    with local_path(assessment.dataset.parquet_path) as path:
        return (
            pl.scan_parquet(path)
            .select(pl.col(column).cast(pl.String).alias("value"))
            .group_by("value")
            .agg(pl.len().alias("count"))
            .sort("value", nulls_last=True)
            .collect()
        )


def value_counts(assessment: Assessment, column: str) -> dict[str, int]:
    """Records per original value of one column (missing values apart), as the engine
    compares them (text)."""
    counts = column_values(assessment, column)
    return {str(value): int(n) for value, n in counts.iter_rows() if value is not None}


def class_threshold(assessment: Assessment) -> int:
    """k, the class size Step 3's threshold asks for (1/k ≤ threshold): an original value
    held by fewer records is never shown to someone not allowed raw values. Before Step 3,
    the strictest threshold of the profile."""
    result = assessment.threshold_result or {}
    if result.get("value"):
        return size_for_risk(float(result["value"]))
    profile = get_profile(assessment.threshold_profile or DEFAULT_PROFILE)
    return size_for_risk(min(profile.thresholds.values()))


def value_lists(assessment: Assessment, hierarchies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each quasi-identifier of the applied release, what each released value contains,
    told without any original value held by fewer than k records (``class_threshold``), for
    the report and the review page: people who may not see the data read them
    (apps.engine.hierarchies.mapping). ``hierarchies``: the frozen specs (column, arx_csv,
    level_labels). A quasi-identifier kept as it is gets no list: its released values are
    the original ones. Read from the data set the release was made from (its Parquet copy,
    never changed after upload)."""
    levels = (assessment.apply_result or {}).get("levels") or {}
    k = class_threshold(assessment)
    out = []
    for spec in hierarchies:
        level = levels.get(spec["column"])
        if level is None:
            continue
        labels = list(spec.get("level_labels") or [])
        entry: dict[str, Any] = {
            "column": spec["column"],
            "level": level,
            "level_label": labels[level] if level < len(labels) else f"level {level}",
            "kept": level == 0,
            "min_records": k,
            "max_groups": MAX_GROUPS,
        }
        if level > 0:
            try:
                counts = value_counts(assessment, spec["column"])
            except (OSError, pl.exceptions.PolarsError):
                logger.warning("the values of %s could not be read", spec["column"])
                entry["unavailable"] = True
            else:
                mapping = level_mapping(
                    h.parse_arx_text(spec["arx_csv"], spec["column"]),
                    int(level),
                    counts=counts,
                    min_records=k,
                )
                entry |= {
                    "groups": mapping.groups,
                    "groups_total": mapping.groups_total,
                    "values_total": mapping.values_total,
                }
        out.append(entry)
    return out


@transaction.atomic
def hierarchy_set(
    *, assessment: Assessment, column: str, kind: str, params: dict[str, Any], arx_text: str = ""
) -> HierarchySpec:
    assessment_editable(assessment)
    if column not in quasi_identifiers(assessment):
        raise ApplicationError(
            f"'{column}' is not a confirmed quasi-identifier.", {"column": column}
        )
    values = column_values(assessment, column)["value"].to_list()
    params = completed_params(kind, params, values)
    hierarchy = build_hierarchy(column, kind, params, values, arx_text)
    text = h.format_arx_text(hierarchy)
    spec, _ = HierarchySpec.objects.update_or_create(
        assessment=assessment,
        column=column,
        defaults={
            "organization": assessment.organization,
            "kind": kind,
            "params": params,
            "arx_csv": text,
            "height": hierarchy.height,
            "level_labels": level_labels(kind, params, hierarchy.height),
        },
    )
    if assessment.apply_result is not None:  # the applied output no longer matches
        steps.mark_stale(assessment, "deidentify")
    # New hierarchies make the last search's solutions meaningless.
    fields = forget_search(assessment)
    assessment.save(update_fields=[*fields, "step_state", "updated_at"])
    return spec


def hierarchies_ensure(*, assessment: Assessment) -> list[HierarchySpec]:
    """A spec for every quasi-identifier: the default one where none was set yet; specs of
    columns no longer classified as quasi-identifiers are removed. Writes, so only for a
    draft and never on a GET (pages show ``hierarchies_proposed``)."""
    quasi = quasi_identifiers(assessment)
    existing = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    if set(existing) == set(quasi):
        return [existing[c] for c in quasi]
    with transaction.atomic():
        assessment_editable(assessment)
        HierarchySpec.objects.filter(assessment=assessment).exclude(column__in=quasi).delete()
        for column, spec in hierarchies_proposed(assessment=assessment).items():
            if spec._state.adding:
                existing[column] = hierarchy_set(
                    assessment=assessment, column=column, kind=spec.kind, params=spec.params
                )
    return [existing[c] for c in quasi]


def hierarchies_proposed(*, assessment: Assessment) -> dict[str, HierarchySpec]:
    """Per quasi-identifier, its saved spec, or the default one built but not saved (a
    default that cannot be built over the values falls back to keep-or-suppress)."""
    quasi = quasi_identifiers(assessment)
    saved = {
        s.column: s for s in HierarchySpec.objects.filter(assessment=assessment, column__in=quasi)
    }
    variables = {
        v.name: v for v in Variable.objects.filter(dataset=assessment.dataset, name__in=quasi)
    }
    proposed: dict[str, HierarchySpec] = {}
    for column in quasi:
        if column in saved:
            proposed[column] = saved[column]
            continue
        values = column_values(assessment, column)["value"].to_list()
        kind, params = default_spec(variables[column], values)
        try:
            hierarchy = build_hierarchy(column, kind, params, values)
        except ApplicationError:
            kind, params = Kind.SUPPRESS, {}
            hierarchy = build_hierarchy(column, kind, params, values)
        proposed[column] = HierarchySpec(
            organization=assessment.organization,
            assessment=assessment,
            column=column,
            kind=kind,
            params=params,
            arx_csv=h.format_arx_text(hierarchy),
            height=hierarchy.height,
            level_labels=level_labels(kind, params, hierarchy.height),
        )
    return proposed


def hierarchy_of(spec: HierarchySpec) -> h.Hierarchy:
    return h.parse_arx_text(spec.arx_csv, spec.column)


def hierarchy_preview(
    assessment: Assessment, spec: HierarchySpec, *, raw_values: bool = True
) -> list[dict[str, Any]]:
    """Every level's groups with the number of records in each (missing values apart).

    For someone not allowed raw values (``raw_values`` False), a group that is itself an
    original value held by fewer than k records (``class_threshold``) is shown without its
    value (None), as the report does (apps.engine.hierarchies.mapping)."""
    counts = column_values(assessment, spec.column)
    hierarchy = hierarchy_of(spec)
    dictionary = counts["value"]
    lookup = hierarchy.lookup(dictionary)
    rare: set[str] = set()
    if not raw_values:
        k = class_threshold(assessment)
        rare = {str(v) for v, n in counts.iter_rows() if v is not None and n < k}
    levels = []
    for level in range(hierarchy.height + 1):
        codes = lookup.maps[level]
        labels = lookup.labels[level]
        grouped = (
            pl.DataFrame({"g": codes.astype("int64"), "count": counts["count"]})
            .group_by("g")
            .agg(pl.col("count").sum())
            .sort("count", descending=True)
        )
        groups = [
            (labels[g] if labels[g] is not None else "(missing)", int(n))
            for g, n in grouped.iter_rows()
        ]
        shown = [(None if label in rare else label, n) for label, n in groups[:12]]
        levels.append(
            {
                "level": level,
                "name": spec.level_labels[level]
                if level < len(spec.level_labels)
                else f"level {level}",
                "groups": len(groups),
                "smallest": min((n for _, n in groups), default=0),
                "top": shown,
            }
        )
    return levels
