"""Step 7's search job: the one builder of a search's inputs (``SearchInputs``, which the
pre-check reads too), the exact optimal search over the generalization lattice or, beyond
what it can settle, the heuristic one, and their result as stored for the page and the report. The settings it
reads, its start and the choice among its solutions are in ``deidentify.py``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
from django.db import transaction

from apps.assessments.configuration import DeidConfig
from apps.assessments.deidentify import deid_config, search_target
from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.hierarchies import hierarchies_ensure
from apps.assessments.lattice_advice import suggestions_to_drop
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.persons import refuse_row_search
from apps.assessments.privacy_models import (
    EncodedSearch,
    encode_for_search,
    encoded_for_search,
    models_of,
)
from apps.assessments.selectors import quasi_identifiers
from apps.core.errors import ApplicationError
from apps.datasets.cluster import cluster_histogram, dataset_is_cluster, job_progress
from apps.datasets.storage import local_path
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.frame import IN_MEMORY_ROWS
from apps.engine.lattice import max_nodes
from apps.engine.progress import SearchProgress
from apps.engine.reading import read_table
from apps.engine.search import optimal_search
from apps.engine.search.heuristic import heuristic_search
from apps.engine.search.problem import lattice_tops
from apps.jobs.context import JobContext
from apps.jobs.models import Job

if TYPE_CHECKING:
    from apps.engine.criteria import Criterion
    from apps.engine.search import SearchProblem
    from apps.engine.search.sensitive import SensitiveTable


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
    progress: Callable[[float, str], None] | None = None,  # a cluster's counting
) -> SearchInputs:
    """The one builder of a search's inputs (``SearchInputs``). ``specs``: the hierarchies
    (None: those saved, each missing one saved with its default first, as the search does;
    the pre-check passes those it would get without saving). ``reading`` is called before
    the data is read; ``timing`` receives the seconds spent reading and encoding."""
    started = time.perf_counter()
    quasi = quasi_identifiers(assessment)
    config = deid_config(assessment)
    target = search_target(assessment)
    if specs is None:
        specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    if reading is not None:
        reading()
    columns = list(dict.fromkeys([*quasi, *(m.column for m in models_of(config))]))
    if dataset_is_cluster(assessment.dataset):  # counted on the cluster, next to the data
        histogram = cluster_histogram(assessment.dataset, columns, progress=progress)
        encoding = time.perf_counter()
        encoded = encoded_for_search(histogram, quasi, specs, config)
    else:
        with local_path(assessment.dataset.parquet_path) as path:
            lazy = read_table(path).select(columns)
            # (a table that fits is read first, then encoded in compiled passes; a larger
            # one is read while it is encoded, in one streaming pass: "read" is then the
            # opening of the file only)
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
    refuse_row_search(assessment)
    started = time.perf_counter()
    timing: dict[str, float] = {}
    inputs = search_inputs(
        assessment,
        reading=lambda: context.progress(
            3, "Reading and encoding the quasi-identifiers", force=True
        ),
        timing=timing,
        progress=job_progress(context, 3, 5),
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
