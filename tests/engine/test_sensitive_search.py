"""Property tests: with l-diversity / t-closeness models, the optimal search equals the
exhaustive evaluation of every node, whose suppressed rows equal a plain-Python oracle's
(rows of classes that are too small or fail a model, formulas.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import Criterion, KAnonymity, StrictAverageRisk
from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS
from apps.engine.search import exhaustive_search, optimal_search
from tests.engine.test_search_properties import LIMITS, hierarchies
from tests.engine.test_sensitive import SENSITIVE_TREE, SENSITIVE_VALUES, SPECS, build
from tests.engine.test_sensitive import oracle_verdicts as oracle

Rows = list[tuple[str | None, ...]]


@st.composite
def data_sets(draw: Any) -> tuple[Rows, dict[str, list[list[str]]]]:
    d = draw(st.integers(1, 3))
    hiers = {f"q{j}": draw(hierarchies(f"q{j}")) for j in range(d)}
    n = draw(st.integers(1, 60))
    rows: Rows = []
    skew = draw(st.sampled_from([SENSITIVE_VALUES, SENSITIVE_VALUES[:2] * 3 + SENSITIVE_VALUES]))
    for _ in range(n):
        qi = [draw(st.sampled_from([r[0] for r in h])) for h in hiers.values()]
        rows.append((*qi, draw(st.sampled_from(skew))))
    return rows, hiers


criteria = st.one_of(
    st.builds(KAnonymity, st.integers(1, 4)),
    st.builds(StrictAverageRisk, st.sampled_from([0.3, 0.5, 1.0]), st.sampled_from([0.5])),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=data_sets(),
    specs=st.lists(SPECS, min_size=1, max_size=2, unique=True),
    criterion=criteria,
    metric=st.sampled_from(METRICS),
    limit=st.sampled_from(LIMITS),
)
def test_optimal_equals_exhaustive_with_sensitive_models(
    data: tuple[Rows, dict[str, list[list[str]]]],
    specs: list[str],
    criterion: Criterion,
    metric: str,
    limit: float,
) -> None:
    rows, hiers = data
    problem, table = build(rows, hiers, specs, SENSITIVE_TREE)
    result = optimal_search(
        problem, criterion, metric=metric, suppression_limit=limit, pareto=True, sensitive=table
    )
    best, everything = exhaustive_search(
        problem, criterion, metric=metric, suppression_limit=limit, sensitive=table
    )
    assert result.optimal
    assert result.solution == best
    passing = [(r.information_loss, r.suppressed_rows) for r in everything if r.passes]
    front = sorted(
        {p for p in passing if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in passing)},
        key=lambda p: -p[1],
    )
    got = [(p.information_loss, p.suppressed_rows) for p in result.pareto]
    assert got == front[: len(got)]
    # Every node's suppression is the oracle's: rows of classes too small or failing.
    k = table.release_size(criterion)
    lattice = Lattice(problem.heights)
    sizes: dict[tuple[str | None, ...], int] = {}
    for node, evaluated in zip(lattice.levels.tolist(), everything, strict=True):
        verdicts = oracle(rows, hiers, node, specs, k, SENSITIVE_TREE)
        if None in verdicts.values():
            continue  # a t-closeness tie within float noise: either way is right
        sizes = _class_sizes(rows, hiers, node)
        expected = sum(sizes[key] for key, released in verdicts.items() if not released)
        assert evaluated.suppressed_rows == expected, (node, specs)


def _class_sizes(
    rows: Rows, hiers: dict[str, list[list[str]]], levels: list[int]
) -> dict[tuple[str | None, ...], int]:
    from apps.engine.hierarchies import hierarchy_from_rows

    hs = [hierarchy_from_rows(q, h) for q, h in hiers.items()]
    out: dict[tuple[str | None, ...], int] = {}
    for r in rows:
        key = tuple(h.generalize(v, lv) for h, v, lv in zip(hs, r[:-1], levels, strict=True))
        out[key] = out.get(key, 0) + 1
    return out


def test_entropy_l_is_not_monotone_with_suppression() -> None:
    # q = v1: values a, b (H = ln 2: passes entropy-2); q = v2: a x5 (fails): 5 rows
    # suppressed at level 0. At level 1 (*): a x6, b x1, H = 0.41 < ln 2: all 7 rows.
    # Going up suppresses *more*, so a failure must not tag the node below (ARX treats
    # entropy l-diversity as monotone with generalization only).
    rows: Rows = [("v1", "1"), ("v1", "2")] + [("v2", "1")] * 5
    problem, table = build(rows, {"q": [["v1", "*"], ["v2", "*"]]}, ["entropy-l=2"])
    best, everything = exhaustive_search(
        problem, KAnonymity(1), metric="loss", suppression_limit=0.75, sensitive=table
    )
    assert [r.suppressed_rows for r in everything] == [5, 7]
    assert best is not None and best.levels == (0,)
    result = optimal_search(
        problem, KAnonymity(1), metric="loss", suppression_limit=0.75, sensitive=table
    )
    assert result.solution == best
    # With nothing to suppress, every model is monotone: neither node passes.
    none = optimal_search(problem, KAnonymity(1), suppression_limit=0.0, sensitive=table)
    assert none.solution is None
