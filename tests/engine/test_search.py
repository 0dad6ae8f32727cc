"""The optimal search on hand-checked tiny problems, criteria, listeners and limits."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from apps.engine.criteria import (
    KAnonymity,
    MaxRisk,
    StrictAverageRisk,
    allowed_suppression,
    criterion_for_release,
    size_for_risk,
)
from apps.engine.errors import EngineInputError
from apps.engine.loss import METRICS
from apps.engine.progress import SearchCancelled, SearchProgress
from apps.engine.search import build_problem, exhaustive_search, optimal_search
from apps.engine.search.problem import QuasiLookup, SearchProblem
from tests.engine.test_loss import tiny


def test_size_for_risk() -> None:
    assert size_for_risk(0.05) == 20
    assert size_for_risk(0.1) == 10
    assert size_for_risk(0.2) == 5
    assert size_for_risk(0.075) == 14  # 1/14 = 0.0714 <= 0.075 < 1/13
    assert size_for_risk(1 / 11) == 11
    assert size_for_risk(1.0) == 1
    assert MaxRisk(0.09).release_size == 12  # 1/11 = 0.0909 > 0.09
    assert StrictAverageRisk(0.1).release_size == 4  # cap 0.33: a class of 3 exceeds it
    assert StrictAverageRisk(0.1, 0.5).release_size == 2
    for bad in (0.0, -1.0, 1.5):
        with pytest.raises(EngineInputError):
            size_for_risk(bad)


def test_criterion_for_release() -> None:
    # threshold 0.05 / context 0.5 = 0.1 data-risk target (METHOD.md Step 6)
    assert criterion_for_release("public", 0.05, 0.5) == MaxRisk(0.1)
    assert criterion_for_release("semi_public", 0.05, 0.5) == MaxRisk(0.1)
    assert criterion_for_release("non_public", 0.05, 0.5, 0.5) == StrictAverageRisk(0.1, 0.5)
    with pytest.raises(EngineInputError):
        criterion_for_release("private", 0.05, 0.5)


def test_allowed_suppression() -> None:
    assert allowed_suppression(30_162, 0.05) == 1508  # floor(1508.1)
    assert allowed_suppression(100, 0.05) == 5
    assert allowed_suppression(0, 0.05) == 0
    with pytest.raises(EngineInputError):
        allowed_suppression(10, 1.5)


def test_tiny_k2_tie_goes_to_lowest_level_then_lexicographic() -> None:
    # k=2, nothing suppressed: (0,1) and (2,0) both pass with loss sqrt(2) - 1 (one QI
    # fully generalized: sqrt((1+1)(1+0)) - 1); (1,1) and (2,1) lose more. Both have
    # total level 2 -> lexicographic order decides: (0,1).
    result = optimal_search(tiny(), KAnonymity(2), suppression_limit=0.0)
    assert result.optimal
    assert result.solution is not None
    assert result.solution.levels == (0, 1)
    assert result.solution.information_loss == pytest.approx(math.sqrt(2) - 1)
    assert result.solution.suppressed_rows == 0
    assert result.levels == {"a": 0, "b": 1}


def test_tiny_suppression_beats_generalization() -> None:
    # allowing one row (1/6): (1,0) suppresses the singleton (a12,b2): loss
    # sqrt(119/72) - 1 = 0.2856 < sqrt(2) - 1 = 0.4142 (see test_loss.py)
    result = optimal_search(tiny(), KAnonymity(2), suppression_limit=1 / 6, pareto=True)
    assert result.solution is not None
    assert result.solution.levels == (1, 0)
    assert result.solution.suppressed_rows == 1
    assert result.solution.min_class_size == 2
    assert result.solution.max_risk == 0.5
    assert result.solution.average_risk == pytest.approx(2 / 5)
    assert [(p.levels, p.suppressed_rows) for p in result.pareto] == [((1, 0), 1), ((0, 1), 0)]
    budgets = optimal_search(tiny(), KAnonymity(2), suppression_limit=1 / 6, pareto=(0.5, 0.0))
    assert [p.levels for p in budgets.pareto] == [(1, 0), (0, 1)]


def test_max_levels_restrict_the_lattice() -> None:
    result = optimal_search(tiny(), KAnonymity(2), suppression_limit=0.0, max_levels={"b": 0})
    assert result.solution is not None
    assert result.solution.levels == (2, 0)
    assert result.nodes_total == 3
    with pytest.raises(EngineInputError):
        optimal_search(tiny(), KAnonymity(2), max_levels={"zz": 0})


def test_no_solution() -> None:
    result = optimal_search(tiny(), KAnonymity(7), suppression_limit=0.0)
    assert result.solution is None
    assert result.optimal
    assert result.levels is None


def test_empty_data() -> None:
    lookups = [QuasiLookup("q", (np.arange(2, dtype=np.uint32),), (np.ones(2, np.int64),), 2)]
    empty = build_problem(["q"], np.zeros((0, 1), np.uint32), np.zeros(0, np.int64), lookups)
    for metric in METRICS:
        result = optimal_search(empty, KAnonymity(3), metric=metric)
        assert result.solution is not None
        assert result.solution.levels == (0,)
        assert result.solution.suppressed_rows == 0


def _counterexample() -> SearchProblem:
    # criteria.py: ten classes of 10 rows (v0..v9) and three singletons (u0..u2); level
    # 1 groups u0..u2 into "u" (a class of 3); level 2 is "*".
    maps = (
        np.arange(13, dtype=np.uint32),
        np.array([*range(10), 10, 10, 10], dtype=np.uint32),
        np.zeros(13, dtype=np.uint32),
    )
    leaves = (np.ones(13, np.int64), np.array([1] * 10 + [3], np.int64), np.array([13], np.int64))
    counts = np.array([10] * 10 + [1, 1, 1], dtype=np.int64)
    codes = np.arange(13, dtype=np.uint32).reshape(-1, 1)
    return build_problem(["x"], codes, counts, [QuasiLookup("x", maps, leaves, 13)])


def test_strict_average_risk_is_not_monotone() -> None:
    problem = _counterexample()
    crit = StrictAverageRisk(0.1, 0.5)  # k_cap = 2, limit 5 % of 103 rows = 5
    _, nodes = exhaustive_search(problem, crit, suppression_limit=0.05)
    assert [n.passes for n in nodes] == [True, False, True]
    assert nodes[0].average_risk == pytest.approx(10 / 100)
    assert nodes[1].average_risk == pytest.approx(11 / 103)
    result = optimal_search(problem, crit, suppression_limit=0.05)
    assert result.solution is not None
    assert result.solution.levels == (0,)
    # with a loss favouring no suppression the top still passes, the middle never does
    top = optimal_search(problem, crit, suppression_limit=0.0)
    assert top.solution is not None
    assert top.solution.levels == (2,)


def test_inconsistent_lookups_are_detected() -> None:
    # level 2 splits what level 1 merged: not a tree, so no roll-up/tagging
    maps = (
        np.arange(3, dtype=np.uint32),
        np.array([0, 0, 1], dtype=np.uint32),
        np.array([0, 1, 1], dtype=np.uint32),
    )
    leaves = (np.ones(3, np.int64), np.array([2, 1], np.int64), np.array([1, 2], np.int64))
    problem = build_problem(
        ["x"],
        np.array([[0], [1], [2]], np.uint32),
        np.array([3, 1, 2], np.int64),
        [QuasiLookup("x", maps, leaves, 3)],
    )
    assert not problem.consistent
    for k in (1, 2, 3, 4):
        best, _ = exhaustive_search(problem, KAnonymity(k), suppression_limit=0.0)
        assert optimal_search(problem, KAnonymity(k), suppression_limit=0.0).solution == best


def test_progress_listener() -> None:
    seen: list[SearchProgress] = []
    result = optimal_search(tiny(), KAnonymity(2), suppression_limit=0.0, progress=seen.append)
    assert seen
    assert seen[-1].nodes_evaluated == result.nodes_evaluated
    assert all(p.nodes_total == 6 for p in seen)
    assert [p.nodes_evaluated for p in seen] == sorted(p.nodes_evaluated for p in seen)
    assert seen[-1].best_levels == (0, 1)
    assert 0 < seen[-1].fraction <= 1


def test_cancel_with_event_or_callable() -> None:
    event = threading.Event()
    event.set()
    with pytest.raises(SearchCancelled):
        optimal_search(tiny(), KAnonymity(2), cancel=event)
    with pytest.raises(SearchCancelled):
        optimal_search(tiny(), KAnonymity(2), cancel=lambda: True)
    assert optimal_search(tiny(), KAnonymity(2), cancel=lambda: False).optimal


def test_time_budget_returns_best_so_far_not_optimal() -> None:
    result = optimal_search(tiny(), KAnonymity(2), suppression_limit=0.0, time_budget=0.0)
    assert not result.optimal
    # the top node is checked first, so a (poor) solution may already be known
    assert result.solution is None or result.solution.passes


# ---------------------------------------------------------------- seeded random stress


def _tree_lookup(rng: np.random.Generator, name: str) -> QuasiLookup:
    size, height = int(rng.integers(2, 9)), int(rng.integers(1, 4))
    maps = [np.arange(size, dtype=np.uint32)]
    leaves = [np.ones(size, dtype=np.int64)]
    current = np.arange(size)
    for level in range(height):
        groups = len(np.unique(current))
        parent = (
            rng.integers(0, groups // 2 + 1, groups) if level < height - 1 else np.zeros(groups)
        )
        _, dense = np.unique(current, return_inverse=True)
        _, nxt = np.unique(parent[dense], return_inverse=True)
        maps.append(nxt.astype(np.uint32))
        leaves.append(np.bincount(nxt).astype(np.int64))
        current = nxt
    return QuasiLookup(name, tuple(maps), tuple(leaves), size)


@pytest.mark.parametrize("seed", range(12))
def test_random_skewed_problems_match_exhaustive(seed: int) -> None:
    """Larger than the hypothesis cases (20-300 rows, skewed values, 2-4 QIs)."""
    rng = np.random.default_rng(seed)
    lookups = [_tree_lookup(rng, f"q{j}") for j in range(int(rng.integers(2, 5)))]
    n = int(rng.integers(20, 300))
    codes = np.stack(
        [np.minimum(rng.geometric(0.4, n) - 1, len(lk.maps[0]) - 1) for lk in lookups], axis=1
    )
    problem = build_problem([lk.column for lk in lookups], codes, np.ones(n, np.int64), lookups)
    for metric in METRICS:
        for crit in (KAnonymity(int(rng.integers(2, 8))), StrictAverageRisk(0.25)):
            for limit in (0.0, 0.05, 0.2):
                best, _ = exhaustive_search(problem, crit, metric=metric, suppression_limit=limit)
                got = optimal_search(problem, crit, metric=metric, suppression_limit=limit)
                assert got.solution == best, (metric, crit, limit)
