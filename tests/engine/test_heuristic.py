"""The heuristic search: on lattices the exact search settles, its answer passes, is never
better than the optimum, and the optimum is never below its bound (property tests against
the exhaustive search); on a lattice too large for the exact search it still answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity
from apps.engine.lattice import max_nodes
from apps.engine.search import SearchProblem, build_problem, exhaustive_search
from apps.engine.search.heuristic import bound_ratio, heuristic_search, minimum_levels
from apps.engine.search.problem import QuasiLookup
from tests.engine.test_loss import tiny


def test_tiny_hand_checked() -> None:
    # k = 2 with no suppression: the optimum is (0, 1) with loss sqrt(2) - 1; single-QI
    # minimum levels are a: 0 (a1 x2, a2 x2, a3 x2 -> no class under 2) and b: 0.
    result = heuristic_search(tiny(), KAnonymity(2), suppression_limit=0.0)
    assert result.minimum_levels == (0, 0)
    assert result.solution is not None and result.solution.passes
    optimum, _ = exhaustive_search(tiny(), KAnonymity(2), suppression_limit=0.0)
    assert optimum is not None
    assert result.solution.information_loss >= optimum.information_loss - 1e-12
    assert result.lower_bound is not None and result.lower_bound <= optimum.information_loss
    # (a bound of 0 bounds no multiple: the loss of a node other than the bottom is above it)
    assert result.lower_bound == 0.0 and result.ratio is None


def _four_by_four() -> SearchProblem:
    """4 records, QIs a and b of values 1-4 merged in pairs (12, 34), then to *:
    (a1,b1) (a2,b3) (a3,b2) (a4,b4)."""
    maps = [np.arange(4), np.array([0, 0, 1, 1]), np.zeros(4)]
    lookups = [QuasiLookup.from_maps(q, [m.astype(np.uint32) for m in maps]) for q in "ab"]
    return build_problem(
        ("a", "b"),
        [np.array([0, 1, 2, 3], dtype=np.uint32), np.array([0, 2, 1, 3], dtype=np.uint32)],
        np.ones(4, dtype=np.int64),
        lookups,
    )


def test_the_bound_is_a_ratio_to_the_lower_bound_hand_computed() -> None:
    # k = 2, nothing suppressed. Each QI alone: every value is unique at level 0, the pairs
    # 12 and 34 hold 2 records each at level 1: minimum levels (1, 1). Precision is the mean
    # of level / height: the least over the box above (1, 1) is (1/2 + 1/2) / 2 = 0.5.
    # (1, 1) puts each record alone; (2, 1) and (1, 2) make two classes of 2: precision
    # (2/2 + 1/2) / 2 = 0.75. The answer is at most 0.75 / 0.5 = 1.5 times the optimum,
    # not "33 % above it" (the old (found - bound) / found).
    result = heuristic_search(
        _four_by_four(), KAnonymity(2), metric="precision", suppression_limit=0.0
    )
    assert result.minimum_levels == (1, 1)
    assert result.solution is not None and result.solution.levels in ((2, 1), (1, 2))
    assert result.solution.information_loss == 0.75
    assert result.lower_bound == 0.5
    assert result.ratio == 1.5
    assert not hasattr(result, "gap")
    optimum, _ = exhaustive_search(
        _four_by_four(), KAnonymity(2), metric="precision", suppression_limit=0.0
    )
    assert optimum is not None and result.lower_bound <= optimum.information_loss == 0.75


def test_an_answer_at_its_bound_is_optimal() -> None:
    assert bound_ratio(0.4, 0.4) == 1.0
    assert bound_ratio(0.7427, 0.0075) == pytest.approx(99.03, abs=0.01)
    assert bound_ratio(0.3, 0.0) is None


def test_no_solution_when_one_variable_alone_fails_within_its_cap() -> None:
    result = heuristic_search(tiny(), KAnonymity(7), suppression_limit=0.0)
    assert result.solution is None and result.minimum_levels is None


def _chain_lookup(column: str, values: int, fanout: int, height: int) -> QuasiLookup:
    maps = [np.arange(values, dtype=np.uint32)]
    for level in range(1, height):
        maps.append((np.arange(values) // fanout**level).astype(np.uint32))
    maps.append(np.zeros(values, dtype=np.uint32))
    return QuasiLookup.from_maps(column, maps)


@st.composite
def problems(draw):  # type: ignore[no-untyped-def]
    d = draw(st.integers(2, 4))
    values = [draw(st.integers(2, 6)) for _ in range(d)]
    heights = [draw(st.integers(1, 3)) for _ in range(d)]
    rows = draw(st.integers(5, 60))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, v, size=rows).astype(np.uint32) for v in values]
    lookups = [_chain_lookup(f"q{j}", values[j], 2, heights[j]) for j in range(d)]
    stacked = np.stack(columns, axis=1)
    distinct, counts = np.unique(stacked, axis=0, return_counts=True)
    problem = build_problem(
        tuple(f"q{j}" for j in range(d)),
        [distinct[:, j] for j in range(d)],
        counts.astype(np.int64),
        lookups,
    )
    k = draw(st.integers(2, 5))
    limit = draw(st.sampled_from([0.0, 0.05, 0.2]))
    metric = draw(st.sampled_from(["loss", "entropy", "precision", "discernibility", "aecs"]))
    return problem, k, limit, metric


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_heuristic_never_beats_the_optimum_and_the_bound_holds(case) -> None:  # type: ignore[no-untyped-def]
    problem, k, limit, metric = case
    optimum, _ = exhaustive_search(problem, KAnonymity(k), metric=metric, suppression_limit=limit)
    result = heuristic_search(problem, KAnonymity(k), metric=metric, suppression_limit=limit)
    if optimum is None:
        assert result.solution is None
        return
    assert result.solution is not None and result.solution.passes
    assert result.solution.information_loss >= optimum.information_loss - 1e-9
    assert result.lower_bound is not None
    assert result.lower_bound <= optimum.information_loss + 1e-9
    if result.ratio is not None:
        assert result.ratio >= 1.0
        # the optimum lies between the bound and the answer
        assert result.solution.information_loss <= result.ratio * optimum.information_loss + 1e-9
    else:
        assert result.lower_bound == 0.0 < result.solution.information_loss


def test_answers_where_the_exact_search_cannot() -> None:
    # 22 quasi-identifiers of height 2: 3^22 (3.1e10) nodes, far over the exact search's
    # limit; the walk evaluates a few hundred nodes.
    d, rows = 22, 500
    rng = np.random.default_rng(5)
    columns = rng.integers(0, 4, size=(rows, d)).astype(np.uint32)
    distinct, counts = np.unique(columns, axis=0, return_counts=True)
    lookups = [_chain_lookup(f"q{j}", 4, 2, 2) for j in range(d)]
    problem = build_problem(
        tuple(f"q{j}" for j in range(d)),
        [distinct[:, j] for j in range(d)],
        counts.astype(np.int64),
        lookups,
    )
    result = heuristic_search(problem, KAnonymity(5), suppression_limit=0.05)
    assert result.nodes_total == 3**22 > max_nodes(d)
    assert result.solution is not None and result.solution.passes
    assert result.solution.suppressed_rows <= 25
    assert result.nodes_evaluated < 2000
    assert minimum_levels(problem, 5, 25, [2] * d) == result.minimum_levels
