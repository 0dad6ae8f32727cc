"""Property tests: the optimal search equals exhaustive search on random small problems.

Random data sets (with duplicates and missing values), random consistent hierarchies
(built through Engine I's validated Hierarchy), random raw lookups that need not be
consistent, every metric, k-anonymity / maximum risk / strict average risk, several
suppression limits and optional maximum levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import Criterion, KAnonymity, MaxRisk, StrictAverageRisk
from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS, NodeClasses, prepare_metric
from apps.engine.search import build_problem, exhaustive_search, optimal_search
from apps.engine.search.bounds import suppression_lower_bounds
from apps.engine.search.classes import TableCache
from apps.engine.search.problem import QuasiLookup, SearchProblem
from tests.engine.test_loss import make_problem

LIMITS = (0.0, 0.05, 0.1, 0.3, 1.0)


@st.composite
def hierarchies(draw: Any, column: str) -> list[list[str]]:
    """A consistent hierarchy: each level groups the groups of the level below."""
    size = draw(st.integers(1, 6))
    height = draw(st.integers(1, 3))
    groups = list(range(size))  # group id of each leaf at the current level
    rows: list[list[str]] = [[f"v{i}"] for i in range(size)]
    for level in range(1, height + 1):
        if level == height and draw(st.booleans()):
            labels = {g: "*" for g in set(groups)}
        else:
            labels = {g: f"{column}{level}g{draw(st.integers(0, 3))}" for g in sorted(set(groups))}
        for row, g in zip(rows, groups, strict=True):
            row.append(labels[g])
        groups = [hash(labels[g]) for g in groups]
    return rows


@st.composite
def problems(draw: Any) -> SearchProblem:
    d = draw(st.integers(1, 4))
    names = [f"q{j}" for j in range(d)]
    hiers = {q: draw(hierarchies(q)) for q in names}
    n = draw(st.integers(0, 80))
    rows = []
    for _ in range(n):
        row: list[str | None] = []
        for q in names:
            leaves = [r[0] for r in hiers[q]]
            value = draw(
                st.sampled_from([*leaves, None]) if draw(st.booleans()) else st.sampled_from(leaves)
            )
            row.append(value)
        rows.append(row)
    return make_problem(rows, hiers)


@st.composite
def raw_problems(draw: Any) -> SearchProblem:
    """Bare arrays; level maps drawn independently, so hierarchies may be inconsistent."""
    d = draw(st.integers(1, 3))
    lookups = []
    for j in range(d):
        size = draw(st.integers(1, 4))
        height = draw(st.integers(1, 2))
        maps = [np.arange(size, dtype=np.uint32)]
        leaves = [np.ones(size, dtype=np.int64)]
        for _ in range(height):
            m = np.array(draw(st.lists(st.integers(0, 2), min_size=size, max_size=size)))
            _, dense = np.unique(m, return_inverse=True)
            maps.append(dense.astype(np.uint32))
            leaves.append(np.bincount(dense).astype(np.int64))
        lookups.append(QuasiLookup(f"q{j}", tuple(maps), tuple(leaves), size))
    t = draw(st.integers(0, 25))
    codes = np.array(
        [[draw(st.integers(0, len(lk.maps[0]) - 1)) for lk in lookups] for _ in range(t)],
        dtype=np.uint32,
    ).reshape(t, d)
    counts = np.array([draw(st.integers(1, 4)) for _ in range(t)], dtype=np.int64)
    return build_problem([lk.column for lk in lookups], codes, counts, lookups)


criteria = st.one_of(
    st.builds(KAnonymity, st.integers(1, 6)),
    st.builds(MaxRisk, st.sampled_from([1.0, 0.5, 0.34, 0.2])),
    st.builds(
        StrictAverageRisk, st.sampled_from([0.2, 0.3, 0.5, 1.0]), st.sampled_from([0.5, 0.33])
    ),
)


def check_matches_exhaustive(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float, max_levels: Any
) -> None:
    result = optimal_search(
        problem,
        criterion,
        metric=metric,
        suppression_limit=limit,
        max_levels=max_levels,
        pareto=True,
    )
    best, everything = exhaustive_search(
        problem, criterion, metric=metric, suppression_limit=limit, max_levels=max_levels
    )
    assert result.optimal
    if best is None:
        assert result.solution is None
        return
    assert result.solution == best
    # The Pareto set equals the non-dominated (loss, suppressed) pairs of passing nodes.
    passing = [(r.information_loss, r.suppressed_rows) for r in everything if r.passes]
    front = sorted(
        {p for p in passing if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in passing)},
        key=lambda p: -p[1],
    )
    got = [(p.information_loss, p.suppressed_rows) for p in result.pareto]
    assert got == front[: len(got)]
    assert len(got) == len(front) or len(got) == 25


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    criterion=criteria,
    metric=st.sampled_from(METRICS),
    limit=st.sampled_from(LIMITS),
    cap_levels=st.booleans(),
)
def test_optimal_equals_exhaustive(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float, cap_levels: bool
) -> None:
    max_levels = {problem.quasi[0]: 1} if cap_levels else None
    check_matches_exhaustive(problem, criterion, metric, limit, max_levels)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=raw_problems(),
    criterion=criteria,
    metric=st.sampled_from(METRICS),
    limit=st.sampled_from(LIMITS),
)
def test_optimal_equals_exhaustive_on_raw_lookups(
    problem: SearchProblem, criterion: Criterion, metric: str, limit: float
) -> None:
    check_matches_exhaustive(problem, criterion, metric, limit, None)


def check_bounds(problem: SearchProblem, metric_name: str, k: int) -> None:
    """Every bound the search uses is <= the value of every node it bounds: static
    (with the suppressed rows the pairs certify), with the node's exact suppressed
    rows, and lifted from every specialization (consistent hierarchies)."""
    metric = prepare_metric(metric_name, problem)
    lattice = Lattice(problem.heights)
    cache = TableCache(problem)
    nodes = []
    for idx in range(lattice.size):
        table = cache.table(lattice.node(idx))
        node = NodeClasses(table.levels, table.columns, table.sizes, table.sizes < k)
        nodes.append((node, int(table.sizes[table.sizes < k].sum()), metric.value(node)))
    least = suppression_lower_bounds(problem, lattice, k)
    suppressed = np.array([s for _, s, _ in nodes], dtype=np.int64)
    values = np.array([v for _, _, v in nodes])
    assert (least <= suppressed).all()
    slack = 1e-9 * np.maximum(1.0, np.abs(values))
    static = np.maximum(
        metric.lower_bounds(lattice.levels),
        metric.suppression_bounds(lattice.levels, least, k),
    )
    assert (static <= values + slack).all(), metric_name
    exact = metric.suppression_bounds(lattice.levels, suppressed, k)
    assert (exact <= values + slack).all(), metric_name
    for idx in range(lattice.size):
        bound = metric.suppression_bound(lattice.node(idx), int(suppressed[idx]), k)
        assert bound <= values[idx] + slack[idx], (metric_name, idx)
    if not metric.lift_width:
        return
    base = metric.lift_base(k)
    assert (
        metric.lifted_bounds(np.tile(base, (lattice.size, 1)), suppressed, k) <= values + slack
    ).all()
    if not problem.consistent:
        return
    for below in range(lattice.size):
        lift = np.asarray(metric.lift(nodes[below][0], k))
        up = lattice.generalizations_mask(below)
        lifted = metric.lifted_bounds(np.tile(lift, (int(up.sum()), 1)), suppressed[up], k)
        assert (lifted <= values[up] + slack[up]).all(), (metric_name, below)
        for idx in np.flatnonzero(up)[:3]:
            scalar = metric.lifted_bound(lift.tolist(), int(suppressed[idx]), k)
            assert scalar <= values[idx] + slack[idx]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), metric=st.sampled_from(METRICS), k=st.integers(1, 6))
def test_bounds_never_exceed_values(problem: SearchProblem, metric: str, k: int) -> None:
    check_bounds(problem, metric, k)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=raw_problems(), metric=st.sampled_from(METRICS), k=st.integers(1, 6))
def test_bounds_never_exceed_values_on_raw_lookups(
    problem: SearchProblem, metric: str, k: int
) -> None:
    check_bounds(problem, metric, k)
