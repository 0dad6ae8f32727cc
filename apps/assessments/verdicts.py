"""What the Step 7 search and the Step 8 measures may claim, in the method's words.

Step 7's page, the alternatives, the review page and the Step 9 report all say what the
search proved and what the release lost from here, read from the stored results (the
search's frozen with a submitted version), so the four never disagree:

* **The search's verdict.** "Optimal" only for an exact search that finished, and then
  with its scope: the levels the analyst allowed and the lattice's size against the
  uncapped one (a capped search is optimal among the levels allowed, nothing more). A
  search stopped by its time budget says so; the heuristic's answer is never called the
  optimum, and its bound is the ratio of its loss to the lower bound (the optimum lies
  between the two), never a percentage above the optimum.
* **One information-loss headline.** The metric the analyst chose in Step 7, which the
  search minimized, as re-measured on the released file; the other metrics are shown as
  others.
* **Missingness that says what it counts.** Seed 001's record- and cell-level missingness
  count what suppression emptied, not values generalized to ``*``; the share of
  quasi-identifier cells released as ``*`` stands beside them.
"""

from __future__ import annotations

import math
from typing import Any

from apps.core.labels import METRIC_LABELS

OPTIMAL, TIME_BUDGET, HEURISTIC = "optimal", "time_budget", "heuristic"


def _outcome(search: dict[str, Any]) -> str:
    """The stored outcome (results stored before it was kept: inferred from the flags)."""
    outcome = search.get("outcome")
    if outcome in (OPTIMAL, TIME_BUDGET, HEURISTIC):
        return str(outcome)
    if search.get("heuristic"):
        return HEURISTIC
    return OPTIMAL if search.get("optimal") else TIME_BUDGET


def _caps(search: dict[str, Any]) -> dict[str, int]:
    if "caps" in search:
        return {q: int(v) for q, v in (search.get("caps") or {}).items()}
    heights = search.get("heights") or {}
    return {
        q: int(v)
        for q, v in (search.get("max_levels") or {}).items()
        if q in heights and int(v) < int(heights[q])
    }


def _level_name(search: dict[str, Any], column: str, level: int) -> str:
    labels = (search.get("level_labels") or {}).get(column) or []
    return str(labels[level]) if level < len(labels) else ""


def caps_in_words(search: dict[str, Any]) -> list[str]:
    """Each capped quasi-identifier as "age ≤ level 2 (intervals of 10)"."""
    out = []
    for column, level in _caps(search).items():
        name = _level_name(search, column, level)
        out.append(f"{column} ≤ level {level}" + (f" ({name})" if name else ""))
    return out


def _ratio_words(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3g}"


def _number(value: float) -> str:
    return f"{value:.4g}"


def search_verdict(search: dict[str, Any] | None) -> dict[str, Any]:
    """What the stored search result may claim (module docstring):

    ``outcome`` (optimal / time_budget / heuristic), ``optimal`` (proven), ``title`` (the
    label of its levels), ``solution_name`` (what to call its solution), ``caps`` (in
    words), ``scope`` ("among the levels allowed (…): N of M combinations of levels"),
    ``summary`` (one sentence, with the heuristic's bound) and ``evaluated_explain``."""
    if not search:
        return {}
    outcome = _outcome(search)
    caps = caps_in_words(search)
    nodes = int(search.get("nodes_total") or 0)
    heights = search.get("heights") or {}
    uncapped = int(
        search.get("nodes_uncapped") or math.prod(int(h) + 1 for h in heights.values()) or nodes
    )
    if caps:
        scope = (
            f"among the levels allowed ({', '.join(caps)}): {nodes:,} of the {uncapped:,} "
            "combinations of levels"
        )
    else:
        scope = f"among all {nodes:,} combinations of levels (no level capped)"
    solution = search.get("solution")
    verdict: dict[str, Any] = {
        "outcome": outcome,
        "optimal": outcome == OPTIMAL,
        "caps": caps,
        "nodes": nodes,
        "nodes_uncapped": uncapped,
        "scope": scope,
    }
    if outcome == OPTIMAL:
        verdict.update(
            title="Optimal levels",
            solution_name="optimum",
            claim=f"the solution is proven optimal {scope}",
            summary=(
                f"The solution is proven optimal {scope}."
                if solution
                else f"No solution exists {scope}."
            ),
            evaluated_explain="The rest were settled by monotonicity and bounds: optimality "
            "proven.",
        )
    elif outcome == TIME_BUDGET:
        verdict.update(
            title="Best levels found (not proven optimal)",
            solution_name="best solution found",
            summary=(
                f"Not proven optimal: the time budget ran out after "
                f"{float(search.get('seconds') or 0):.1f} s, before the search could settle "
                f"every combination; the best solution found {scope} is shown."
            ),
            evaluated_explain="The time budget ran out before the rest were settled: not "
            "proven optimal.",
        )
    else:
        heuristic = search.get("heuristic") or {}
        limit = heuristic.get("max_nodes")
        lead = (
            f"Not proven optimal: the lattice has {nodes:,} combinations of levels"
            + (f" ({', '.join(caps)})" if caps else "")
            + (
                f", more than the {int(limit):,} the exact search holds in the memory it is given"
                if limit
                else ""
            )
            + ", so a heuristic found this solution."
        )
        verdict.update(
            title="Levels found by the heuristic (not proven optimal)",
            solution_name="heuristic solution",
            summary=lead + (" " + heuristic_bound(search) if solution else ""),
            evaluated_explain="Measured one by one along the heuristic's two greedy walks; "
            "the rest were not looked at.",
        )
    return verdict


def heuristic_bound(search: dict[str, Any]) -> str:
    """The heuristic's bound in words: its loss as a multiple of the lower bound."""
    heuristic = search.get("heuristic") or {}
    solution = search.get("solution") or {}
    found = solution.get("information_loss")
    bound = heuristic.get("lower_bound")
    if found is None or bound is None:
        return "No bound on its distance from the optimum is available."
    ratio = heuristic.get("ratio")
    if "ratio" not in heuristic:  # (stored before the ratio was kept)
        ratio = 1.0 if found <= bound else (found / bound if bound > 0 else None)
    if ratio is None:
        return (
            f"Its information loss ({_number(found)}) has no useful bound: the lower bound is "
            f"0, so the optimum may lie anywhere from 0 to {_number(found)}."
        )
    if ratio <= 1.0:
        return (
            f"Its information loss ({_number(found)}) equals the lower bound: no solution "
            "within the levels allowed loses less."
        )
    return (
        f"Its information loss ({_number(found)}) is at most {_ratio_words(ratio)}× the lower "
        f"bound ({_number(bound)}): the optimum lies between {_number(bound)} and "
        f"{_number(found)}."
    )


# ------------------------------------------------------------------- Step 8 (the release)

_METRIC_EXPLAIN = {
    "loss": "0 = every value as it was, 1 = every value fully generalized or suppressed "
    "(geometric mean over the quasi-identifiers).",
    "entropy": "Bits of information lost by generalization and suppression, summed over the "
    "quasi-identifiers.",
    "precision": "Share of each hierarchy's height used, suppressed records counting as fully "
    "generalized, averaged over the quasi-identifiers (0 = nothing generalized).",
    "discernibility": "Sum over released groups of their size squared, plus the records "
    "suppressed times all records: lower is better.",
    "aecs": "Records per released group on average: lower is better.",
}


def _metric_value(metric: str, utility: dict[str, Any]) -> str:
    value = utility.get(metric)
    if value is None:
        return "—"
    if metric == "entropy":
        percent = utility.get("entropy_percent")
        bits = f"{float(value):,.2f} bits"
        return f"{float(percent):.1f}% ({bits})" if percent is not None else bits
    if metric == "discernibility":
        return f"{float(value):,.0f}"
    if metric == "aecs":
        return f"{float(value):,.2f}"
    return f"{float(value):.4f}"


def loss_headline(applied: dict[str, Any] | None, search: dict[str, Any] | None) -> dict[str, Any]:
    """The one information-loss figure Step 8, the review page and the report lead with:
    the metric chosen in Step 7 (the one the search minimized), re-measured on the
    released file. ``others``: the other metrics, labelled as such."""
    utility = (applied or {}).get("utility") or {}
    metric = str(utility.get("metric") or (search or {}).get("metric") or "loss")
    label = METRIC_LABELS.get(metric, metric)
    return {
        "metric": metric,
        "label": f"Information loss: {label}",
        "value": _metric_value(metric, utility),
        "explain": f"The metric chosen in Step 7, which the search minimized, measured on the "
        f"released file. {_METRIC_EXPLAIN.get(metric, '')}".strip(),
        "others": [
            {"metric": m, "label": METRIC_LABELS.get(m, m), "value": _metric_value(m, utility)}
            for m in METRIC_LABELS
            if m != metric and m in utility
        ],
    }


def missingness_figures(applied: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Record- and cell-level missingness with what they count, and the share of
    quasi-identifier cells released as * beside them (module docstring)."""
    applied = applied or {}
    utility = applied.get("utility") or {}
    quasi = list(applied.get("quasi_identifiers") or [])
    rows_in = int(applied.get("rows_in") or 0)
    figures = [
        {
            "testid": "record-missingness",
            "label": "Record-level missingness added (by record suppression)",
            "value": utility.get("record_missingness"),
            "explain": f"Share of the {rows_in:,} input records that lost quasi-identifier "
            "values they had because they were suppressed. Values generalized to * are not "
            "counted: see the share released as *.",
        },
        {
            "testid": "cell-missingness",
            "label": "Cell-level missingness added (by record suppression)",
            "value": utility.get("cell_missingness"),
            "explain": f"Share of the input's {rows_in * len(quasi):,} quasi-identifier cells "
            f"({rows_in:,} records × {len(quasi)} quasi-identifiers) emptied because their "
            "record was suppressed. Cells generalized to * are not counted.",
        },
    ]
    starred = utility.get("starred")
    if starred:
        whole = list(starred.get("whole_columns") or [])
        explain = (
            f"{int(starred['starred']):,} of the {int(starred['cells']):,} quasi-identifier "
            f"cells of the {int(starred['released_rows']):,} released records hold * (a value "
            "that stands for every value, carrying no information)."
        )
        if whole:
            explain += (
                f" {len(whole)} of the {len(quasi) or len(starred['by_column'])} "
                f"quasi-identifiers are * in every released record: {', '.join(whole)}."
            )
        figures.append(
            {
                "testid": "starred-cells",
                "label": "Quasi-identifier cells released as *",
                "value": starred.get("share"),
                "explain": explain,
            }
        )
    return figures
