"""Before a search: how big the lattice is, how long the search may take here, and whether it
can succeed at all (issue #13, "guidance before work that cannot succeed").

Generalizing a quasi-identifier further never makes its classes smaller (consistent
hierarchies: classes only merge going up), so with k-anonymity (the maximum risk of
public and semi-public releases) the node at the top of the lattice — every
quasi-identifier as far as its cap allows — suppresses the fewest records of all. If that
node needs more suppression than the limit, no node can pass: say so before the search
runs, with the share of suppression that would be needed and which caps block it (lifting
one cap and trying again is cheap: one node each).

For the strict average risk of non-public releases the check is the same on its
suppression part (classes under the cap); its average-risk part is not monotone, so a top
node that passes is a strong hint, not a proof, that a solution exists — the search finds
out.

Privacy models on sensitive columns (l-diversity, t-closeness) are judged as the search
judges them (``sensitive``): a class failing one is suppressed too, so "a solution exists"
is said only when a node meets every model the search enforces. Without suppression every
model is monotone with generalization (ARX), as is distinct l-diversity with it: then a
failing top node proves that no node passes. The other models with suppression are not
monotone (a smaller class can be more diverse than the class it is part of), so a failing
top node leaves the answer to the search, and the check says so instead of guessing.

The time estimate is an upper bound measured on this problem: the time of one node
evaluation times the number of nodes (the search evaluates far fewer; El Emam et al. 2009).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from apps.engine.criteria import Criterion, StrictAverageRisk, allowed_suppression
from apps.engine.lattice import max_nodes
from apps.engine.search.points import PointEvaluator
from apps.engine.search.problem import SearchProblem, lattice_tops
from apps.engine.search.sensitive import SensitiveTable


@dataclass(frozen=True)
class CapFinding:
    """A quasi-identifier whose maximum level is below its hierarchy's height."""

    column: str
    cap: int
    height: int
    lifting_it_suffices: bool  # with this cap alone lifted, the top node passes
    suppressed_share_if_lifted: float


@dataclass(frozen=True)
class Feasibility:
    nodes: int  # lattice size within the caps
    nodes_uncapped: int
    exact_search_possible: bool  # nodes <= lattice.max_nodes (the memory budget)
    max_nodes: int  # the largest lattice the exact search takes on here
    top_levels: dict[str, int]
    feasible: bool  # the top node within the caps passes
    #: False: nothing passes is proven (monotone criterion and models); None: a solution
    #: exists; True: the top node fails but a less generalized node may pass (models that
    #: are not monotone with suppression): only the search can tell.
    undecided: bool | None
    suppressed_rows_at_top: int
    suppressed_share_at_top: float
    suppression_limit: float
    feasible_without_caps: bool
    caps: tuple[CapFinding, ...]
    seconds_per_node: float
    estimated_seconds: float  # upper bound: every node evaluated
    explanation: str


def _product(values: list[int]) -> int:
    size = 1
    for v in values:
        size *= v + 1
    return size


def _percent(share: float) -> str:
    return f"{share * 100:.1f} %"


def check_feasibility(
    problem: SearchProblem,
    criterion: Criterion,
    *,
    suppression_limit: float,
    max_levels: Mapping[str, int] | None = None,
    metric: str = "loss",
    sensitive: SensitiveTable | None = None,
) -> Feasibility:
    """Whether a solution can exist within the caps and the suppression limit (module
    docstring), which caps block it, and how long an exact search may take here.
    ``sensitive``: the privacy models on sensitive columns the search will enforce."""
    rows = problem.rows
    heights = list(problem.heights)
    tops = lattice_tops(problem, max_levels)
    points = PointEvaluator(problem, criterion, metric, sensitive=sensitive)
    started = time.perf_counter()
    bottom = points.result([0] * len(tops), suppression_limit)
    top = points.result(tops, suppression_limit)
    seconds_per_node = (time.perf_counter() - started) / 2
    nodes, nodes_uncapped = _product(tops), _product(heights)
    allowed = allowed_suppression(rows, suppression_limit)
    share = top.suppressed_rows / rows if rows else 0.0

    findings = []
    for j, (cap, height) in enumerate(zip(tops, heights, strict=True)):
        if cap >= height:
            continue
        lifted = list(tops)
        lifted[j] = height
        result = points.result(lifted, suppression_limit)
        findings.append(
            CapFinding(
                column=problem.quasi[j],
                cap=cap,
                height=height,
                lifting_it_suffices=result.passes,
                suppressed_share_if_lifted=result.suppressed_rows / rows if rows else 0.0,
            )
        )
    uncapped = top if not findings else points.result(heights, suppression_limit)
    feasible = top.passes or bottom.passes
    proven = sensitive is None or allowed == 0 or sensitive.monotone_with_suppression
    undecided = None if feasible else not proven
    limit = max_nodes(len(tops))
    explanation = _explain(
        problem,
        criterion,
        sensitive=sensitive,
        undecided=bool(undecided),
        feasible=feasible,
        share=share,
        limit=suppression_limit,
        allowed=allowed,
        top_suppressed=top.suppressed_rows,
        findings=findings,
        uncapped_passes=uncapped.passes,
        uncapped_share=uncapped.suppressed_rows / rows if rows else 0.0,
    )
    return Feasibility(
        nodes=nodes,
        nodes_uncapped=nodes_uncapped,
        exact_search_possible=nodes <= limit,
        max_nodes=limit,
        top_levels=dict(zip(problem.quasi, tops, strict=True)),
        feasible=feasible,
        undecided=undecided,
        suppressed_rows_at_top=top.suppressed_rows,
        suppressed_share_at_top=share,
        suppression_limit=suppression_limit,
        feasible_without_caps=uncapped.passes,
        caps=tuple(findings),
        seconds_per_node=seconds_per_node,
        estimated_seconds=seconds_per_node * min(nodes, limit),
        explanation=explanation,
    )


def _explain(
    problem: SearchProblem,
    criterion: Criterion,
    *,
    sensitive: SensitiveTable | None,
    undecided: bool,
    feasible: bool,
    share: float,
    limit: float,
    allowed: int,
    top_suppressed: int,
    findings: list[CapFinding],
    uncapped_passes: bool,
    uncapped_share: float,
) -> str:
    models = f" and {sensitive.describe()}" if sensitive is not None else ""
    if feasible:
        if isinstance(criterion, StrictAverageRisk):
            return (
                f"The most generalized data within the caps meets the target{models}, so the "
                "search should find a solution."
            )
        return (
            f"The most generalized data within the caps meets the target{models}: a solution "
            "exists."
        )
    capped = list(findings)
    caps_text = ", ".join(f"{f.column} capped at level {f.cap} of {f.height}" for f in capped)
    why = (
        " (groups too small for the target, or failing "
        f"{'the privacy model' if len(sensitive.models) == 1 else 'a privacy model'}: "
        f"{sensitive.describe()})"
        if sensitive is not None
        else ""
    )
    suppresses = (
        f"even the most generalized data suppresses {_records(top_suppressed)} "
        f"({_percent(share)}){why}, more than the {_percent(limit)} allowed "
        f"({_records(allowed)})."
    )
    if isinstance(criterion, StrictAverageRisk) and share <= limit:
        suppresses = "even the most generalized data has an average risk above the target."
    if undecided:
        return (
            "No solution is certain: "
            + suppresses
            + " A less generalized node may still pass, since these models are not "
            "monotone when records are suppressed (a smaller group can be more diverse than "
            "the group it is part of); the search will tell. To make a solution likelier, "
            "allow more suppression or lower the model's requirement."
        )
    lead = (f"With {caps_text}, no solution exists: " if capped else "No solution exists: ") + (
        suppresses
    )
    ways = []
    single = [f for f in capped if f.lifting_it_suffices]
    if single:
        ways.append("lift the cap on " + " or on ".join(f.column for f in single))
    elif capped and uncapped_passes:
        ways.append("lift the caps (" + ", ".join(f.column for f in capped) + ")")
    if share > limit and share < 1:
        ways.append(f"allow {_ceil_percent(share)} suppression")
    if sensitive is not None and not uncapped_passes:
        ways.append("lower the privacy model's requirement on the sensitive variable")
    if not ways and not uncapped_passes:
        ways.append(
            "revisit the threshold or the context risk (Steps 3 and 5): even with every "
            "quasi-identifier fully generalized the target cannot be met"
        )
    return lead + " " + ("To find one, " + " or ".join(ways) + "." if ways else "")


def _records(n: int) -> str:
    return f"{n:,} record" + ("" if n == 1 else "s")


def _ceil_percent(share: float) -> str:
    """The smallest whole per cent at least ``share`` (what to type in the limit field)."""
    whole = int(share * 100)
    if whole < share * 100 - 1e-9:
        whole += 1
    return f"{whole} %"
