"""The ARX benchmark: adult, all 9 columns as QIs, metric Loss (the slow engine test).

Every expected solution below was verified by the exhaustive evaluation of all 12,960
nodes in this very test (`exhaustive_table`), which computes each node's classes once
and scores it for every k; the search must match it exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from apps.engine.criteria import KAnonymity, allowed_suppression
from apps.engine.frame import encode_file
from apps.engine.hierarchies import read_arx_csv
from apps.engine.lattice import Lattice
from apps.engine.loss import METRICS, NodeClasses, prepare_metric
from apps.engine.search import SearchProblem, optimal_search, problem_from_encoded
from apps.engine.search.classes import TableCache
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT, ADULT_COLUMNS, ARX_DIR

KS = (2, 5, 11, 20)
LIMITS = (0.0, 0.05)

# (k, suppression limit) -> optimal levels in ADULT_COLUMNS order (sex, age, race,
# marital-status, education, native-country, workclass, occupation, salary-class)
EXPECTED = {
    (2, 0.0): (0, 4, 1, 1, 3, 2, 0, 2, 0),
    (2, 0.05): (0, 3, 0, 0, 1, 1, 1, 1, 0),
    (5, 0.0): (0, 4, 1, 1, 3, 2, 2, 1, 0),
    (5, 0.05): (0, 3, 0, 0, 2, 1, 1, 2, 0),
    (11, 0.0): (0, 4, 1, 1, 3, 2, 2, 1, 0),
    (11, 0.05): (0, 4, 0, 1, 2, 1, 1, 1, 0),
    (20, 0.0): (0, 4, 1, 1, 3, 2, 2, 1, 0),
    (20, 0.05): (0, 3, 0, 1, 3, 1, 1, 2, 0),
}

# k = 5, 5 % suppression: optimal levels per metric (verified exhaustively below)
EXPECTED_K5_METRICS = {
    "loss": EXPECTED[(5, 0.05)],
    "entropy": (0, 0, 1, 1, 2, 2, 2, 1, 1),
    "precision": (0, 4, 0, 0, 3, 1, 0, 1, 0),
    "discernibility": (0, 0, 1, 2, 3, 2, 2, 1, 1),
    "aecs": (1, 0, 1, 1, 3, 2, 2, 0, 1),
}


def load_adult() -> SearchProblem:
    require(ADULT)
    encoded = encode_file(ADULT, ADULT_COLUMNS, sep=";")
    lookups = [
        read_arx_csv(Path(ARX_DIR) / f"adult_hierarchy_{q}.csv", q).lookup(d)
        for q, d in zip(ADULT_COLUMNS, encoded.dictionaries, strict=True)
    ]
    return problem_from_encoded(encoded, lookups)


@pytest.fixture(scope="module")
def adult() -> SearchProblem:
    return load_adult()


@pytest.fixture(scope="module")
def exhaustive_table(adult: SearchProblem) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(metric, k) -> (suppressed rows per node, metric value per node) over the whole
    lattice: Loss for every k, every metric for k = 5. Each node's classes are computed
    once (rolled up from a cached less general node) and scored for all of these."""
    lattice = Lattice(adult.heights)
    metrics = {name: prepare_metric(name, adult) for name in METRICS}
    wanted = [("loss", k) for k in KS] + [(m, 5) for m in METRICS if m != "loss"]
    cache = TableCache(adult, 256 << 20)
    out = {key: (np.zeros(lattice.size, np.int64), np.zeros(lattice.size)) for key in wanted}
    for index in range(lattice.size):
        table = cache.table(lattice.node(index))
        for name, k in wanted:
            small = table.sizes < k
            node = NodeClasses(table.levels, table.columns, table.sizes, small)
            out[(name, k)][0][index] = int(table.sizes[small].sum())
            out[(name, k)][1][index] = metrics[name].value(node)
    return out


def exhaustive_best(
    table: tuple[np.ndarray, np.ndarray], rows: int, limit: float, lattice: Lattice
) -> int:
    """Index of the best passing node: least value, then lowest total level, then lex."""
    suppressed, values = table
    candidates = np.flatnonzero(suppressed <= allowed_suppression(rows, limit))
    rank = lattice.tie_order()
    return int(candidates[np.lexsort((rank[candidates], values[candidates]))[0]])


def test_lattice_and_tuples(adult: SearchProblem) -> None:
    assert adult.rows == 30_162
    assert len(adult.counts) == 19_502
    assert Lattice(adult.heights).size == 12_960


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("limit", LIMITS)
def test_adult_loss_optimal(
    adult: SearchProblem,
    exhaustive_table: dict[int, tuple[np.ndarray, np.ndarray]],
    k: int,
    limit: float,
) -> None:
    lattice = Lattice(adult.heights)
    suppressed, loss = exhaustive_table[("loss", k)]
    best = exhaustive_best(exhaustive_table[("loss", k)], adult.rows, limit, lattice)
    assert lattice.node(best) == EXPECTED[(k, limit)]  # the exhaustive reference

    result = optimal_search(adult, KAnonymity(k), metric="loss", suppression_limit=limit)
    assert result.optimal
    assert result.solution is not None
    assert result.solution.levels == EXPECTED[(k, limit)]
    assert result.solution.information_loss == loss[best]
    assert result.solution.suppressed_rows == suppressed[best]
    assert result.solution.min_class_size >= k
    assert result.nodes_evaluated < lattice.size // 4


@pytest.mark.parametrize("metric", METRICS)
def test_adult_k5_every_metric_matches_exhaustive(
    adult: SearchProblem,
    exhaustive_table: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]],
    metric: str,
) -> None:
    lattice = Lattice(adult.heights)
    best = exhaustive_best(exhaustive_table[(metric, 5)], adult.rows, 0.05, lattice)
    result = optimal_search(adult, KAnonymity(5), metric=metric, suppression_limit=0.05)
    assert result.optimal
    assert result.solution is not None
    assert result.solution.levels == EXPECTED_K5_METRICS[metric] == lattice.node(best)
    assert result.solution.information_loss == exhaustive_table[(metric, 5)][1][best]
