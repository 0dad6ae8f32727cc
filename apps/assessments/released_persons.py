"""The released persons and events as the risk measures them (issue 25; LONGITUDINAL.md
§2.6, §2.7): one place for the re-measure of a person release
(``person_release_measure.measure_released_data``) and its attack tests
(``person_attack_tests``), so that both see the same derived person-level
quasi-identifiers:

* the **number of events** of a person (a recipient counts a pseudonym's rows in the long
  table or the event tables), with the top-code the search used ("N or more" beyond it),
  at its chosen level;
* in the anchored mode, the **anchor** as the release writes it (its column, at its level);
* with **shifted dates**, what the shift leaves: each date as its interval in days from
  the person's first date, and the anchor no finer than the shift allows
  (``person_dates.remeasure_settings``). Computed alike on the original dates (the
  adversary's) and the shifted ones (the release's); no offset is computed or kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from apps.assessments.longitudinal_search import PersonInputs
from apps.assessments.person_dates import (
    ANCHOR_LEVEL_NAMES,
    EVENT_COUNT_LEVELS,
    INTERVAL_LEVEL_NAMES,
    remeasure_settings,
)
from apps.assessments.person_tables import linked_data
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.longitudinal import LongitudinalProblem, from_long_table, prepare
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.longitudinal.dates import ANCHOR
from apps.engine.longitudinal.problem import EVENT_COUNT


def released_data(
    inputs: PersonInputs,
    frame: pl.DataFrame,
    tables: pl.Series | None,
    levels: Mapping[str, int],
) -> LongitudinalData:
    """The release's persons and events from its long table (``frame``: the person column
    and every quasi-identifier as released, with the derived columns the release adds);
    for linked tables (``tables``: each row's event table) as Step 4 counts them."""
    added = remeasure_settings(inputs.problem, levels)[0]
    person_quasi = [*inputs.person_quasi, *added]
    columns = frame.select([inputs.person_key, *inputs.quasi, *added])
    try:
        if tables is not None and inputs.structure is not None:
            return linked_data(
                inputs.structure,
                columns,
                tables,
                person=inputs.person_key,
                person_quasi=person_quasi,
                event_quasi=inputs.event_quasi,
            )
        return from_long_table(
            columns,
            person=inputs.person_key,
            person_quasi=person_quasi,
            event_quasi=inputs.event_quasi,
        )
    except EngineError as exc:
        raise ApplicationError(f"The release could not be measured in persons: {exc}") from None


def released_problem(
    problem: LongitudinalProblem, data: LongitudinalData, levels: Mapping[str, int]
) -> tuple[LongitudinalProblem, dict[str, int]]:
    """Released persons and events prepared as the search measured them (module
    docstring), with the levels to read them at (raises the engine's error)."""
    _added, dates, counted, at = remeasure_settings(problem, levels)
    return prepare(data, dates=dates, event_count=counted), at


def derived_known(
    problem: LongitudinalProblem, levels: Mapping[str, int], event_quasi: Sequence[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The derived person-level quasi-identifiers an adversary knows of a person release,
    and the facts as the attack result lists them: the event count when the risk counts it
    (the release always reveals it); the anchor when the risk counts it and the adversary
    knows a date column (``event_quasi``: the known event-level columns); with shifted
    dates, also the intervals the known date columns leave."""
    node = dict(zip(problem.names, problem.levels_of(levels), strict=True))
    dates = problem.dates
    dated = [c for c in event_quasi if dates is not None and c in dates.columns]
    names: list[str] = []
    facts: list[dict[str, Any]] = []
    if EVENT_COUNT in node:
        names.append(EVENT_COUNT)
        level = EVENT_COUNT_LEVELS[node[EVENT_COUNT]]
        top = problem.event_count_top
        facts.append({"fact": EVENT_COUNT, "level": level, "top_code": top, "columns": []})
    if ANCHOR in node and dated:
        names.append(ANCHOR)
        level = ANCHOR_LEVEL_NAMES[node[ANCHOR]]
        facts.append({"fact": ANCHOR, "level": level, "columns": dated})
    if dates is not None and dates.shift_days is not None and dated:
        level = INTERVAL_LEVEL_NAMES[node[dated[0]]]
        facts.append({"fact": "intervals", "level": level, "columns": dated})
    return names, facts
