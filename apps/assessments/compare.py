"""Two of Step 7's alternatives side by side: what each releases per quasi-identifier (records
per generalized value after suppression) and its risk and loss, so that a privacy officer can
see what the trade-off between generalization and suppression means for the data.

Computed on demand from the data set and the hierarchies the search used; nothing is written.
"""

from __future__ import annotations

from typing import Any

from apps.assessments.deidentify import deid_config, search_target
from apps.assessments.longitudinal_search import person_inputs
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.person_nodes import node_distributions
from apps.assessments.privacy_models import encode_for_search
from apps.assessments.solution_words import alternatives_rows
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.longitudinal.release import Budgets
from apps.engine.reading import read_table
from apps.engine.search.report import variable_distributions

MAX_VALUES = 20


def alternatives_compare(*, assessment: Assessment, first: int, second: int) -> dict[str, Any]:
    """The two alternatives (positions in the stored set) with their released distributions."""
    search = assessment.search_result
    rows = alternatives_rows(search, assessment.chosen_levels)
    if not rows:
        raise ApplicationError("Run the search first: there is nothing to compare.")
    if first == second or not (0 <= first < len(rows) and 0 <= second < len(rows)):
        raise ApplicationError(
            f"Pick two different alternatives (1 to {len(rows)}) to compare.", status=400
        )
    assert search is not None
    chosen = [rows[first], rows[second]]
    if search.get("unit") == "person":
        return _persons_compare(assessment, search, chosen)
    quasi: list[str] = list(search["quasi_identifiers"])
    specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    missing = [q for q in quasi if q not in specs]
    if missing:
        raise ApplicationError(f"No hierarchy for {', '.join(missing)}: run the search again.")
    target = search_target(assessment)
    with local_path(assessment.dataset.parquet_path) as path:
        built = encode_for_search(read_table(path), quasi, specs, deid_config(assessment))
    problem, table = built.problem, built.sensitive
    try:
        criterion = criterion_for_release(
            target["release_model"], target["threshold"], target["context_risk"]
        )
    except EngineError as exc:
        raise ApplicationError(f"The alternatives cannot be compared: {exc}") from None
    per_alternative = []
    for alt in chosen:
        levels = tuple(alt["levels"][q] for q in quasi)
        # with privacy models, groups failing them are suppressed too
        dropped = table.tuple_suppressed(problem, levels, criterion) if table is not None else None
        per_alternative.append(
            {
                d.column: d
                for d in variable_distributions(
                    problem, levels, criterion.release_size, suppressed=dropped
                )
            }
        )
    after = [{q: (dists[q].after, "records") for q in quasi} for dists in per_alternative]
    return {
        "alternatives": chosen,
        "variables": _variables(quasi, chosen, after),
        "rows": int(search.get("rows") or 0),
    }


def _variables(
    names: list[str],
    chosen: list[dict[str, Any]],
    released: list[dict[str, tuple[Any, str]]],
) -> list[dict[str, Any]]:
    """Per quasi-identifier, each alternative's released values (the largest first) and
    the unit they are counted in."""
    variables = []
    for q in names:
        sides = []
        for alt, values in zip(chosen, released, strict=True):
            pairs, unit = values[q]
            after = sorted(pairs, key=lambda item: (-item[1], str(item[0])))
            shown = [(str(label) if label is not None else "(missing)", n) for label, n in after]
            sides.append(
                {
                    "words": next(
                        (w["words"] for w in alt["in_words"] if w["column"] == q), "as released"
                    ),
                    "values": shown[:MAX_VALUES],
                    "groups": len([n for _, n in shown if n]),
                    "more": max(0, len(shown) - MAX_VALUES),
                    "unit": unit,
                }
            )
        variables.append({"column": q, "sides": sides})
    return variables


def _persons_compare(
    assessment: Assessment, search: dict[str, Any], chosen: list[dict[str, Any]]
) -> dict[str, Any]:
    """Person-keyed data: each alternative's release as its measure reads it
    (``person_nodes.node_distributions``): every dimension of the search (the columns,
    the anchor, the number of events), person-level ones in persons, event-level ones in
    events."""
    if any(not alt.get("budgets") for alt in chosen):
        raise ApplicationError(
            "One of these solutions cannot be released: run the search again.", status=409
        )
    inputs = person_inputs(assessment)
    released = []
    for alt in chosen:
        found = node_distributions(inputs, alt["levels"], Budgets(**alt["budgets"]))
        released.append({q: (v["values"], v["unit"]) for q, v in found.items()})
    names = [q for q in search.get("dimensions") or list(released[0]) if q in released[0]]
    return {
        "alternatives": chosen,
        "variables": _variables(names, chosen, released),
        "rows": int(search.get("rows") or 0),
        "unit": "person",
    }
