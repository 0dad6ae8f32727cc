"""The metrics' per-problem tables and per-node bounds, made by compiled passes (issue
#26: a search with suppression made them in Python per QI and level, or with numpy per
QI over every node), equal bit for bit to the computations they replace, kept here as
oracles: entropy's per-level entropies, its running sums, its static and suppression
bounds, loss's and precision's static and suppression bounds, on random problems and on
wide domains (numpy's pairwise sums past 8 and 128 terms)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.lattice import Lattice
from apps.engine.loss import EntropyMetric, LossMetric, PrecisionMetric, kernels, prepare_metric
from apps.engine.loss.formulas import ARX_FACTOR, generalization_entropies
from apps.engine.search.problem import QuasiLookup, SearchProblem, build_problem
from tests.engine.test_search_properties import problems, raw_problems


def _old_by_level(problem: SearchProblem) -> list[np.ndarray]:
    return [
        generalization_entropies(fr, lk.maps)
        for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
    ]


def _old_cums(problem: SearchProblem) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    cum = []
    for fr in problem.frequencies:
        per_level = []
        for f in fr:
            desc = np.sort(f[f > 0].astype(np.float64))[::-1]
            per_level.append((np.cumsum(desc), np.cumsum(desc * np.log2(desc))))
        cum.append(per_level)
    return cum


def _old_lower_bounds(by_level: list[np.ndarray], levels: np.ndarray) -> np.ndarray:
    total = np.zeros(len(levels), dtype=np.float64)
    for j, e in enumerate(by_level):
        total += e[levels[:, j]]
    return total


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _check_entropy_tables(problem: SearchProblem) -> None:
    metric = EntropyMetric(problem)
    old = _old_by_level(problem)
    assert len(metric.by_level) == len(old)
    for new_row, old_row in zip(metric.by_level, old, strict=True):
        assert _same_bits(new_row, old_row)
    for new_qi, old_qi in zip(metric._cum, _old_cums(problem), strict=True):
        assert len(new_qi) == len(old_qi)
        for (cum, flogf), (old_cum, old_flogf) in zip(new_qi, old_qi, strict=True):
            assert _same_bits(cum, old_cum)
            assert _same_bits(flogf, old_flogf)
    lattice = Lattice(problem.heights)
    assert _same_bits(metric.lower_bounds(lattice.levels), _old_lower_bounds(old, lattice.levels))
    table = metric.search_tables()
    for j, lk in enumerate(problem.lookups):
        for level in range(lk.height + 1):
            assert table["values"][j, level] == lk.values_at(level)
            assert table["by_level"][j, level] == old[j][level]


@settings(max_examples=150, deadline=None)
@given(st.one_of(problems(), raw_problems()))
def test_entropy_tables_equal_the_python_tables_bit_for_bit(problem: SearchProblem) -> None:
    _check_entropy_tables(problem)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([7, 9, 130, 300, 1500]))
def test_entropy_tables_on_wide_domains(seed: int, values: int) -> None:
    """Hundreds of values per level: numpy's pairwise sums of 8 to 128 terms and beyond."""
    rng = np.random.default_rng(seed)
    maps = (
        np.arange(values),
        np.arange(values) // 3,
        np.arange(values) // 50,
        np.zeros(values, dtype=np.int64),
    )
    lookups = [QuasiLookup.from_maps(name, maps) for name in ("a", "b")]
    tuples = int(rng.integers(1, 4 * values))
    codes = [rng.integers(0, values, tuples), rng.integers(0, values, tuples)]
    counts = rng.integers(1, 20, tuples)
    _check_entropy_tables(build_problem(["a", "b"], codes, counts, lookups))


def test_entropy_tables_of_a_problem_without_rows() -> None:
    maps = (np.arange(3), np.zeros(3, dtype=np.int64))
    lookups = [QuasiLookup.from_maps("a", maps)]
    problem = build_problem(["a"], [np.zeros(0, dtype=np.int64)], np.zeros(0), lookups)
    metric = EntropyMetric(problem)
    assert [row.tolist() for row in metric.by_level] == [[0.0, 0.0]]
    assert all(len(cum) == 0 for cum, _ in metric._cum[0])
    _check_entropy_tables(problem)


@settings(max_examples=100, deadline=None)
@given(st.one_of(problems(), raw_problems()), st.data())
def test_entropy_suppression_bounds_equal_the_bound_of_each_node(
    problem: SearchProblem, data: st.DataObject
) -> None:
    """Each QI's term computed once per level and number of suppressed rows (or, past the
    table's size, per node): the same floats as the bound of each node alone."""
    metric = EntropyMetric(problem)
    lattice = Lattice(problem.heights)
    nodes = data.draw(st.lists(st.integers(0, lattice.size - 1), max_size=60))
    levels = np.ascontiguousarray(lattice.levels[nodes], dtype=np.int16)
    few = data.draw(st.booleans())  # (few numbers: the table; many: node by node)
    top = min(problem.rows, 3) if few else problem.rows
    suppressed = np.array([data.draw(st.integers(0, top)) for _ in nodes], dtype=np.int64).reshape(
        len(nodes)
    )
    arrays = metric._bound_arrays
    got = kernels.entropy_suppression_bounds(levels, suppressed, *arrays)
    expected = np.array(
        [
            kernels.entropy_suppression_bound(row, int(s), *arrays)
            for row, s in zip(levels, suppressed, strict=True)
        ],
        dtype=np.float64,
    )
    assert _same_bits(got, expected)


def _old_loss_bounds(
    metric: LossMetric, levels: np.ndarray, suppressed: np.ndarray | None
) -> np.ndarray:
    p = metric.problem
    d = p.dimensions
    prod = np.ones(len(levels), dtype=np.float64)
    if suppressed is None:
        for j in range(d):
            prod *= 1.0 + metric.by_level[j][levels[:, j]]
        return prod ** (1.0 / d) - 1.0
    for j, lk in enumerate(p.lookups):
        col = levels[:, j]
        weighted = (
            np.asarray(metric.weighted[j], dtype=np.int64)[col]
            + suppressed * np.asarray(metric.penalty[j], dtype=np.int64)[col]
        )
        denominator = p.rows * lk.domain_size - p.rows
        if denominator > 0:
            share = np.maximum(0.0, (weighted - p.rows) / denominator)
            prod *= 1.0 + np.floor(share * ARX_FACTOR) / ARX_FACTOR
    return prod ** (1.0 / d) - 1.0


def _old_precision_bounds(
    problem: SearchProblem, levels: np.ndarray, suppressed: np.ndarray | None
) -> np.ndarray:
    d, n = problem.dimensions, problem.rows
    total = np.zeros(len(levels), dtype=np.float64)
    if d == 0 or n == 0:
        return total
    if suppressed is None:
        for j, h in enumerate(problem.heights):
            if h:
                total += levels[:, j] / h
        return total / d
    frac = suppressed / n
    for j, h in enumerate(problem.heights):
        share = levels[:, j] / h if h else np.zeros(len(levels))
        total += share + frac * (1.0 - share)
    return total / d


@settings(max_examples=150, deadline=None)
@given(st.one_of(problems(), raw_problems()), st.data())
def test_loss_and_precision_bounds_equal_the_numpy_bounds_bit_for_bit(
    problem: SearchProblem, data: st.DataObject
) -> None:
    """Static and suppression bounds of every node of random problems (the product or sum
    compiled, numpy's root): the same floats as the numpy computations."""
    lattice = Lattice(problem.heights)
    levels = lattice.levels
    suppressed = np.array(
        [data.draw(st.integers(0, max(problem.rows, 0))) for _ in range(lattice.size)],
        dtype=np.int64,
    )
    loss, precision = LossMetric(problem), PrecisionMetric(problem)
    assert _same_bits(loss.lower_bounds(levels), _old_loss_bounds(loss, levels, None))
    assert _same_bits(
        loss.suppression_bounds(levels, suppressed, 2), _old_loss_bounds(loss, levels, suppressed)
    )
    assert _same_bits(precision.lower_bounds(levels), _old_precision_bounds(problem, levels, None))
    assert _same_bits(
        precision.suppression_bounds(levels, suppressed, 2),
        _old_precision_bounds(problem, levels, suppressed),
    )
    weighted, penalty, rows, domain = loss._bound_arrays
    for j, h in enumerate(problem.heights):
        assert weighted[j, : h + 1].tolist() == list(loss.weighted[j])
        assert penalty[j, : h + 1].tolist() == list(loss.penalty[j])
        assert not weighted[j, h + 1 :].any() and not penalty[j, h + 1 :].any()
    assert rows == problem.rows
    assert domain.tolist() == [lk.domain_size for lk in problem.lookups]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_loss_bounds_on_wider_problems(seed: int, d: int) -> None:
    """Up to four QIs (numpy's root: a square root for two, ``pow`` otherwise)."""
    rng = np.random.default_rng(seed)
    values = 40
    maps = (np.arange(values), np.arange(values) // 4, np.zeros(values, dtype=np.int64))
    names = [f"q{j}" for j in range(d)]
    lookups = [QuasiLookup.from_maps(name, maps) for name in names]
    tuples = 200
    codes = [rng.integers(0, values, tuples) for _ in names]
    problem = build_problem(names, codes, rng.integers(1, 9, tuples), lookups)
    lattice = Lattice(problem.heights)
    suppressed = rng.integers(0, problem.rows + 1, lattice.size)
    loss = LossMetric(problem)
    assert _same_bits(
        loss.lower_bounds(lattice.levels), _old_loss_bounds(loss, lattice.levels, None)
    )
    assert _same_bits(
        loss.suppression_bounds(lattice.levels, suppressed, 2),
        _old_loss_bounds(loss, lattice.levels, suppressed),
    )


def _old_keys(metric: Any, levels: np.ndarray, bounds: np.ndarray, suppressed: np.ndarray) -> Any:
    """``Metric.suppression_keys`` before it bounded every node at once when most suppress
    rows: the nodes that suppress rows gathered."""
    keys = bounds.copy()
    at = np.flatnonzero(suppressed > 0)
    if len(at):
        keys[at] = np.maximum(
            bounds[at], metric._suppression_bounds_of(levels[at], suppressed[at], 2)
        )
    return keys


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(problems(), raw_problems()),
    st.sampled_from(["entropy", "loss", "precision"]),
    st.floats(0.0, 1.0),
    st.integers(0, 2**32 - 1),
)
def test_suppression_keys_equal_the_keys_of_the_nodes_that_suppress_rows(
    problem: SearchProblem, name: str, share: float, seed: int
) -> None:
    """Whatever share of the nodes suppresses rows (all bounded at once past half), the
    same keys bit for bit: a node suppressing nothing gets its static bound."""
    metric = prepare_metric(name, problem)
    lattice = Lattice(problem.heights)
    rng = np.random.default_rng(seed)
    suppressed = np.where(
        rng.random(lattice.size) < share, rng.integers(1, problem.rows + 2, lattice.size), 0
    ).astype(np.int64)
    bounds = metric.lower_bounds(lattice.levels)
    got = metric.suppression_keys(lattice.levels, bounds, suppressed, 2)
    assert _same_bits(got, _old_keys(metric, lattice.levels, bounds, suppressed))
