"""Step 7 (masking, generalization, suppression found by the optimal search) and the
output that Step 8 measures. Search and apply run as jobs: the search's in
``search_job.py``, the apply's in ``release_apply.py``; here the settings, the start of a
search and the choice among its solutions."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments import steps
from apps.assessments.configuration import (
    DeidConfig,
    Masking,
    PrivacyModel,
    masking_method_check,
    masking_numbers_check,
    parse,
)
from apps.assessments.drafts import assessment_editable
from apps.assessments.freetext import free_text_columns
from apps.assessments.hierarchies import hierarchies_ensure, hierarchies_proposed
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.person_dates import engine_heights
from apps.assessments.persons import refuse_longitudinal_deidentify
from apps.assessments.privacy_models import privacy_models_check
from apps.assessments.selectors import overall_risk, quasi_identifiers, sensitive_columns
from apps.assessments.services import assessment_job_start
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.engine.masking import mapped_values_refusal
from apps.jobs.models import Job

logger = logging.getLogger(__name__)


def direct_identifiers(assessment: Assessment) -> list[str]:
    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="direct")
        .order_by("position")
        .values_list("name", flat=True)
    )


def deid_config(assessment: Assessment, *, directs: list[str] | None = None) -> DeidConfig:
    """The stored configuration completed: every direct identifier not listed is removed,
    and one no longer a direct identifier is left out; with the defaults of ``DeidConfig``
    for what was never set (5% suppression, the `loss` metric, no maximum levels, the
    released CSV guarded against spreadsheet formulas). ``directs`` overrides the data
    set's current direct identifiers (a frozen record passes the roles it froze)."""
    config = DeidConfig.from_json(assessment.deid_config)
    masking = dict(config.masking)
    current = direct_identifiers(assessment) if directs is None else directs
    for column in current:
        masking.setdefault(column, Masking("remove"))
    config = config.replace(masking={c: m for c, m in masking.items() if c in current})
    if directs is None and config.privacy_models:
        # a variable no longer classified as sensitive loses its model
        still = set(sensitive_columns(assessment))
        config = config.replace(
            privacy_models=tuple(m for m in config.privacy_models if m.column in still)
        )
    return config


def _profiled(assessment: Assessment, column: str) -> dict[str, Any]:
    """The column's entry in the data set's profile ({} if not profiled)."""
    for entry in (assessment.dataset.profile or {}).get("columns") or []:
        if entry.get("name") == column:
            return dict(entry)
    return {}


def _distinct_values(assessment: Assessment, column: str) -> int:
    """The column's distinct values from the data set's profile (0 if not profiled)."""
    return int(_profiled(assessment, column).get("distinct") or 0)


def _check_character_mask(assessment: Assessment, column: str, masking: Masking) -> None:
    """A masking that keeps the value is not masking. It keeps something, at most half of a
    value of the column's typical length (the engine never keeps more than half of any
    value: `apps.engine.masking.kept_characters`), and it is not for free text, whose
    every word may name someone (scrub or remove it)."""
    keep = masking.leading + masking.trailing
    if keep <= 0:
        raise ApplicationError(
            f"Character masking of '{column}' keeps nothing: say how many leading or "
            "trailing characters to keep, or remove the column.",
            {"column": column},
        )
    if column in free_text_columns(assessment):
        raise ApplicationError(
            f"'{column}' is free text: character masking would release the start or end of "
            "each text as it is. Scrub it (each detected identifier replaced) or remove it.",
            {"column": column},
        )
    mean = _profiled(assessment, column).get("mean_length")
    if mean is None:
        return
    allowed = max(1, int(float(mean)) // 2)
    if keep > allowed:
        raise ApplicationError(
            f"Character masking of '{column}' would keep {keep} characters of values "
            f"{float(mean):.0f} characters long on average: a masking keeps at most half of "
            f"a value ({allowed} here). Keep fewer characters, or pseudonymize or remove it.",
            {"column": column, "field": "keep_leading"},
        )


def masking_check(assessment: Assessment, masking: Mapping[str, Masking]) -> None:
    """Step 7.1's masking settings, refused with a message naming the column: the one check
    of the settings page, the API and the apply job (a stored setting from before a rule
    is refused when the file is written)."""
    directs = set(direct_identifiers(assessment))
    for column, spec in masking.items():
        if column not in directs:
            raise ApplicationError(f"'{column}' is not a direct identifier.", {"column": column})
        masking_method_check(column, spec)
        masking_numbers_check(column, spec)
        refusal = mapped_values_refusal(column, spec.method, _distinct_values(assessment, column))
        if refusal:
            raise ApplicationError(refusal, {"column": column})
        if spec.method == "mask":
            _check_character_mask(assessment, column, spec)


def _max_levels_check(assessment: Assessment, config: DeidConfig) -> None:
    max_levels = dict(config.max_levels)
    # dates, the anchor and the event count of person-keyed data: the engine's levels
    for column, height in engine_heights(config).items():
        level = max_levels.pop(column, None)
        if level is not None and not 0 <= level <= height:
            raise ApplicationError(
                f"The maximum level of '{column}' must be between 0 and {height}.",
                {"column": column},
            )
    specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    if any(column not in specs for column in max_levels):
        # A quasi-identifier without a saved hierarchy has its default one, which the page
        # and the API show and the search will use: a cap applies to it as to a saved one.
        specs = {**hierarchies_proposed(assessment=assessment), **specs}
    for column, level in max_levels.items():
        hierarchy = specs.get(column)
        if hierarchy is None:
            raise ApplicationError(
                f"'{column}' is not a quasi-identifier: a maximum level applies to the "
                "generalization hierarchy of a quasi-identifier (Step 2).",
                {"column": column},
            )
        if not 0 <= level <= hierarchy.height:
            raise ApplicationError(
                f"The maximum level of '{column}' must be between 0 and {hierarchy.height}.",
                {"column": column},
            )


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
    """Step 7's settings given as JSON values (``apps.assessments.configuration.parse``
    reads them); ``privacy_models`` None keeps the current ones."""
    assessment_editable(assessment)
    data: dict[str, Any] = {
        "masking": masking,
        "suppression_limit": suppression_limit,
        "metric": metric,
        "max_levels": max_levels,
        "csv_formula_guard": csv_formula_guard,
    }
    if privacy_models is not None:
        data["privacy_models"] = privacy_models
    deid_config_save(assessment=assessment, config=parse(data, base=deid_config(assessment)))


@transaction.atomic
def deid_config_save(*, assessment: Assessment, config: DeidConfig) -> None:
    """Step 7's settings, parsed (``apps.assessments.configuration.parse``), checked
    against the assessment: the masked columns are its direct identifiers, the capped
    ones quasi-identifiers with a hierarchy that high, the privacy models on its sensitive
    variables. ``csv_formula_guard``: prefix text cells of the released CSV that a
    spreadsheet would run as a formula (``apps.engine.formula_guard``); off only for
    analysis pipelines that need the raw values. The Parquet file is never altered.

    A change of what the search depends on drops its result; any change makes a written
    file stale. The readings of findings are kept; the further techniques are set again
    after the settings (``apps.assessments.techniques.techniques_set``)."""
    assessment_editable(assessment)
    masking_check(assessment, config.masking)
    _max_levels_check(assessment, config)
    old = deid_config(assessment)
    sensitive = sensitive_columns(assessment)
    numeric = set(
        Variable.objects.filter(
            dataset=assessment.dataset, name__in=sensitive, inferred_type__in=("integer", "decimal")
        ).values_list("name", flat=True)
    )
    models = privacy_models_check(
        config.privacy_models, sensitive=sensitive, numeric=sorted(numeric)
    )
    new = DeidConfig(
        masking=config.masking,
        suppression_limit=config.suppression_limit,
        event_suppression_limit=config.event_suppression_limit,
        metric=config.metric,
        max_levels=dict(config.max_levels),
        privacy_models=tuple(PrivacyModel(m["column"], m["spec"]) for m in models),
        csv_formula_guard=config.csv_formula_guard,
        identifiers_reviewed=old.identifiers_reviewed,
        columns_reviewed=old.columns_reviewed,
        release_form=old.release_form,
        dates=config.dates,
        event_count=config.event_count,
    )
    assessment.deid_config = new.to_json()
    if old.search_settings() != new.search_settings():
        assessment.search_result = None
        assessment.chosen_levels = None
    if assessment.apply_result is not None and old.settings() != new.settings():
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
    assessment_editable(assessment)
    refuse_longitudinal_deidentify(assessment)
    search_target(assessment)
    if not quasi_identifiers(assessment):
        raise ApplicationError(
            "No confirmed quasi-identifier: finish Step 2 first.", {"step": "classification"}
        )
    hierarchies_ensure(assessment=assessment)
    return assessment_job_start(assessment=assessment, user=user, kind="search")


@transaction.atomic
def assessment_choose_solution(*, assessment: Assessment, levels: dict[str, int]) -> None:
    """Pick the optimum or one of the Pareto alternatives (Step 8's trade-off)."""
    assessment_editable(assessment)
    search = assessment.search_result
    if not search:
        raise ApplicationError("Run the search first.", status=409)
    offered = [search["solution"]["levels"]] if search.get("solution") else []
    offered += [p["levels"] for p in search.get("pareto", [])]
    if levels not in offered:
        raise ApplicationError("Choose the optimum or one of the alternatives the search found.")
    assessment.chosen_levels = levels
    if assessment.apply_result is not None:
        steps.mark_stale(assessment, "deidentify")
    assessment.save(update_fields=["chosen_levels", "step_state", "updated_at"])
