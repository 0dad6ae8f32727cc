"""Step 7's search on data with several rows per person (issue 25; LONGITUDINAL.md §3.2).

One lattice over the person-level and the event-level hierarchies (an event-level level
applies to every event), searched by the engine's longitudinal search
(``apps.engine.longitudinal.optimal_search``): at each node, events are suppressed first
(the least-shared feature of a failing person, within the event limit), then whole persons
(within the person limit); the node passes when every kept person's strict count at the
adversary power meets the release's target. The optimum is the passing node of least
information loss; the alternatives are the optima under smaller budgets that no other
alternative beats in persons suppressed, events suppressed and loss.

The inputs and each node's stored form are here; the job that runs the search and stores
its result is ``person_search_job``.

The person key leaves the release only as a keyed pseudonym; its key is chosen by
:func:`person_pseudonym_key` alone (the domain's key, else a new key per release).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from apps.assessments.configuration import DeidConfig
from apps.assessments.deidentify import deid_config, search_target
from apps.assessments.domains import release_pseudonym_keys
from apps.assessments.hierarchies import hierarchies_ensure, hierarchy_of
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.person_dates import (
    check_dates,
    date_spec,
    event_count_spec,
    person_dates,
)
from apps.assessments.person_suppression import COUNTED_ONCE
from apps.assessments.person_tables import longitudinal_data, row_tables
from apps.assessments.persons import (
    check_person_level,
    effective_levels,
    refuse_longitudinal_deidentify,
    suggested_levels,
)
from apps.assessments.selectors import quasi_identifiers
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.criteria import Criterion, criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.longitudinal import (
    CountingBudgetExceeded,
    LongitudinalProblem,
    NodeResult,
    Power,
    Workspace,
    parse_power,
    prepare,
)
from apps.engine.longitudinal.release import Budgets, budgets_reproducing
from apps.engine.reading import read_table


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


def search_refusal(exc: EngineError, power: Power) -> ApplicationError:
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
        raise search_refusal(exc, power) from None
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
        # each removed event counted once (person_suppression tells older nodes apart)
        "counting": COUNTED_ONCE,
        "budgets": budgets.to_dict() if budgets is not None else None,
    }


def node_budgets(inputs: PersonInputs, node: NodeResult, space: Workspace) -> Budgets | None:
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
