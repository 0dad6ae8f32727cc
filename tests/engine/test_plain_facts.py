"""The per-node facts of the search without sensitive models (``Evaluator._plain_facts``)
and entropy's suppression terms equal, bit for bit, what the general path computes
(``Evaluator._classes`` then the metric on its NodeClasses; entropy's terms one QI at a
time), on random problems and on a hand-computed case."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity
from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS, EntropyMetric, NodeClasses, prepare_metric
from apps.engine.loss import kernels as loss_kernels
from apps.engine.loss.formulas import suppression_entropy
from apps.engine.search import build_problem
from apps.engine.search.evaluate import Evaluator, NodeFacts
from apps.engine.search.problem import QuasiLookup, SearchProblem, lattice_tops
from tests.engine.test_loss import make_problem
from tests.engine.test_search_properties import problems


def general_facts(ev: Evaluator, index: int) -> NodeFacts:
    """``facts_of`` as it was before the plain path: through ``_classes``."""
    node, smallest, small = ev._classes(index)
    suppressed = node.suppressed_rows
    limit = ev.value_limit
    static = ev.static
    value = (
        math.inf
        if limit is not None and suppressed > limit
        else float(static[index])
        if static is not None and suppressed == 0 and static[index] == static[index]
        else ev.metric.value(node)
    )
    return NodeFacts(
        suppressed_rows=suppressed,
        released_classes=node.released_classes,
        min_class_size=smallest,
        released_rows=ev.problem.rows - suppressed,
        value=value,
        lift=ev.metric.lift(small, ev.k),
        small_rows=small.suppressed_rows,
    )


def old_entropy(metric: EntropyMetric, node: NodeClasses) -> float:
    """EntropyMetric._value before the terms were computed in one pass: per QI, the
    rows of the suppressed classes per value and ``suppression_entropy``'s expression
    (its logarithm ``math.log2``: numpy's vectorized one differs in the last bit on
    AVX-512 processors, and the compiled search computes the terms with the C one)."""
    total = 0.0
    for j, level in enumerate(node.levels):
        total += float(metric.by_level[j][level])
    if not node.suppressed.any():
        return total
    columns = np.asarray(node.columns)
    for j, level in enumerate(node.levels):
        count = np.zeros(metric.problem.lookups[j].values_at(level), dtype=np.int64)
        np.add.at(count, columns[j][node.suppressed], node.sizes[node.suppressed])
        c = count[count > 0].astype(np.float64)
        rows = c.sum()
        if rows != 0:
            # (each term's logarithm the C library's, math.log2, as the kernel's)
            terms = np.array([x * math.log2(x / rows) for x in c.tolist()], dtype=np.float64)
            total += float(-terms.sum()) + 0.0
    return total


def check_problem(problem: SearchProblem, metric_name: str, k: int, limit: int | None) -> None:
    lattice = Lattice(lattice_tops(problem, None))
    metric = prepare_metric(metric_name, problem)
    static = metric.lower_bounds(lattice.levels)
    plain = Evaluator(problem, lattice, KAnonymity(k), metric, static=static)
    general = Evaluator(problem, lattice, KAnonymity(k), metric, static=static)
    plain.value_limit = general.value_limit = limit
    for index in range(lattice.size):
        got = plain.facts_of(index)
        want = general_facts(general, index)
        assert got == want, (index, got, want)
        if isinstance(metric, EntropyMetric):
            node, _, _ = general._classes(index, full=True)
            assert metric.value(node) == old_entropy(metric, node)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    metric=st.sampled_from(METRICS),
    k=st.integers(1, 6),
    limit=st.sampled_from([None, 0, 3]),
)
def test_plain_facts_equal_general_path(
    problem: SearchProblem, metric: str, k: int, limit: int | None
) -> None:
    check_problem(problem, metric, k, limit)


def test_entropy_terms_on_long_segments() -> None:
    """Many values per QI (segments past numpy's 8- and 128-element sum blocks)."""
    rng = np.random.default_rng(7)
    lookups = []
    sizes = (400, 150, 9)
    for j, size in enumerate(sizes):
        maps = [np.arange(size, dtype=np.uint32), (np.arange(size) // 3).astype(np.uint32)]
        leaves = [np.ones(size, dtype=np.int64), np.bincount(maps[1]).astype(np.int64)]
        lookups.append(QuasiLookup(f"q{j}", tuple(maps), tuple(leaves), size))
    t = 3000
    codes = np.stack([rng.integers(0, size, t) for size in sizes], axis=1).astype(np.uint32)
    counts = rng.integers(1, 4, t).astype(np.int64)
    problem = build_problem([lk.column for lk in lookups], codes, counts, lookups)
    for k in (2, 5, 11):
        check_problem(problem, "entropy", k, None)


def test_entropy_hand_computed() -> None:
    """Two QIs, rows (a, x) x3, (a, y), (b, x): with k = 2 at the bottom the classes
    (a, y) and (b, x) are suppressed: 2 rows, QI 0 values a and b one row each
    (2 log2 2 - 0 = 2 bits), QI 1 value y and x one each (2 bits): 4 bits more than
    the generalization entropy."""
    rows = [["a", "x"]] * 3 + [["a", "y"], ["b", "x"]]
    hiers = {"p": [["a", "*"], ["b", "*"]], "q": [["x", "*"], ["y", "*"]]}
    problem = make_problem(rows, hiers)
    metric = prepare_metric("entropy", problem)
    assert isinstance(metric, EntropyMetric)
    lattice = Lattice(lattice_tops(problem, None))
    ev = Evaluator(problem, lattice, KAnonymity(2), metric)
    facts = ev.facts_of(0)
    assert facts.suppressed_rows == 2
    assert facts.released_classes == 1
    assert facts.min_class_size == 3
    generalization = float(metric.by_level[0][0] + metric.by_level[1][0])
    assert facts.value == generalization + 4.0
    assert suppression_entropy(np.array([1, 1])) == 2.0


def test_segment_sums_equal_numpy_sums() -> None:
    """``kernels.segment_sums`` is numpy's sum of each segment, bit for bit: segments of
    every length class (under 8, up to 128, split recursively), mixed signs and
    magnitudes; and a hand-computed case."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        lengths = rng.integers(0, 1500, size=rng.integers(1, 9))
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = rng.standard_normal(int(starts[-1])) * 10.0 ** rng.integers(-3, 7, int(starts[-1]))
        got = loss_kernels.segment_sums(values, starts)
        want = [values[starts[j] : starts[j + 1]].sum() for j in range(len(lengths))]
        assert got.tolist() == [float(w) for w in want]
    got = loss_kernels.segment_sums(np.array([1.0, 2.0, 0.5, 4.0]), np.array([0, 3, 3, 4]))
    assert got.tolist() == [3.5, 0.0, 4.0]
