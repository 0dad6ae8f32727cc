"""A person release measured in persons (LONGITUDINAL.md §6): the written long table read
back as released persons (``released_persons``), its values as released and its pseudonym
as the person, measured as the search measured them (``apps.engine.longitudinal.measure``:
max and average risk, persons at risk, the figures for p = 1…5 and "all"); the data risk
Step 6 compares with its target; the persons by their number of events, top-coded; and
the risk before, from Step 4's result. The one measure of the long table, of linked tables
written again and of every solution Step 7 shows (``person_nodes``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from apps.assessments.longitudinal_search import PersonInputs
from apps.assessments.models import Assessment
from apps.assessments.released_persons import released_data, released_problem
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.longitudinal import REPORTED_POWERS, Power, measure
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.risk import DEFAULT_STRICT_AVERAGE_CAP


def data_risk(release_model: str, max_risk: float, average_risk: float) -> float:
    """The risk Step 6 compares with its target: the max risk for a public or semi-public
    release; for a non-public one the strict average (the max risk when above the cap)."""
    if release_model == "non_public":
        return max_risk if max_risk > DEFAULT_STRICT_AVERAGE_CAP else average_risk
    return max_risk


def count_distribution(
    counts: np.ndarray[Any, Any], top: int, *, zero: bool = False
) -> list[dict[str, Any]]:
    """Persons by their number of events, top-coded: one row per count below ``top``,
    then "top or more"; first the persons without events when ``zero`` (linked tables)."""
    rows = [{"events": "0", "persons": int((counts == 0).sum())}] if zero else []
    for c in range(1, top):
        rows.append({"events": str(c), "persons": int((counts == c).sum())})
    rows.append({"events": f"{top}+", "persons": int((counts >= top).sum())})
    return rows


def measure_release(
    inputs: PersonInputs,
    released: pl.DataFrame,
    target: float,
    tables: pl.Series | None = None,
    levels: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The written file measured per person: its values as released, its pseudonym as
    the person, at the chosen power and at p = 1…5 and "all". For linked tables
    (``tables``: each released row's event table) as Step 4 counts them: the row of a
    person without events is no event."""
    if released.height == 0:
        raise ApplicationError(
            "The chosen solution leaves no event to release: choose another one.", status=409
        )
    # the one view of released persons (released_persons): also the attacks'
    data = released_data(inputs, released, tables, levels or {})
    return measure_released_data(inputs, data, target, levels)


def measure_released_data(
    inputs: PersonInputs,
    data: LongitudinalData,
    target: float,
    levels: dict[str, int] | None = None,
    *,
    by_power: tuple[Power, ...] = REPORTED_POWERS,
) -> dict[str, Any]:
    """Released persons and events measured as the search measured them: the dates as
    released (or what a shift leaves), the event count at its chosen level and top-code;
    the one measure of the long table, of the linked tables written again and of every
    solution Step 7 shows (``person_nodes``; without ``by_power`` there)."""
    try:
        problem, at = released_problem(inputs.problem, data, levels or {})
        risk = measure(problem, levels=at, power=inputs.power, target=target, by_power=by_power)
    except EngineError as exc:
        raise ApplicationError(f"The release could not be measured in persons: {exc}") from None
    return {
        "persons": risk.persons,
        "events": risk.events,
        "power": str(risk.power),
        "min_class_size": risk.min_class_size,
        "max_risk": risk.max_risk,
        "average_risk": risk.average_risk,
        "persons_at_risk": risk.persons_at_risk,
        "target": target,
        "by_power": [{"power": p, **f.to_dict()} for p, f in risk.by_power.items()],
        "events_per_person": data.events_per_person(),
    }


def risk_before(assessment: Assessment, model: str) -> dict[str, Any]:
    risk = assessment.risk_result or {}
    if risk.get("unit") != "person":
        return {}
    return {
        "persons": risk.get("persons"),
        "events": risk.get("events"),
        "min_class_size": risk.get("min_class_size"),
        "max_risk": risk.get("max_risk"),
        "average_risk": risk.get("average_risk"),
        "persons_at_risk": (risk.get("persons_at_risk") or {}).get("persons"),
        "data_risk": risk.get("data_risk"),
        "release_model": model,
    }
