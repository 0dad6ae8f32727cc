"""Local (cell) suppression: blank single values of risky records (seed 004; PDPC 3.1).

Instead of recoding a whole variable, a value is blanked only in the records that need
it ("a very young married respondent might have marital status set to missing",
seed 004).  The goal is k-anonymity under the own-value rule (rules.py: a blank is a
value of its own, measurable from the released file and never weaker than what an
intruder who knows the target faces), with the fewest blanked cells, each weighted by
the importance the user gives its variable.

Methods: "heuristic" pools and places small classes greedily (greedy.py), then solves
the integer program restricted to the candidates the linear relaxation or the greedy
solution use (exact.py, "relax and restrict"), and reports the gap to the relaxation's
proven lower bound; "exact" also runs the whole integer program with the time left,
which proves the count minimal or narrows the bound; "auto" is "exact" when the problem
is small enough, else "heuristic".  The cheapest solution found wins.  sdcmicro.py is sdcMicro's heuristic,
kept as the comparison baseline of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import IntArray, require_columns, row_codes
from apps.engine.techniques.local_suppression.exact import relaxation, solve_exact, solve_guided
from apps.engine.techniques.local_suppression.greedy import solve_greedy
from apps.engine.techniques.local_suppression.model import (
    SuppressionModel,
    blank_mask,
    build_model,
    check_solution,
    solution_cost,
)
from apps.engine.techniques.local_suppression.rules import (
    BLANK_RULES,
    BlankRule,
    BlankRuleRisk,
    blank_rule_risk,
    class_sizes,
)

Method = Literal["auto", "exact", "heuristic"]
# Above this many (tuple, pattern) candidates "auto" skips the integer program.
AUTO_EXACT_CANDIDATES = 400_000
# Above this many, even the linear relaxation (the heuristic's bound) is skipped.
BOUND_CANDIDATES = 2_000_000


@dataclass(frozen=True)
class LocalSuppressionParams:
    """k to reach on `quasi`; `importance[col]` = cost of blanking one of its cells (default 1)."""

    quasi: tuple[str, ...]
    k: int
    importance: Mapping[str, float] = field(default_factory=dict)
    method: Method = "auto"
    time_limit: float = 60.0  # seconds for the integer program


@dataclass(frozen=True)
class LocalSuppressionResult:
    data: pl.DataFrame  # same rows, same order, blanked cells set to missing
    params: LocalSuppressionParams
    blanked_cells: int
    blanked_by_column: Mapping[str, int]
    weighted_cost: float  # Σ importance over blanked cells (= blanked_cells with weights 1)
    method_used: Literal["exact", "heuristic"]
    optimal: bool  # proven minimal
    lower_bound: float  # no solution has a smaller weighted cost
    gap: float  # (cost − bound) / cost; 0 when optimal
    risks: tuple[BlankRuleRisk, ...]  # after suppression, under each blank rule
    blanked: npt.NDArray[np.bool_]  # rows × quasi: True where a cell was blanked

    def risk(self, rule: BlankRule) -> BlankRuleRisk:
        return next(r for r in self.risks if r.rule == rule)


def _weights(params: LocalSuppressionParams) -> npt.NDArray[np.float64]:
    unknown = sorted(set(params.importance) - set(params.quasi))
    if unknown:
        raise EngineInputError(
            f"local suppression: importance given for {', '.join(unknown)}, "
            "which are not among the quasi-identifiers"
        )
    weights = np.array([float(params.importance.get(q, 1.0)) for q in params.quasi])
    if np.any(~np.isfinite(weights)) or np.any(weights <= 0):
        raise EngineInputError("local suppression: every importance must be a positive number")
    return weights


def local_suppression(data: pl.DataFrame, params: LocalSuppressionParams) -> LocalSuppressionResult:
    """Blank the fewest (weighted) cells so that every class has 0 or ≥ k records."""
    quasi = require_columns(data, params.quasi, "quasi-identifier")
    if params.method not in ("auto", "exact", "heuristic"):
        raise EngineInputError(f"local suppression: unknown method {params.method!r}")
    if params.time_limit <= 0:
        raise EngineInputError("local suppression: the time limit must be positive")
    codes, cards = row_codes(data, quasi)
    model = build_model(codes, cards, params.k, _weights(params))
    amounts, method, optimal, bound = _solve(model, params)
    check_solution(model, amounts)
    mask = blank_mask(model, amounts)
    cost = solution_cost(model, amounts)
    released = codes.copy()
    released[mask] = 0
    out = data.with_columns(
        pl.when(pl.Series(mask[:, j])).then(None).otherwise(pl.col(q)).alias(q)
        for j, q in enumerate(quasi)
    )
    return LocalSuppressionResult(
        data=out,
        params=params,
        blanked_cells=int(mask.sum()),
        blanked_by_column={q: int(mask[:, j].sum()) for j, q in enumerate(quasi)},
        weighted_cost=cost,
        method_used=method,
        optimal=optimal,
        lower_bound=min(bound, cost),
        gap=0.0 if optimal or cost == 0 else (cost - min(bound, cost)) / cost,
        risks=measure_blanks(codes, released, params.k),
        blanked=mask,
    )


def _solve(
    model: SuppressionModel, params: LocalSuppressionParams
) -> tuple[IntArray, Literal["exact", "heuristic"], bool, float]:
    """Best solution found within the time limit, how, whether proven minimal, and the bound.

    Every route starts with the greedy solution and the linear relaxation's bound; then
    the LP-guided restricted integer program (a third of the time) and, for "exact" and
    small "auto" problems, the whole integer program with the time left.  The cheapest
    solution wins; it is optimal when its cost meets the best proven bound.
    """
    best = solve_greedy(model)
    if not np.any(model.risky):
        return best, "exact", True, 0.0
    deadline = time.monotonic() + params.time_limit
    candidates = model.cand_tuple.size
    whole = params.method == "exact" or (
        params.method == "auto" and candidates <= AUTO_EXACT_CANDIDATES
    )
    bound, relaxed = 0.0, None
    if whole or candidates <= BOUND_CANDIDATES:
        bound, relaxed = relaxation(model, time_limit=params.time_limit)
    if relaxed is not None and _left(deadline) > 0:
        share = _left(deadline) / 3 if whole else _left(deadline)
        guided = solve_guided(model, relaxed, best, time_limit=share)
        if guided is not None and solution_cost(model, guided) < solution_cost(model, best):
            best = guided
    if whole and solution_cost(model, best) > bound + 1e-9 and _left(deadline) > 0:
        outcome = solve_exact(model, time_limit=_left(deadline))
        bound = max(bound, outcome.lower_bound)
        if outcome.amounts is not None and (
            solution_cost(model, outcome.amounts) < solution_cost(model, best)
        ):
            best = outcome.amounts
    optimal = solution_cost(model, best) <= bound + 1e-9
    return best, "exact" if whole else "heuristic", optimal, bound


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def measure_blanks(original: IntArray, released: IntArray, k: int) -> tuple[BlankRuleRisk, ...]:
    """Risk of a release with blanks under every rule (rules.py), rows aligned with the original."""
    return tuple(
        blank_rule_risk(class_sizes(released, rule, original), rule, k) for rule in BLANK_RULES
    )


__all__ = [
    "BLANK_RULES",
    "BlankRule",
    "BlankRuleRisk",
    "LocalSuppressionParams",
    "LocalSuppressionResult",
    "local_suppression",
    "measure_blanks",
]
