"""The figures of each solution Step 7 shows for person-keyed data (issue 25): the
optimum and every alternative measured as its release would be (``release_frame``, then
``person_release_measure.measure_released_data``, the one measure of a person release), so
that the Step 7 page, the API, the comparison and the report show for an alternative what
the release of that alternative would measure: the anchored dates' anchor as written, the
number of events a recipient counts in the released rows (after event suppression) at
its top-code, what a shift leaves of the dates.

The engine's search decides pass or fail and the suppression (``NodeResult``); it counts
the number of events and a shifted anchor as the release shows them, after event
suppression (``engine.longitudinal.released``), so its figures are the release's. The
release's measure stays the one shown, and ``meets_target`` the safety net: with shifted
dates the offsets exist only once a release draws its key, so a solution is measured on
what the shift leaves of the dates as they are (the intervals, the anchor no finer than
the shift's range); the release measures its shifted dates, which can differ where a
shift carries a first date across the anchor's boundary.
"""

from __future__ import annotations

from typing import Any

from apps.assessments.longitudinal_search import PersonInputs
from apps.assessments.person_release_frame import release_frame
from apps.assessments.person_release_measure import data_risk, measure_released_data
from apps.assessments.released_persons import released_data, released_problem
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.longitudinal import Workspace
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.longitudinal.release import Budgets, generalized_labels, node_release

#: The figures of a stored node replaced by the release's measure.
MEASURED = ("min_class_size", "max_risk", "average_risk", "persons_at_risk")


def _released(
    inputs: PersonInputs,
    levels: dict[str, int],
    budgets: Budgets,
    workspace: Workspace | None = None,
) -> LongitudinalData:
    """The persons and events a node's release (its suppression under ``budgets``) would
    write, as the release's measure reads them (``released_persons.released_data``)."""
    try:
        chosen = node_release(
            inputs.problem,
            levels,
            criterion=inputs.criterion,
            power=inputs.power,
            budgets=budgets,
            workspace=workspace,
        )
    except EngineError as exc:
        raise ApplicationError(f"A solution of the search could not be measured: {exc}") from None
    frame, tables = release_frame(inputs, levels, chosen)
    return released_data(inputs, frame, tables, levels)


def node_measure(
    inputs: PersonInputs,
    levels: dict[str, int],
    budgets: Budgets,
    *,
    workspace: Workspace | None = None,
) -> dict[str, Any]:
    """A node's release measured in persons at the chosen power, as the release measures
    its written file: smallest count, max and average risk, persons at risk (at the
    release's target), and whether its data risk meets the target (``meets_target``: the
    search's figures are the release's, so it does unless something the search cannot
    see, such as a date shift, changes them)."""
    data = _released(inputs, levels, budgets, workspace)
    target = float(inputs.target["data_risk_target"])
    found = measure_released_data(inputs, data, target, levels, by_power=())
    risk = data_risk(inputs.target["release_model"], found["max_risk"], found["average_risk"])
    # as the release judges its written file (person_release_result)
    return {**{name: found[name] for name in MEASURED}, "meets_target": risk <= target + 1e-12}


def node_distributions(
    inputs: PersonInputs, levels: dict[str, int], budgets: Budgets
) -> dict[str, dict[str, Any]]:
    """What a node's release shows of each quasi-identifier the measure reads (the
    columns, the anchor, the number of events), counted in the unit it describes:
    persons for a person-level one, events for an event-level one. By name:
    ``unit`` and ``values`` ((label, count) pairs, None for a missing value)."""
    data = _released(inputs, levels, budgets)
    try:
        problem, at = released_problem(inputs.problem, data, levels)
    except EngineError as exc:
        raise ApplicationError(f"A solution of the search could not be measured: {exc}") from None
    labels = generalized_labels(problem, at)
    out: dict[str, dict[str, Any]] = {}
    for d in problem.dimensions:
        counted = labels[d.name].value_counts(sort=True)
        out[d.name] = {
            "unit": "persons" if d.scope == "person" else "events",
            "values": [(row[0], int(row[1])) for row in counted.iter_rows()],
        }
    return out


def measured_node(
    inputs: PersonInputs, node: dict[str, Any], *, workspace: Workspace | None = None
) -> dict[str, Any]:
    """A stored node (``longitudinal_search.node_data``) with its figures from
    :func:`node_measure`; a node without budgets (no suppression reproduces it, so it
    cannot be released) keeps the search's and says so."""
    if not node.get("budgets"):
        return {**node, "measured": "search"}
    figures = node_measure(inputs, node["levels"], Budgets(**node["budgets"]), workspace=workspace)
    return {**node, **figures, "measured": "release"}
