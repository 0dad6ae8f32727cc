"""Exhaustive evaluation of every lattice node: the reference the tests hold the search to."""

from __future__ import annotations

import math
from collections.abc import Mapping

from apps.engine.criteria import DEFAULT_SUPPRESSION_LIMIT, Criterion
from apps.engine.lattice import Lattice
from apps.engine.loss import MetricName, prepare_metric
from apps.engine.search.evaluate import Evaluator, NodeResult, better
from apps.engine.search.problem import SearchProblem, lattice_tops
from apps.engine.search.sensitive import SensitiveTable


def exhaustive_search(
    problem: SearchProblem,
    criterion: Criterion,
    *,
    metric: MetricName | str = "loss",
    suppression_limit: float = DEFAULT_SUPPRESSION_LIMIT,
    max_levels: Mapping[str, int] | None = None,
    sensitive: SensitiveTable | None = None,
) -> tuple[NodeResult | None, list[NodeResult]]:
    """Evaluate every node (reference for tests): (optimum, all nodes in index order)."""
    prepared = prepare_metric(str(metric), problem)
    lattice = Lattice(lattice_tops(problem, max_levels))
    ev = Evaluator(problem, lattice, criterion, prepared, sensitive=sensitive)
    rank = lattice.tie_order()
    results = [ev.result(i, suppression_limit) for i in range(lattice.size)]
    best, best_value, best_rank = -1, math.inf, lattice.size
    for i, r in enumerate(results):
        if r.passes and better(r.information_loss, int(rank[i]), best_value, best_rank):
            best, best_value, best_rank = i, r.information_loss, int(rank[i])
    return (results[best] if best >= 0 else None), results
