"""The optimal search when nothing may be suppressed, in one compiled call.

Without suppression and with a monotone criterion (k-anonymity, maximum risk) on
consistent hierarchies, a search is ``optimal.py``'s best-first search with nothing in it
that needs Python per node: whether a node passes and what it is worth come from the
summary of its classes (``kernels.fetch``). :func:`zero_limit_search` prepares what that
search prepares (the rows every node certainly suppresses, the metric's static bounds and
keys of the nodes that may pass, the table cache) and hands the rest to
:func:`kernels.solve.solve_zero_limit`, which takes the same nodes in the same order and
chooses the same node as ``_Search.solve`` (``tests/engine/test_zero_limit.py`` checks it
node for node). Nothing is built per lattice node but flat arrays: no :class:`Lattice`,
no tie-order array (a node's tie rank is its total level and index), no Python object
per evaluated node.

``optimal_search`` takes this path when it can (:func:`applies`): no sensitive models,
no progress listener, cancel signal or time budget (the compiled loop reports nothing
until it is done).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import Criterion, average_risk
from apps.engine.frame import PARALLEL_ROWS
from apps.engine.lattice import lattice_shape
from apps.engine.loss import Metric, prepare_metric
from apps.engine.search.bounds import lattice_suppression_bounds
from apps.engine.search.classes import TableCache
from apps.engine.search.evaluate import NodeResult
from apps.engine.search.kernels import solve
from apps.engine.search.problem import SearchProblem
from apps.engine.workers import Deferred

#: Metric kinds of the compiled search (``kernels/solve.py``).
_KINDS = {"discernibility": solve.DISCERNIBILITY, "aecs": solve.AECS}


def applies(problem: SearchProblem, criterion: Criterion, allowed: int) -> bool:
    """Whether :func:`zero_limit_search` finds what ``_Search.solve`` would: nothing may be
    suppressed, the criterion is monotone, the hierarchies consistent, and there are
    quasi-identifiers and rows."""
    return (
        allowed == 0
        and criterion.monotone
        and problem.consistent
        and problem.dimensions > 0
        and problem.rows > 0
    )


def _levels(
    nodes: NDArray[np.int64], tops: Sequence[int], strides: Sequence[int]
) -> NDArray[np.int16]:
    """The levels of ``nodes`` (``[len(nodes) x d]``), from their numbers."""
    radix = np.asarray(tops, dtype=np.int64) + 1
    out: NDArray[np.int16] = (
        (nodes[:, None] // np.asarray(strides, dtype=np.int64)) % radix
    ).astype(np.int16)
    return out


def zero_limit_search(
    problem: SearchProblem,
    criterion: Criterion,
    metric_name: str,
    tops: Sequence[int],
    cache_bytes: int | None = None,
) -> tuple[NodeResult | None, int, int, Metric]:
    """The optimum when nothing may be suppressed (module docstring): ``(solution or
    None, nodes evaluated, lattice size, the metric)``."""
    size, strides = lattice_shape(tops)
    k = criterion.release_size
    # (as _Search: the pair bounds in a thread while the metric and the cache are made)
    if len(problem.counts) >= PARALLEL_ROWS:
        pending: Deferred[NDArray[np.int64]] | None = Deferred(
            lattice_suppression_bounds, problem, tops, size, k, 0
        )
    else:
        pending = None
        least = lattice_suppression_bounds(problem, tops, size, k, 0)
    metric = prepare_metric(metric_name, problem)
    cache = TableCache(problem, cache_bytes, k)
    try:
        if pending is not None:
            least = pending.result()
        # The nodes that may pass: those not known to suppress rows.
        tops_ = np.asarray(tops, dtype=np.int64)
        strides_ = np.asarray(strides, dtype=np.int64)
        may, levels, totals, status, bounds, keys, slot = solve.layout(least, tops_, strides_)
        bounds[may] = static = metric.lower_bounds(levels)
        keys[may] = metric.suppression_keys(levels, static, least[may], k)
        # Static order: by key, then tie rank (total level, then index).
        order = may[np.lexsort((may, totals, keys[may]))]
        width = metric.lift_width
        lifted = (
            np.repeat(metric.base_lift(k)[:, None], size, axis=1)
            if width
            else np.zeros((0, size), dtype=np.float64)
        )
        d = len(tops)
        state = solve.State(
            tops=tops_,
            strides=strides_,
            status=status,
            at_least=least,
            keys=keys,
            bounds=bounds,
            lifted=lifted,
            no_lift=np.zeros((0, size), dtype=np.float64),
            slot=slot,
            facts=np.empty((size, 3), dtype=np.int64),
            values=np.empty(size, dtype=np.float64),
            counters=np.zeros(2, dtype=np.int64),
            node=np.zeros(d, dtype=np.int16),
            summary=np.zeros(len(cache.summary), dtype=np.int64),
            lift=np.zeros(max(width, 1), dtype=np.float64),
        )
        rows = problem.rows
        spec = solve.Metric(
            kind=_KINDS.get(metric.name, solve.EXACT),
            rows=rows,
            k=k,
            least_cost=min(max(k, 1), max(rows, 1)),
        )
        best = cache.solve_zero_limit(state, spec, order, bool(metric.exact_bound))
    finally:
        cache.release()
    evaluations = int(state.counters[0])
    if best < 0:
        return None, evaluations, size, metric
    row = int(state.slot[best])
    suppressed, released, smallest = (int(v) for v in state.facts[row])
    node_levels = tuple(int(v) for v in _levels(np.array([best]), tops, strides)[0])
    released_rows = rows - suppressed
    return (
        NodeResult(
            levels=node_levels,
            passes=True,  # (evaluated: nothing suppressed)
            suppressed_rows=suppressed,
            equivalence_classes=released,
            min_class_size=smallest,
            max_risk=1.0 / smallest if smallest else 0.0,
            average_risk=average_risk(released, released_rows),
            information_loss=float(state.values[row]),
        ),
        evaluations,
        size,
        metric,
    )
