"""What to change when a lattice is too large or a search finds nothing: the advice the
pre-check shows before a search and the heuristic search's result carries."""

from __future__ import annotations

from apps.assessments.models import Assessment


def suggestions_to_drop(assessment: Assessment, quasi: list[str], heights: list[int]) -> list[str]:
    """Which quasi-identifiers to drop or merge first: those whose removal lowers the data
    risk the most (Step 4's drivers), and the deepest hierarchies (the lattice's size)."""
    risk = assessment.risk_result or {}
    out = []
    for driver in (risk.get("drivers") or [])[:3]:
        if driver.get("reduction", 0) > 0 and driver["left_out"] in quasi:
            out.append(
                f"Without {driver['left_out']} the {risk['risk_measure']} would be "
                f"{driver['data_risk']:.4g} instead of {risk['data_risk']:.4g} (Step 4)."
            )
    deepest = sorted(zip(quasi, heights, strict=True), key=lambda p: -p[1])[:2]
    for column, height in deepest:
        out.append(
            f"{column} has {height + 1} levels: merging its values into fewer groups, or "
            "capping its level, shrinks the lattice the most."
        )
    return out
