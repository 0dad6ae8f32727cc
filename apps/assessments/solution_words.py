"""Solutions in words, built from the stored results: a hierarchy level as a person says
it, a solution per quasi-identifier and in one line, what Step 7 applied (and whether it
is the search's optimum), and the optimum with its alternatives as table rows (Step 7,
the comparison page, the review page and the report)."""

from __future__ import annotations

from typing import Any

from apps.assessments.person_suppression import rows_suppressed
from apps.assessments.verdicts import loss_headline, missingness_figures, search_verdict


def level_in_words(label: str) -> str:
    """A hierarchy level's name as a person says it: the bottom level is 'kept'."""
    if label in ("", "original", "original code"):
        return "kept as is"
    if label == "suppressed (*)":
        return "suppressed (*)"
    return label


def solution_in_words(
    levels: dict[str, int] | None, hierarchies: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per quasi-identifier, the applied generalization in words, e.g.
    ``{"column": "age", "level": 2, "words": "intervals of 10"}``."""
    if not levels:
        return []
    labels = {h["column"]: list(h.get("level_labels") or []) for h in hierarchies}
    out = []
    for column, level in levels.items():
        names = labels.get(column, [])
        name = names[level] if level < len(names) else f"level {level}"
        out.append({"column": column, "level": level, "words": level_in_words(name)})
    return out


def solution_words(levels: dict[str, int] | None, hierarchies: list[dict[str, Any]]) -> str:
    """A solution in one line: "age: intervals of 10 · sex: kept as is"."""
    return " · ".join(
        f"{q['column']}: {q['words']}" for q in solution_in_words(levels, hierarchies)
    )


def applied_solution(record: Any) -> dict[str, Any]:
    """What Step 7 applied, from a version's record: the levels in words, and whether it is
    the search's optimum or one of its alternatives (and then what the optimum was)."""
    assessment = record.assessment
    applied = assessment.apply_result or {}
    search = assessment.search_result or {}
    levels = applied.get("levels")
    optimum = search.get("levels")
    verdict = search_verdict(search)
    return {
        "levels": levels,
        "in_words": solution_in_words(levels, record.hierarchies),
        # the search's own solution: its optimum only when the search proved it optimal
        "is_search_solution": bool(levels) and levels == optimum,
        "is_optimum": bool(levels) and levels == optimum and bool(verdict.get("optimal")),
        "optimum_in_words": solution_in_words(optimum, record.hierarchies)
        if optimum and optimum != levels
        else [],
        "verdict": verdict,
        "loss_headline": loss_headline(applied, search) if applied else {},
        "missingness": missingness_figures(applied) if applied else [],
        "metric": search.get("metric", ""),
        "suppressed_rows": rows_suppressed(applied),
        "rows_in": applied.get("rows_in"),
        "masking": applied.get("masking") or {},
    }


ALTERNATIVE_SORTS = {
    "loss": "information_loss",
    "suppressed": "suppressed_rows",
    "max_risk": "max_risk",
    "average_risk": "average_risk",
}


def alternatives_rows(
    search: dict[str, Any] | None,
    chosen: dict[str, int] | None,
    *,
    sort: str = "",
    descending: bool = False,
) -> list[dict[str, Any]]:
    """The optimum and the alternatives as table rows, each solution in words per
    quasi-identifier ("age: intervals of 10 · sex: kept as is"), with its share of records
    suppressed and its risks; ``index`` is its position in the stored set (stable across
    sorts, used to choose or compare). Sorted by ``sort`` (a key of ALTERNATIVE_SORTS),
    else as stored (fewest suppressed first)."""
    if not search:
        return []
    hierarchies = [
        {"column": q, "level_labels": labels}
        for q, labels in (search.get("level_labels") or {}).items()
    ]
    rows_total = int(search.get("rows") or 0)
    optimum = (search.get("solution") or {}).get("levels")
    verdict = search_verdict(search)
    out = []
    for index, alt in enumerate(search.get("pareto") or []):
        suppressed = int(alt.get("suppressed_rows") or 0)
        out.append(
            {
                **alt,
                "index": index,
                "in_words": solution_in_words(alt["levels"], hierarchies),
                "words": solution_words(alt["levels"], hierarchies),
                "suppressed_share": suppressed / rows_total if rows_total else 0.0,
                # the search's own answer; "optimum" only when proven (search_verdict)
                "is_solution": alt["levels"] == optimum,
                "is_optimum": alt["levels"] == optimum and verdict["optimal"],
                "solution_name": verdict["solution_name"] if alt["levels"] == optimum else "",
                "is_chosen": alt["levels"] == chosen,
            }
        )
    key = ALTERNATIVE_SORTS.get(sort)
    if key:
        out.sort(key=lambda r: (r.get(key) is None, r.get(key) or 0, r["index"]), reverse=False)
        if descending:
            out.reverse()
    return out
