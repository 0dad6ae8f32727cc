"""Step 7 (masking, generalization, suppression found by the optimal search) and the
output that Step 8 measures. Search and apply run as jobs."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
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
from apps.assessments.freetext import free_text_columns
from apps.assessments.hierarchies import hierarchies_ensure, hierarchies_proposed
from apps.assessments.lattice_advice import suggestions_to_drop
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.persons import refuse_longitudinal_deidentify
from apps.assessments.selectors import overall_risk
from apps.assessments.services import (
    assessment_editable,
    assessment_job_start,
    assessment_lock_draft,
    quasi_identifiers,
)
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.frame import IN_MEMORY_ROWS, read_table
from apps.engine.lattice import max_nodes
from apps.engine.masking import mapped_values_refusal
from apps.engine.progress import SearchProgress
from apps.engine.search import optimal_search
from apps.engine.search.problem import lattice_tops
from apps.jobs.models import Job
from apps.jobs.services import JobContext

if TYPE_CHECKING:
    from apps.assessments.privacy_models import EncodedSearch
    from apps.engine.criteria import Criterion
    from apps.engine.search import SearchProblem
    from apps.engine.search.sensitive import SensitiveTable

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
        from apps.assessments.services import sensitive_columns

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


def _max_levels_check(assessment: Assessment, max_levels: Mapping[str, int]) -> None:
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
    from apps.assessments.privacy_models import privacy_models_check
    from apps.assessments.services import sensitive_columns

    assessment_editable(assessment)
    masking_check(assessment, config.masking)
    _max_levels_check(assessment, config.max_levels)
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
        metric=config.metric,
        max_levels=dict(config.max_levels),
        privacy_models=tuple(PrivacyModel(m["column"], m["spec"]) for m in models),
        csv_formula_guard=config.csv_formula_guard,
        identifiers_reviewed=old.identifiers_reviewed,
        columns_reviewed=old.columns_reviewed,
        release_form=old.release_form,
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


@dataclass(frozen=True)
class SearchInputs:
    """The problem a search of this assessment solves, built once by ``search_inputs`` for
    the search job and its pre-check: the quasi-identifiers, the completed configuration,
    the risk target and its criterion, the hierarchies, and the data encoded on them."""

    quasi: list[str]
    config: DeidConfig
    target: dict[str, Any]
    specs: dict[str, HierarchySpec]
    criterion: Criterion
    encoded: EncodedSearch

    @property
    def problem(self) -> SearchProblem:
        return self.encoded.problem

    @property
    def sensitive(self) -> SensitiveTable | None:
        """The privacy models on sensitive variables (None without any)."""
        return self.encoded.sensitive

    @property
    def rows(self) -> int:
        return self.encoded.rows

    @property
    def distinct_tuples(self) -> int:
        return self.encoded.distinct_tuples


def search_inputs(
    assessment: Assessment,
    specs: dict[str, HierarchySpec] | None = None,
    *,
    reading: Callable[[], None] | None = None,
    timing: dict[str, float] | None = None,
) -> SearchInputs:
    """The one builder of a search's inputs (``SearchInputs``). ``specs``: the hierarchies
    (None: those saved, each missing one saved with its default first, as the search does;
    the pre-check passes those it would get without saving). ``reading`` is called before
    the data is read; ``timing`` receives the seconds spent reading and encoding."""
    from apps.assessments.privacy_models import encode_for_search, models_of

    started = time.perf_counter()
    quasi = quasi_identifiers(assessment)
    config = deid_config(assessment)
    target = search_target(assessment)
    if specs is None:
        specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    if reading is not None:
        reading()
    columns = list(dict.fromkeys([*quasi, *(m.column for m in models_of(config))]))
    with local_path(assessment.dataset.parquet_path) as path:
        lazy = read_table(path).select(columns)
        # (a table that fits is read first, then encoded in compiled passes; a larger one
        # is read while it is encoded, in one streaming pass: "read" is then the opening
        # of the file only)
        data: pl.LazyFrame | pl.DataFrame = (
            lazy.collect().rechunk() if assessment.dataset.rows <= IN_MEMORY_ROWS else lazy
        )
        encoding = time.perf_counter()
        encoded = encode_for_search(data, quasi, specs, config)
    if timing is not None:
        timing["read"] = encoding - started
        timing["encode"] = time.perf_counter() - encoding
    try:
        criterion = criterion_for_release(
            target["release_model"], target["threshold"], target["context_risk"]
        )
    except EngineError as exc:
        raise ApplicationError(f"Step 7 cannot start: {exc}") from None
    return SearchInputs(
        quasi=quasi,
        config=config,
        target=target,
        specs=specs,
        criterion=criterion,
        encoded=encoded,
    )


def assessment_search_handler(job: Job, context: JobContext) -> dict[str, Any]:
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    refuse_longitudinal_deidentify(assessment)
    started = time.perf_counter()
    timing: dict[str, float] = {}
    inputs = search_inputs(
        assessment,
        reading=lambda: context.progress(
            3, "Reading and encoding the quasi-identifiers", force=True
        ),
        timing=timing,
    )
    quasi, config, target, specs = inputs.quasi, inputs.config, inputs.target, inputs.specs
    encoded, problem, criterion = inputs.encoded, inputs.problem, inputs.criterion

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

    tops = lattice_tops(problem, dict(config.max_levels) or None)
    limit = max_nodes(len(tops))
    if math.prod(t + 1 for t in tops) > limit:
        if encoded.sensitive is not None:
            raise ApplicationError(
                "Privacy models on sensitive variables need the exact search, and this lattice "
                f"has more than the {limit:,} combinations it holds in its memory: drop or "
                "merge quasi-identifiers, or lower their maximum levels."
            )
        return _heuristic(
            assessment, job, context, problem, criterion, config, target, quasi, specs, encoded,
            timing, started,
        )  # fmt: skip
    context.progress(5, "Searching the generalization lattice", force=True)
    searching = time.perf_counter()
    try:
        result = optimal_search(
            problem,
            criterion,
            metric=config.metric,
            suppression_limit=float(config.suppression_limit),
            max_levels=dict(config.max_levels) or None,
            progress=listen,
            pareto=True,
            sensitive=encoded.sensitive,
        )
    except EngineError as exc:
        raise ApplicationError(f"The search failed: {exc}") from None
    timing["search"] = time.perf_counter() - searching
    storing = time.perf_counter()
    stored = {
        "quasi_identifiers": quasi,
        "rows": encoded.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "metric": config.metric,
        "suppression_limit": float(config.suppression_limit),
        "max_levels": dict(config.max_levels),
        "privacy_models": [m.to_json() for m in config.privacy_models],
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
        # (no time budget is given here: a search that is not optimal ran out of one)
        "outcome": "optimal" if result.optimal else "time_budget",
        **_lattice_scope(quasi, specs, config.max_levels),
        "seconds": result.seconds,
        "timing": dict(timing),
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.search_result = stored
        locked.chosen_levels = result.levels
        locked.save(update_fields=["search_result", "chosen_levels", "updated_at"])
    _finish_timing(timing, storing, started)
    if result.solution is None:
        return {"found": False, "nodes_evaluated": result.nodes_evaluated, "timing": timing}
    return {
        "found": True,
        "levels": result.levels,
        "nodes_evaluated": result.nodes_evaluated,
        "information_loss": result.solution.information_loss,
        "timing": timing,
    }


def _finish_timing(timing: dict[str, float], storing: float, started: float) -> None:
    """The job's own timing: read, encode, search, store (the stored result and its
    record), and the total from the job's start (Step 7 shows it)."""
    now = time.perf_counter()
    timing["store"] = now - storing
    timing["total"] = now - started


def _heuristic(
    assessment: Assessment,
    job: Job,
    context: JobContext,
    problem: Any,
    criterion: Any,
    config: DeidConfig,
    target: dict[str, Any],
    quasi: list[str],
    specs: dict[str, HierarchySpec],
    encoded: Any,
    timing: dict[str, float],
    started: float,
) -> dict[str, Any]:
    """More quasi-identifiers than the exact search can settle: a heuristic solution, with
    its bound on optimality, clearly labelled (``apps.engine.search.heuristic``)."""
    from apps.engine.search.heuristic import heuristic_search

    context.progress(
        5, "The lattice is too large for the exact search: heuristic search", force=True
    )
    searching = time.perf_counter()
    try:
        result = heuristic_search(
            problem,
            criterion,
            metric=config.metric,
            suppression_limit=float(config.suppression_limit),
            max_levels=dict(config.max_levels) or None,
        )
    except EngineError as exc:
        raise ApplicationError(f"The search failed: {exc}") from None
    timing["search"] = time.perf_counter() - searching
    storing = time.perf_counter()
    solution = _node(result.solution, quasi) if result.solution else None
    stored = {
        "quasi_identifiers": quasi,
        "rows": encoded.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "metric": config.metric,
        "suppression_limit": float(config.suppression_limit),
        "max_levels": dict(config.max_levels),
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
        "outcome": "heuristic",
        **_lattice_scope(quasi, specs, config.max_levels),
        "heuristic": {
            "method": result.method,
            "lower_bound": result.lower_bound,
            # found / lower bound: the optimum lies between the bound and the answer
            "ratio": result.ratio,
            "minimum_levels": dict(zip(quasi, result.minimum_levels, strict=True))
            if result.minimum_levels
            else None,
            "max_nodes": max_nodes(len(quasi)),
            "drop_or_merge": suggestions_to_drop(assessment, quasi, list(problem.heights)),
        },
        "seconds": result.seconds,
        "timing": dict(timing),
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.search_result = stored
        locked.chosen_levels = result.levels
        locked.save(update_fields=["search_result", "chosen_levels", "updated_at"])
    _finish_timing(timing, storing, started)
    return {
        "found": result.solution is not None,
        "levels": result.levels,
        "nodes_evaluated": result.nodes_evaluated,
        "heuristic": True,
        "ratio": result.ratio,
        "timing": timing,
    }


def _lattice_scope(
    quasi: list[str], specs: dict[str, HierarchySpec], max_levels: Mapping[str, int]
) -> dict[str, Any]:
    """What the search looked over, kept with its result (and so frozen with a submitted
    version): the levels the analyst capped (those below their hierarchy's top) and the
    lattice's size without them."""
    return {
        "caps": {
            q: int(max_levels[q])
            for q in quasi
            if q in max_levels and int(max_levels[q]) < specs[q].height
        },
        "nodes_uncapped": math.prod(specs[q].height + 1 for q in quasi),
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
