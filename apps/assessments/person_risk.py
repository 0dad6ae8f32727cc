"""Step 4 on data with several rows per person (issue 25; LONGITUDINAL.md §2.3-2.7):
the strict per-person count at the chosen adversary power and at p = 1…5 and "all",
over the persons (never the rows), with the dates measured as Step 4's date settings say
(absolute, anchored, or what a per-person shift leaves) and the number of events per
person as a quasi-identifier when chosen (``person_dates``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.assessments.configuration import DeidConfig
from apps.assessments.models import Assessment
from apps.assessments.person_dates import (
    check_dates,
    date_spec,
    dates_state,
    derived_facts,
    event_count_spec,
    person_dates,
)
from apps.assessments.person_tables import longitudinal_data, table_facts
from apps.assessments.persons import DEFAULT_AT_RISK_TARGET, data_levels, key_candidates
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.longitudinal import (
    REPORTED_POWERS,
    CountingBudgetExceeded,
    measure,
    parse_power,
    prepare,
)
from apps.engine.risk import DEFAULT_STRICT_AVERAGE_CAP


def _figures(counts_figures: Mapping[str, Any], cap: float) -> dict[str, Any]:
    highest = counts_figures.get("max_risk")
    average = counts_figures.get("average_risk")
    strict = None if highest is None else (highest if highest > cap else average)
    return {**counts_figures, "strict_average_risk": strict}


def person_risk_result(
    assessment: Assessment, *, quasi: list[str], model: str, target: float | None
) -> dict[str, Any]:
    """Step 4 on data with several rows per person (module docstring).

    Max risk = 1 / the smallest per-person count; average risk = the mean over persons of
    1 / their count; the strict average is the average unless the max risk is above the
    cap (as for records); persons at risk are those whose own risk exceeds the target.
    Dates are measured at their finest level (the data as it is; with a shift, the anchor
    no finer than the shift's range)."""
    key = assessment.person_key
    if key not in key_candidates(assessment):
        raise ApplicationError(
            f"The person key '{key}' is no longer classified as a direct identifier: "
            "classify it so again, or declare another key, in Step 2.",
            {"step": "classification", "person_key": key},
        )
    frame, found = data_levels(assessment)
    levels = {q: found[q] for q in quasi}
    config = DeidConfig.from_json(assessment.deid_config)
    check_dates(frame, person_dates(config), levels)
    structure = assessment.dataset.table_structure
    person_quasi = [q for q in quasi if levels[q] == "person"]
    event_quasi = [q for q in quasi if levels[q] == "event"]
    power = parse_power(assessment.adversary_power)
    chosen_target = target if target is not None else DEFAULT_AT_RISK_TARGET
    try:
        data = longitudinal_data(
            structure, frame, person=key, person_quasi=person_quasi, event_quasi=event_quasi
        )
        problem = prepare(data, dates=date_spec(config), event_count=event_count_spec(config))
        risk = measure(problem, power=power, target=chosen_target, by_power=REPORTED_POWERS)
    except CountingBudgetExceeded as exc:
        raise ApplicationError(
            f"The exact per-person count at adversary power {power} would take too long: "
            f"{exc}. Choose a lower power (or generalize the event-level quasi-identifiers "
            "in the data first); deidweb never reports an estimate as exact."
        ) from None
    except EngineError as exc:
        raise ApplicationError(str(exc)) from None
    cap = DEFAULT_STRICT_AVERAGE_CAP
    strict = risk.max_risk if risk.max_risk > cap else risk.average_risk
    data_risk = strict if model == "non_public" else risk.max_risk
    return {
        "unit": "person",
        "release_model": model,
        "quasi_identifiers": quasi,
        "person_key": key,
        "person_quasi": person_quasi,
        "event_quasi": event_quasi,
        **dates_state(config),
        **derived_facts(problem),
        "rows": frame.height,
        "persons": risk.persons,
        "events": risk.events,
        **table_facts(structure),
        "power": str(risk.power),
        "person_classes": risk.classes,
        "subsets": risk.subsets,
        "min_class_size": risk.min_class_size,
        "max_risk": risk.max_risk,
        "average_risk": risk.average_risk,
        "strict_average_risk": strict,
        "strict_average_cap": cap,
        "data_risk": data_risk,
        "risk_measure": "strict average risk" if model == "non_public" else "max risk",
        "target": chosen_target,
        "target_is_default": target is None,
        "persons_at_risk": {
            "persons": risk.persons_at_risk,
            "share": risk.persons_at_risk / risk.persons if risk.persons else 0.0,
        },
        "by_power": [
            {"power": key_, **_figures(figures.to_dict(), cap)}
            for key_, figures in risk.by_power.items()
        ],
    }
