"""Step 7's search on data with several rows per person (issue 25; LONGITUDINAL.md §3.2).

One lattice over the person-level and the event-level hierarchies (an event-level level
applies to every event), searched by the engine's longitudinal search
(``apps.engine.longitudinal.optimal_search``): at each node, events are suppressed first
(the least-shared feature of a failing person, within the event limit), then whole persons
(within the person limit); the node passes when every kept person's strict count at the
adversary power meets the release's target. The optimum is the passing node of least
information loss; the alternatives are the optima under smaller budgets that no other
alternative beats in persons suppressed, events suppressed and loss.

The search job of an assessment goes through :func:`assessment_search_dispatch`: a data
set with a person key is searched here, in persons; any other by
``apps.assessments.search_job.assessment_search_handler``, on records as before.

The person key leaves the release only as a keyed pseudonym; its key is chosen by
:func:`person_pseudonym_key` alone (the domain's key, else a new key per release).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import polars as pl
from django.db import transaction

from apps.assessments.configuration import DeidConfig
from apps.assessments.deidentify import deid_config, search_target
from apps.assessments.domains import release_pseudonym_keys
from apps.assessments.hierarchies import hierarchies_ensure, hierarchy_of
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.person_dates import (
    check_dates,
    date_spec,
    dates_state,
    derived_facts,
    dimension_levels,
    event_count_spec,
    fixed_levels,
    person_dates,
)
from apps.assessments.person_tables import longitudinal_data, row_tables
from apps.assessments.persons import (
    check_person_level,
    effective_levels,
    refuse_longitudinal_deidentify,
    suggested_levels,
)
from apps.assessments.search_job import assessment_search_handler
from apps.assessments.services import assessment_lock_draft, quasi_identifiers
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.criteria import Criterion, criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.frame import read_table
from apps.engine.longitudinal import (
    CountingBudgetExceeded,
    LongitudinalProblem,
    NodeResult,
    Power,
    Workspace,
    optimal_search,
    parse_power,
    prepare,
)
from apps.engine.longitudinal.release import Budgets, budgets_reproducing
from apps.engine.progress import SearchProgress
from apps.jobs.models import Job
from apps.jobs.services import JobContext


def person_pseudonym_key(assessment: Assessment) -> bytes:
    """The key of the person key's pseudonyms in a release of ``assessment``: the named
    pseudonymisation domain's key when Step 1 chose one (releases of the domain link through
    the pseudonym), else a new random key (unlinkable); `domains.release_pseudonym_keys` is
    the one place every release's keys come from. Kept sealed with the release's keys."""
    assert assessment.person_key
    return release_pseudonym_keys(assessment, [assessment.person_key])[assessment.person_key]


@dataclass(frozen=True)
class PersonInputs:
    """What a search or a release of person-keyed data works on, built once by
    :func:`person_inputs`."""

    frame: pl.DataFrame  # the columns read, rows in the data set's order
    # linked tables: each row's event table (None: a person without events); else None
    row_tables: pl.Series | None
    structure: dict[str, Any] | None
    person_key: str
    quasi: list[str]
    person_quasi: list[str]
    event_quasi: list[str]
    specs: dict[str, HierarchySpec]
    problem: LongitudinalProblem
    power: Power
    config: DeidConfig
    target: dict[str, Any]
    criterion: Criterion


def _refuse_engine(exc: EngineError, power: Power) -> ApplicationError:
    if isinstance(exc, CountingBudgetExceeded):
        return ApplicationError(
            f"The exact per-person count at adversary power {power} would take too long: "
            f"{exc}. Lower the highest levels allowed less, choose a lower power (Step 4), "
            "or coarsen a hierarchy; deidweb never reports an estimate as exact."
        )
    return ApplicationError(f"The search on persons failed: {exc}")


def person_inputs(assessment: Assessment, *, all_columns: bool = False) -> PersonInputs:
    """Read the data set (the person key and quasi-identifiers, or every column), check
    the person key and the levels as Step 2 and Step 4 do, and prepare the engine's
    problem over the saved hierarchies (each missing one saved with its default first)."""
    refuse_longitudinal_deidentify(assessment)
    key = assessment.person_key
    quasi = quasi_identifiers(assessment)
    if not quasi:
        raise ApplicationError(
            "No confirmed quasi-identifier: finish Step 2 first.", {"step": "classification"}
        )
    config = deid_config(assessment)
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    with local_path(assessment.dataset.parquet_path) as path:
        lazy = read_table(path)
        frame = (lazy if all_columns else lazy.select([key, *quasi])).collect()
    if frame.get_column(key).null_count():
        raise ApplicationError(
            f"Some rows have no value in the person key '{key}': every row must name its "
            "person (Step 2).",
            {"step": "classification", "person_key": key},
        )
    structure = assessment.dataset.table_structure or None
    levels = effective_levels(
        assessment.person_levels, quasi, suggested_levels(frame, key, quasi, structure)
    )
    check_person_level(frame, key, levels)
    dates = person_dates(config)
    check_dates(frame, dates, levels)
    # dates have the engine's own levels (calendar, or anchor and intervals)
    dated = set(dates.columns) if dates is not None else set()
    person_quasi = [q for q in quasi if levels[q] == "person"]
    event_quasi = [q for q in quasi if levels[q] == "event"]
    power = parse_power(assessment.adversary_power)
    try:
        criterion = criterion_for_release(
            target["release_model"], target["threshold"], target["context_risk"]
        )
        # Step 4's persons and events: on linked tables a person without events has none
        data = longitudinal_data(
            structure, frame, person=key, person_quasi=person_quasi, event_quasi=event_quasi
        )
        problem = prepare(
            data,
            hierarchies={q: hierarchy_of(specs[q]) for q in quasi if q not in dated},
            dates=date_spec(config),
            event_count=event_count_spec(config),
            require_hierarchies=True,
        )
    except EngineError as exc:
        raise _refuse_engine(exc, power) from None
    return PersonInputs(
        frame=frame,
        row_tables=row_tables(structure, frame.height),
        structure=structure,
        person_key=key,
        quasi=[*person_quasi, *event_quasi],
        person_quasi=person_quasi,
        event_quasi=event_quasi,
        specs=specs,
        problem=problem,
        power=power,
        config=config,
        target=target,
        criterion=criterion,
    )


def node_data(node: NodeResult, budgets: Budgets | None) -> dict[str, Any]:
    """A node as stored with the search: the engine's figures in persons and events, the
    budgets that reproduce its suppression, and ``suppressed_rows`` (events removed, by
    either reason) for the pages shared with record-level searches."""
    return {
        **node.to_dict(),
        "suppressed_rows": node.suppressed_events + node.events_of_suppressed_persons,
        "budgets": budgets.to_dict() if budgets is not None else None,
    }


def _budgets(inputs: PersonInputs, node: NodeResult, space: Workspace) -> Budgets | None:
    return budgets_reproducing(
        inputs.problem,
        node.levels,
        criterion=inputs.criterion,
        power=inputs.power,
        suppression_limit=float(inputs.config.suppression_limit),
        event_suppression_limit=float(inputs.config.event_suppression_limit),
        suppressed_persons=node.suppressed_persons,
        suppressed_events=node.suppressed_events,
        workspace=space,
    )


def person_search_handler(job: Job, context: JobContext, assessment: Assessment) -> dict[str, Any]:
    """The search job on person-keyed data (module docstring); stores its result and the
    optimum as the chosen solution."""
    started = time.perf_counter()
    context.progress(3, "Reading the persons and their events", force=True)
    inputs = person_inputs(assessment)
    config, problem = inputs.config, inputs.problem
    read = time.perf_counter() - started

    def listen(progress: SearchProgress) -> None:
        context.progress(
            5 + 85 * progress.fraction,
            f"{progress.nodes_evaluated:,} of {progress.nodes_total:,} generalizations "
            "evaluated, counting persons",
        )

    context.progress(5, "Searching the generalization lattice over persons and events", force=True)
    space = Workspace(problem)
    heights, labels = dimension_levels(problem, inputs.specs)
    names = list(problem.names)
    caps = {q: int(v) for q, v in config.max_levels.items() if q in names}
    caps.update(fixed_levels(problem))
    try:
        result = optimal_search(
            problem,
            inputs.criterion,
            power=inputs.power,
            suppression_limit=float(config.suppression_limit),
            event_suppression_limit=float(config.event_suppression_limit),
            max_levels=caps or None,
            pareto=True,
            progress=listen,
            workspace=space,
        )
    except EngineError as exc:
        raise _refuse_engine(exc, inputs.power) from None
    searched = time.perf_counter()
    context.progress(92, "Recording the suppression of each solution", force=True)

    # every solution shown with the figures its release would measure (person_nodes);
    # imported here: that module builds on this one's inputs and on the release's writer
    from apps.assessments.person_nodes import measured_node

    def stored_node(node: NodeResult) -> dict[str, Any]:
        return measured_node(
            inputs, node_data(node, _budgets(inputs, node, space)), workspace=space
        )

    quasi = inputs.quasi
    solution = stored_node(result.solution) if result.solution is not None else None
    # One alternative per generalization: a solution is chosen by its levels (Step 7),
    # so of the outcomes at the same levels (other budgets) the optimum's, else the one
    # of least loss, is offered.
    alternatives = [solution] if solution is not None else []
    for other in sorted(result.pareto, key=lambda n: n.information_loss):
        if all(a["levels"] != other.levels for a in alternatives):
            alternatives.append(stored_node(other))
    alternatives.sort(
        key=lambda n: (n["suppressed_persons"], n["suppressed_events"], n["information_loss"])
    )
    levels = result.levels
    stored = {
        "unit": "person",
        "person_key": inputs.person_key,
        "person_quasi": inputs.person_quasi,
        "event_quasi": inputs.event_quasi,
        "quasi_identifiers": quasi,
        "persons": problem.persons,
        "events": problem.events,
        "rows": problem.events,
        "power": str(result.power),
        "k": result.k,
        "metric": "loss",
        "suppression_limit": float(config.suppression_limit),
        "event_suppression_limit": float(config.event_suppression_limit),
        "person_budget": result.person_budget,
        "event_budget": result.event_budget,
        "max_levels": dict(config.max_levels),
        "privacy_models": [],
        "release_model": inputs.target["release_model"],
        "criterion": result.criterion,
        "data_risk_target": inputs.target["data_risk_target"],
        "target_class_size": inputs.target.get("target_class_size"),
        "heights": heights,
        "level_labels": labels,
        # the derived quasi-identifiers (event count, anchor) beside the columns
        "dimensions": names,
        **derived_facts(problem),
        **dates_state(config),
        "solution": solution,
        "levels": levels,
        "pareto": alternatives,
        "levels_text": ", ".join(
            f"{q}: {labels[q][lv] if lv < len(labels[q]) else lv}"
            for q, lv in (levels or {}).items()
        ),
        "nodes_total": result.nodes_total,
        "nodes_evaluated": result.nodes_evaluated,
        "nodes_over_budget": result.nodes_over_budget,
        "optimal": result.optimal,
        "outcome": "optimal" if result.optimal else "time_budget",
        "caps": {q: v for q, v in caps.items() if v < heights[q]},
        "nodes_uncapped": math.prod(heights[d.name] + 1 - d.min_level for d in problem.dimensions),
        "seconds": result.seconds,
        "timing": {
            "read": read,
            "search": searched - started - read,
            "total": time.perf_counter() - started,
        },
    }
    with transaction.atomic():
        locked = assessment_lock_draft(assessment.id)
        locked.search_result = stored
        locked.chosen_levels = levels
        locked.save(update_fields=["search_result", "chosen_levels", "updated_at"])
    return {
        "found": solution is not None,
        "levels": levels,
        "nodes_evaluated": result.nodes_evaluated,
        "suppressed_persons": solution["suppressed_persons"] if solution else None,
        "suppressed_events": solution["suppressed_events"] if solution else None,
    }


def assessment_search_dispatch(job: Job, context: JobContext) -> dict[str, Any]:
    """The search job: in persons when the data set has a person key, else on records."""
    assessment = Assessment.objects.select_related("dataset").get(
        id=job.params["assessment_id"], organization=job.organization
    )
    if assessment.person_key:
        return person_search_handler(job, context, assessment)
    return assessment_search_handler(job, context)
