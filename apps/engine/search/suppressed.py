"""The optimal search with suppression compiled for loss, entropy and precision.

``zero_limit.py`` runs ``best_first.py``'s search compiled when nothing may be suppressed
or the metric is valued from the summary of a node's classes (discernibility, AECS).
Loss, entropy and precision value a node that suppresses rows from its classes (the
codes of the suppressed ones: ``EntropyMetric._value``, ``LossMetric._value``; precision
from the suppressed rows), and bound a node known to suppress more rows than its key
assumed by the metric's suppression bound (``BestFirst._current_bound``). The compiled
search does both in ``kernels/solve.py`` (:func:`~apps.engine.search.kernels.solve.
solve_suppressed`, over the metric's tables, a ``Valuation``) with the same kernels and
formulas as the Python search, so it takes the same nodes in the same order and chooses
the same node with the same value (``tests/engine/test_compiled_suppressed.py`` checks it
node for node).

The same conditions as the compiled discernibility search (:func:`applies`): a monotone
criterion, consistent hierarchies, no sensitive models, no Pareto front (the caller's).
The search runs in slices between which progress is reported and the cancel signal and
the deadline are checked, as ``zero_limit_search`` does (its helpers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import Criterion, average_risk
from apps.engine.lattice import lattice_shape
from apps.engine.loss import prepare_metric
from apps.engine.progress import (
    CancelSignal,
    ProgressListener,
    SearchCancelled,
    is_cancelled,
)
from apps.engine.search import zero_limit
from apps.engine.search.bounds import PARALLEL_TUPLES, lattice_suppression_bounds
from apps.engine.search.classes import TableCache
from apps.engine.search.evaluate import NodeResult
from apps.engine.search.kernels import frontier, search_state, solve
from apps.engine.search.problem import SearchProblem
from apps.engine.workers import Deferred

#: Metric kinds of this search (``kernels/solve.py``).
_KINDS = {"entropy": solve.ENTROPY, "loss": solve.LOSS, "precision": solve.PRECISION}


def applies(problem: SearchProblem, criterion: Criterion, allowed: int, metric: str) -> bool:
    """Whether :func:`suppressed_search` finds what ``BestFirst.solve`` would: rows may be
    suppressed, the metric is loss, entropy or precision, the criterion monotone, the
    hierarchies consistent, and there are quasi-identifiers and rows."""
    return (
        allowed > 0
        and metric in _KINDS
        and criterion.monotone
        and problem.consistent
        and problem.dimensions > 0
        and problem.rows > 0
    )


def _valuation(
    tables: dict[str, NDArray[np.float64] | NDArray[np.int64]],
    least: NDArray[np.int64],
    d: int,
) -> solve.Valuation:
    """The metric's tables (``Metric.search_tables``) as a ``Valuation``: the ones it
    has not, empty arrays of the right type (never read for its kind)."""
    real2 = np.zeros((0, 0), dtype=np.float64)
    real1 = np.zeros(0, dtype=np.float64)
    int2 = np.zeros((0, 0), dtype=np.int64)
    int1 = np.zeros(0, dtype=np.int64)

    def get(name: str, empty: NDArray[np.float64] | NDArray[np.int64]) -> Any:
        found = tables.get(name)
        return np.ascontiguousarray(found if found is not None else empty, dtype=empty.dtype)

    return solve.Valuation(
        least=least.copy(),
        levels=np.zeros(d, dtype=np.int16),
        by_level=get("by_level", real2),
        cum=get("cum", real1),
        cum_flogf=get("cum_flogf", real1),
        start=get("start", int2),
        length=get("length", int2),
        values=get("values", int2),
        weighted=get("weighted", int2),
        penalty=get("penalty", int2),
        domain=get("domain", int1),
        leaves=get("leaves", int1),
        offsets=get("offsets", int2),
        heights=get("heights", int1),
    )


def suppressed_search(
    problem: SearchProblem,
    criterion: Criterion,
    metric_name: str,
    tops: Sequence[int],
    cache_bytes: int | None = None,
    *,
    allowed: int,
    progress: ProgressListener | None = None,
    cancel: CancelSignal | None = None,
    deadline: float | None = None,
) -> zero_limit.ZeroLimitFound:
    """The optimum with at most ``allowed`` suppressed rows (module docstring, :func:`applies`),
    as ``zero_limit.zero_limit_search`` finds it for the other metrics: ``progress``
    hears after each slice and at the end, ``cancel`` is checked before each slice,
    past ``deadline`` the best node so far is returned, not optimal."""
    started = zero_limit._now()
    size, strides = lattice_shape(tops)
    k = criterion.release_size
    if len(problem.counts) >= PARALLEL_TUPLES:
        pending: Deferred[NDArray[np.int64]] | None = Deferred(
            lattice_suppression_bounds, problem, tops, size, k, allowed
        )
    else:
        pending = None
        least = lattice_suppression_bounds(problem, tops, size, k, allowed)
    metric = prepare_metric(metric_name, problem)
    tables = metric.search_tables()
    cache = TableCache(problem, cache_bytes, k)
    try:
        if pending is not None:
            least = pending.result()
        tops_ = np.asarray(tops, dtype=np.int64)
        strides_ = np.asarray(strides, dtype=np.int64)
        may, levels, totals, status, bounds, keys, slot = search_state.layout(
            least, tops_, strides_, allowed
        )
        bounds[may] = static = metric.lower_bounds(levels)
        keys[may] = metric.suppression_keys(levels, static, least[may], k)
        d = len(tops)
        valuation = _valuation(tables, least, d)
        state = search_state.State(
            tops=tops_,
            strides=strides_,
            status=status,
            at_least=least,
            keys=keys,
            bounds=bounds,
            lifted=np.zeros((0, size), dtype=np.float64),
            no_lift=np.zeros((0, size), dtype=np.float64),
            slot=slot,
            facts=np.empty((size, 3), dtype=np.int64),
            values=np.empty(size, dtype=np.float64),
            counters=np.zeros(2, dtype=np.int64),
            node=np.zeros(d, dtype=np.int16),
            summary=np.zeros(len(cache.summary), dtype=np.int64),
            lift=np.zeros(1, dtype=np.float64),
        )
        rows = problem.rows
        spec = search_state.Metric(
            kind=_KINDS[metric.name], rows=rows, k=k, least_cost=0, allowed=allowed
        )
        queue = frontier.queue(
            may[np.lexsort((may, totals, keys[may]))], state.keys, state.tops, state.strides
        )
        # The arena and what fetch reads besides it (``TableCache``'s own arguments).
        arena, base = cache._arena, cache._base
        assert arena is not None
        base_summary, maps = cache.base.summary, problem.maps

        def run(budget: int, stop: bool = False) -> bool:
            return bool(
                solve.solve_suppressed(
                    state, spec, valuation, queue, budget, stop, arena, base, base_summary, maps
                )
            )

        heard = progress is not None or cancel is not None or deadline is not None
        budget = zero_limit.FIRST_SLICE if heard else 1 << 62
        while True:
            if cancel is not None and is_cancelled(cancel):
                raise SearchCancelled("the search was cancelled")
            now = zero_limit._now()
            expired = deadline is not None and now > deadline
            if expired and queue.ints[frontier.Q_PHASE] != frontier.STARTING:
                break
            before = int(state.counters[0])
            if run(0 if expired else budget):
                break
            if expired:
                break
            budget = zero_limit._next_slice(
                budget, int(state.counters[0]) - before, zero_limit._now() - now
            )
            if progress is not None:
                progress(
                    zero_limit._progress(
                        state, queue, size, tops, strides, zero_limit._now() - started
                    )
                )
        optimal = bool(queue.ints[frontier.Q_PHASE] == frontier.FINISHED)
        if not optimal:  # (the best so far, evaluated if it was not)
            run(0, stop=True)
        if progress is not None:
            progress(
                zero_limit._progress(state, queue, size, tops, strides, zero_limit._now() - started)
            )
    finally:
        cache.release()
    evaluations = int(state.counters[0])
    best = int(queue.ints[frontier.Q_BEST])
    if best < 0:
        return zero_limit.ZeroLimitFound(None, evaluations, size, metric, optimal)
    row = int(state.slot[best])
    suppressed, released, smallest = (int(v) for v in state.facts[row])
    node_levels = tuple(int(v) for v in zero_limit._levels(np.array([best]), tops, strides)[0])
    return zero_limit.ZeroLimitFound(
        NodeResult(
            levels=node_levels,
            passes=True,
            suppressed_rows=suppressed,
            equivalence_classes=released,
            min_class_size=smallest,
            max_risk=1.0 / smallest if smallest else 0.0,
            average_risk=average_risk(released, rows - suppressed),
            information_loss=float(state.values[row]),
        ),
        evaluations,
        size,
        metric,
        optimal,
    )
