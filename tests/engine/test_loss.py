"""Hand-computed information-loss values on a tiny data set (METHOD.md Step 8).

Data (6 rows), QI ``a`` with hierarchy a1,a2 -> a12 -> *, a3 -> a3 -> * (3 leaves,
height 2) and QI ``b`` with b1,b2 -> * (2 leaves, height 1):

    (a1,b1) x2, (a2,b1) x1, (a2,b2) x1, (a3,b2) x2

At node (1, 0) the classes are (a12,b1): 3 rows, (a12,b2): 1 row, (a3,b2): 2 rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.frame import encode
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.loss import (
    EntropyMetric,
    NodeClasses,
    average_class_size,
    cell_missingness,
    discernibility_value,
    entropy_percent,
    generalization_entropy,
    geometric_mean_loss,
    loss_of_dimension,
    precision_value,
    prepare_metric,
    record_missingness,
    suppression_entropy,
    truncate_like_arx,
)
from apps.engine.loss.formulas import generalization_entropies
from apps.engine.search import SearchProblem, problem_from_encoded
from apps.engine.search.classes import base_table, roll_up
from apps.engine.search.report import node_missingness, starred_cells, variable_distributions

HIER_A = [["a1", "a12", "*"], ["a2", "a12", "*"], ["a3", "a3", "*"]]
HIER_B = [["b1", "*"], ["b2", "*"]]
TINY = [("a1", "b1")] * 2 + [("a2", "b1"), ("a2", "b2")] + [("a3", "b2")] * 2


def make_problem(
    rows: Sequence[Sequence[str | None]],
    hierarchies: Mapping[str, Sequence[Sequence[str]]],
) -> SearchProblem:
    """Encode rows with Engine I's frame/hierarchies and adapt them for the search."""
    quasi = list(hierarchies)
    frame = pl.DataFrame(
        {q: [r[j] for r in rows] for j, q in enumerate(quasi)},
        schema=dict.fromkeys(quasi, pl.String),
    )
    enc = encode(frame, quasi)
    lookups = [
        hierarchy_from_rows(q, hierarchies[q]).lookup(d)
        for q, d in zip(quasi, enc.dictionaries, strict=True)
    ]
    return problem_from_encoded(enc, lookups)


def tiny() -> SearchProblem:
    return make_problem(TINY, {"a": HIER_A, "b": HIER_B})


def node(problem: SearchProblem, levels: tuple[int, ...], k: int) -> NodeClasses:
    table = roll_up(problem, base_table(problem), levels)
    return NodeClasses(table.levels, table.columns, table.sizes, table.sizes < k)


def test_tiny_classes() -> None:
    n = node(tiny(), (1, 0), 2)
    assert sorted(n.sizes.tolist()) == [1, 2, 3]
    assert int(n.sizes[n.suppressed].sum()) == 1


def test_loss_hand_computed_k2() -> None:
    # a: released (a12,b1) 3 x 2/3 = 2, (a3,b2) 2 x 1/3 = 2/3, suppressed 1 row x 1:
    #    S_a = 11/3; L_a = (11/3 - 6/3) / (6 - 6/3) = (5/3)/4 = 5/12
    # b: released 5 rows x 1/2 + 1 suppressed = 7/2; L_b = (7/2 - 3)/(6 - 3) = 1/6
    # loss = sqrt((1 + 5/12)(1 + 1/6)) - 1 = sqrt(119/72) - 1, each dimension first
    # truncated to 10 decimals as ARX does (0.4166666666, 0.1666666666)
    value = prepare_metric("loss", tiny()).value(node(tiny(), (1, 0), 2))
    assert value == pytest.approx(math.sqrt(1.4166666666 * 1.1666666666) - 1, rel=1e-12)
    assert value == pytest.approx(math.sqrt(119 / 72) - 1, rel=1e-9)


def test_loss_truncated_like_arx() -> None:
    # ARX Metric.round: floor(x * 1e10) / 1e10 of each normalized dimension
    assert truncate_like_arx(5 / 12) == 0.4166666666
    assert truncate_like_arx(0.75) == 0.75
    assert loss_of_dimension(11, 6, 3) == 0.4166666666


def test_loss_hand_computed_k3() -> None:
    # k=3 suppresses (a12,b2) and (a3,b2): S = 3.
    # a: 3 x 2/3 + 3 = 5 -> L_a = (5-2)/4 = 3/4; b: 3 x 1/2 + 3 = 9/2 -> L_b = (9/2-3)/3 = 1/2
    value = prepare_metric("loss", tiny()).value(node(tiny(), (1, 0), 3))
    assert value == pytest.approx(math.sqrt(7 / 4 * 3 / 2) - 1, rel=1e-12)


def test_loss_formula_pieces() -> None:
    # L = (S|H| - n)/(n|H| - n): S = 11/3, |H| = 3, n = 6 -> (11 - 6)/(18 - 6) = 5/12
    assert loss_of_dimension(11, 6, 3) == pytest.approx(5 / 12)
    assert loss_of_dimension(5, 0, 3) == 0.0  # no rows
    assert loss_of_dimension(6, 6, 1) == 0.0  # one-leaf hierarchy
    assert geometric_mean_loss([]) == 0.0
    assert geometric_mean_loss([1.0, 0.0]) == pytest.approx(math.sqrt(2) - 1)


def test_loss_bottom_is_zero_and_top_is_one() -> None:
    metric = prepare_metric("loss", tiny())
    assert metric.value(node(tiny(), (0, 0), 1)) == 0.0
    assert metric.value(node(tiny(), (2, 1), 1)) == pytest.approx(1.0)
    bounds = metric.lower_bounds(np.array([[0, 0], [2, 1]], dtype=np.int16))
    assert bounds.tolist() == pytest.approx([0.0, 1.0])


def test_entropy_hand_computed() -> None:
    # a at level 1: f(a1)=f(a2)=f(a3)=2, f(a12)=4, f(a3)=2
    #   -[2 log2(2/4) + 2 log2(2/4) + 2 log2(2/2)] = 4;   b at level 0: 0
    metric = prepare_metric("entropy", tiny())
    assert metric.value(node(tiny(), (1, 0), 2)) == pytest.approx(4.0)  # 1 suppressed row: +0
    # k=3: suppressed rows have a-values a12 x1, a3 x2 and b-values b2 x3 (S = 3):
    #   -[1 log2(1/3) + 2 log2(2/3)] = 3 log2 3 - 2;  -[3 log2(3/3)] = 0
    assert metric.value(node(tiny(), (1, 0), 3)) == pytest.approx(2 + 3 * math.log2(3))


def test_entropy_maximum_and_percent() -> None:
    # top: a -> -3 x 2 log2(2/6) = 6 log2 3; b -> -2 x 3 log2(3/6) = 6
    metric = prepare_metric("entropy", tiny())
    assert isinstance(metric, EntropyMetric)
    assert metric.maximum() == pytest.approx(6 * math.log2(3) + 6)
    assert entropy_percent(4.0, metric.maximum()) == pytest.approx(400 / (6 * math.log2(3) + 6))
    assert entropy_percent(1.0, 0.0) == 0.0


def test_entropy_pieces_guard_empty() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert generalization_entropy(empty, empty, np.zeros(0, dtype=np.uint32)) == 0.0
    assert suppression_entropy(np.zeros(3, dtype=np.int64)) == 0.0
    assert suppression_entropy(np.array([2, 2], dtype=np.int64)) == pytest.approx(4.0)


def test_generalization_entropies_hand_computed() -> None:
    # QI a of tiny(): leaves a1 x2, a2 x2, a3 x2; level 1: a12 x4, a3 x2; level 2: * x6
    frequencies = [np.array([2, 2, 2]), np.array([4, 2]), np.array([6])]
    maps = [np.array([0, 1, 2]), np.array([0, 0, 1]), np.array([0, 0, 0])]
    got = generalization_entropies(frequencies, [m.astype(np.uint32) for m in maps])
    assert got.tolist() == pytest.approx([0.0, 4.0, 6 * math.log2(3)])
    assert generalization_entropies([np.zeros(2, dtype=np.int64)], [np.arange(2)]).tolist() == [0.0]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 3000),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
    st.sampled_from([2, 50, 10**6]),
)
def test_generalization_entropies_equal_the_per_level_formula_bit_for_bit(
    n: int, levels: int, seed: int, most: int
) -> None:
    """Every level's value is :func:`generalization_entropy`'s, to the last bit (the
    search's entropy and the released table's are compared for equality), on values
    with and without rows, beyond numpy's pairwise-sum block (128) and its splits."""
    rng = np.random.default_rng(seed)
    maps = [np.arange(n, dtype=np.uint32)]
    for _ in range(1, levels):
        maps.append(rng.integers(0, int(rng.integers(1, n + 1)), n).astype(np.uint32))
    leaves = rng.integers(0, most, n).astype(np.int64)
    frequencies = [leaves] + [
        np.bincount(m, weights=leaves, minlength=int(m.max()) + 1).astype(np.int64)
        for m in maps[1:]
    ]
    got = generalization_entropies(frequencies, maps)
    want = [generalization_entropy(leaves, frequencies[lv], maps[lv]) for lv in range(levels)]
    assert got.tobytes() == np.array(want, dtype=np.float64).tobytes()


def test_precision_hand_computed() -> None:
    # heights a=2, b=1; S=1, n=6: a: (5 x 1/2 + 1)/6 = 7/12, b: (5 x 0 + 1)/6 = 1/6
    # mean = (7/12 + 2/12)/2 = 3/8
    assert prepare_metric("precision", tiny()).value(node(tiny(), (1, 0), 2)) == pytest.approx(
        3 / 8
    )
    assert precision_value([], [], 6, 0) == 0.0
    assert precision_value([1], [2], 0, 0) == 0.0
    assert precision_value([0], [0], 6, 0) == 0.0


def test_discernibility_and_aecs_hand_computed() -> None:
    # released classes 3 and 2: 9 + 4 = 13, plus S x n = 1 x 6 -> 19; AECS = 6 / 2 = 3
    assert prepare_metric("discernibility", tiny()).value(node(tiny(), (1, 0), 2)) == 19.0
    assert prepare_metric("aecs", tiny()).value(node(tiny(), (1, 0), 2)) == 3.0
    assert discernibility_value(np.zeros(0, dtype=np.int64), 0, 0) == 0
    assert average_class_size(0, 0) == 0.0
    assert average_class_size(5, 0) == math.inf


def test_lower_bounds_do_not_exceed_values() -> None:
    p = tiny()
    levels = np.array([[a, b] for a in range(3) for b in range(2)], dtype=np.int16)
    for name in ("loss", "entropy", "precision", "discernibility", "aecs"):
        metric = prepare_metric(name, p)
        bounds = metric.lower_bounds(levels)
        for row, bound in zip(levels, bounds, strict=True):
            for k in (1, 2, 3, 7):
                value = metric.value(node(p, (int(row[0]), int(row[1])), k))
                assert bound <= value + 1e-12, (name, row, k)


def test_missingness_seed_001_example() -> None:
    # Seed 001: 100 records, 2 QIs. Records 3, 5, 7 miss QI 1 before; de-identification
    # suppresses QI 2 in records 5, 10, 18. Records missing: 3 -> 5 (+2 %);
    # cells missing: 3/200 -> 6/200 (+1.5 %).
    before = np.zeros((100, 2), dtype=bool)
    before[[2, 4, 6], 0] = True
    after = before.copy()
    after[[4, 9, 17], 1] = True
    assert record_missingness(before, after) == pytest.approx(0.02)
    assert cell_missingness(before, after) == pytest.approx(0.015)
    empty = np.zeros((0, 2), dtype=bool)
    assert record_missingness(empty, empty) == 0.0
    assert cell_missingness(empty, empty) == 0.0


def test_node_missingness_counts_only_added() -> None:
    # Row (a1, None) misses b before. At (1,0), k=2 the singletons (a12,b2) and
    # (a12,None) are suppressed. Records missing: 1 before, 2 after, of 7 -> +1/7.
    # Cells missing: 1 before; after, both cells of both suppressed rows = 4 -> +3/14.
    rows = [*TINY, ("a1", None)]
    p = make_problem(rows, {"a": HIER_A, "b": HIER_B})
    m = node_missingness(p, (1, 0), 2)
    assert m.records == pytest.approx(1 / 7)
    assert m.cells == pytest.approx(3 / 14)
    # only suppression counts by default (Seed 001); optionally also b generalized to
    # '*': every b cell counts as missing after (6 newly, 1 already was)
    assert node_missingness(p, (0, 1), 1) == node_missingness(p, (0, 0), 1)
    assert node_missingness(p, (0, 1), 1).cells == 0.0
    full = node_missingness(p, (0, 1), 1, count_full_generalization=True)
    assert full.cells == pytest.approx(6 / 14)
    assert full.records == pytest.approx(6 / 7)


def test_cells_released_as_star_hand_computed() -> None:
    # TINY at (2, 0), k = 2: classes (*, b1) x3 and (*, b2) x3, nothing suppressed: a is *
    # in all 6 released records, b in none: 6 of 12 cells (50 %), while missingness
    # (suppression only) is 0.
    p = tiny()
    starred = starred_cells(p, (2, 0), 2)
    assert (starred.by_column, starred.released_rows) == ({"a": 6, "b": 0}, 6)
    assert (starred.starred, starred.cells, starred.share) == (6, 12, 0.5)
    assert starred.whole_columns == ("a",)
    assert node_missingness(p, (2, 0), 2).cells == 0.0
    # At (1, 0), k = 2, (a12, b2) (1 record) is suppressed; a12 and a3 are not * (a12
    # covers 2 of a's 3 values): nothing starred among the 5 released records.
    starred = starred_cells(p, (1, 0), 2)
    assert (starred.by_column, starred.released_rows, starred.share) == ({"a": 0, "b": 0}, 5, 0)
    # At (1, 1): b is * in the 6 released records (classes (a12,*) x4, (a3,*) x2).
    assert starred_cells(p, (1, 1), 2).by_column == {"a": 0, "b": 6}
    # Everything suppressed: nothing released, nothing starred.
    everything = starred_cells(p, (0, 0), 7)
    assert (everything.released_rows, everything.share, everything.whole_columns) == (0, 0.0, ())


def test_variable_distributions() -> None:
    dists = variable_distributions(tiny(), (1, 0), 2)
    a, b = dists
    assert dict(a.before) == {"a1": 2, "a2": 2, "a3": 2}
    assert dict(a.after) == {"a12": 3, "a3": 2}  # the (a12,b2) row is suppressed
    assert dict(b.after) == {"b1": 3, "b2": 2}
    assert a.suppressed_rows == b.suppressed_rows == 1


def test_unknown_metric() -> None:
    from apps.engine.errors import EngineInputError

    with pytest.raises(EngineInputError, match="unknown metric"):
        prepare_metric("nope", tiny())


def test_loss_tables_by_hand() -> None:
    # Tiny data: a at level 0 covers 1 leaf a row (6 rows: 6), at level 1 a12 covers 2
    # leaves for 4 rows and a3 1 leaf for 2 (10), at level 2 all 3 leaves (18); b: 6 and
    # 12. Loss = (S - n) / (n |H| - n), truncated to 10 decimals: a 0, 4/12, 1; b 0, 1.
    # Penalty: |H| less the most leaves of a value present (a: 3-1, 3-2, 3-3; b: 2-1, 2-2).
    from apps.engine.loss.hierarchy_metrics import _loss_tables

    weighted, by_level, penalty = _loss_tables(tiny())
    assert weighted == ((6, 10, 18), (6, 12))
    assert by_level[0].tolist() == [0.0, 0.3333333333, 1.0]
    assert by_level[1].tolist() == [0.0, 1.0]
    assert penalty == ([2, 1, 0], [1, 0])
