"""Step 7's search job on data with several rows per person (issue 25; LONGITUDINAL.md
§3.2): the engine's search over persons and events (``longitudinal_search``), each
solution stored with the figures its release measures (``person_nodes``), the optimum
chosen. The search job of an assessment goes through :func:`assessment_search_dispatch`:
a data set with a person key is searched here, in persons; any other by
``apps.assessments.search_job.assessment_search_handler``, on records as before.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.db import transaction

from apps.assessments.drafts import assessment_lock_draft
from apps.assessments.longitudinal_search import (
    node_budgets,
    node_data,
    person_inputs,
    search_refusal,
)
from apps.assessments.models import Assessment
from apps.assessments.person_dates import dates_state, derived_facts, dimension_levels, fixed_levels
from apps.assessments.person_nodes import measured_node
from apps.assessments.search_job import assessment_search_handler
from apps.engine.errors import EngineError
from apps.engine.longitudinal import NodeResult, Workspace, optimal_search
from apps.engine.progress import SearchProgress
from apps.jobs.context import JobContext
from apps.jobs.models import Job


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
        raise search_refusal(exc, inputs.power) from None
    searched = time.perf_counter()
    context.progress(92, "Recording and measuring the release of each solution", force=True)

    # every solution shown with the figures its release would measure (person_nodes)
    def stored_node(node: NodeResult) -> dict[str, Any]:
        return measured_node(
            inputs, node_data(node, node_budgets(inputs, node, space)), workspace=space
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
