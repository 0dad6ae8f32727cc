"""The optimal search compiled: without suppression for every metric, and with it for
every metric the compiled loop values (discernibility and AECS from the summary of a
node's classes; loss, entropy and precision from its classes).

With a monotone criterion (k-anonymity, maximum risk) on consistent hierarchies,
``best_first.py``'s best-first search needs no Python per node: whether a node passes
and what it is worth come from its classes, fetched into the table cache's arena
(``kernels.fetch``). :func:`find_optimum` prepares what that search prepares (the rows
every node certainly suppresses, the metric's static bounds and keys of the nodes that
may pass, its tables when it values suppressed classes, the table cache) and hands the
rest to :func:`~apps.engine.search.kernels.solve.search_slice`, which takes the same
nodes in the same order and chooses the same node as ``BestFirst.solve``
(``tests/engine/test_zero_limit.py``, ``test_compiled_suppression.py`` and
``test_compiled_suppressed.py`` check it node for node). Nothing is built per lattice
node but flat arrays: no :class:`Lattice`, no tie-order array (a node's tie rank is its
total level and index), no Python object per evaluated node.

``optimal_search`` takes this path when it can (:func:`applies`, no sensitive models; with
suppression, no Pareto front). The compiled search runs in slices of a few milliseconds
(:data:`SLICE_SECONDS`); between them the progress listener hears where it stands, the
cancel signal is checked and the deadline too, as ``BestFirst.solve`` does between
nodes: slices of any size take the same nodes in the same order as one call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from apps.engine.criteria import Criterion, average_risk
from apps.engine.lattice import lattice_shape
from apps.engine.loss import Metric, prepare_metric
from apps.engine.progress import (
    CancelSignal,
    ProgressListener,
    SearchCancelled,
    SearchProgress,
    is_cancelled,
)
from apps.engine.search.bounds import PARALLEL_TUPLES, RareRows, rare_profiles
from apps.engine.search.classes import CompiledTables, TableCache
from apps.engine.search.evaluate import NodeResult
from apps.engine.search.kernels import frontier, search_state, solve
from apps.engine.search.kernels.valuation import ENTROPY, LOSS, PRECISION, Valuation
from apps.engine.search.problem import SearchProblem
from apps.engine.workers import Deferred

#: Metric kinds of the compiled search valued from the summary of a node's classes
#: (``kernels/search_state.py``), under any suppression limit.
_SUMMARY_KINDS = {"discernibility": search_state.DISCERNIBILITY, "aecs": search_state.AECS}
#: Metric kinds valued from a node's suppressed classes (``kernels/valuation.py``), with
#: suppression; without it their value is their static bound (``search_state.EXACT``).
_CLASS_KINDS = {"entropy": ENTROPY, "loss": LOSS, "precision": PRECISION}
#: The time a slice of the search aims at (seconds): long enough that what is done
#: between slices (a report, the cancel signal, the clock) costs nothing measurable,
#: short enough that a report, a cancel or a deadline is heard at once.
SLICE_SECONDS = 0.005
#: Evaluations of the first slice; each later one is sized from the pace of the last,
#: growing at most fourfold a slice. (Measured on adult, 0 %: a node evaluated in about
#: 35 us, a slice boundary with its report about 20 us.)
FIRST_SLICE = 8
#: The clock of deadlines and slices (the tests replace it).
_now = time.perf_counter
#: The lifted numbers of a metric without them (read-only, as ``Metric.base_lift``'s:
#: one compiled :func:`search_state.start` for both).
_NO_LIFT = np.zeros(0, dtype=np.float64)
_NO_LIFT.flags.writeable = False


class CompiledFound(NamedTuple):
    """What :func:`find_optimum` found: the solution (or None), the nodes evaluated, the
    lattice size, the metric, and whether the search finished (False: the deadline
    passed first and the solution is the best found so far)."""

    solution: NodeResult | None
    evaluated: int
    size: int
    metric: Metric
    optimal: bool


def applies(problem: SearchProblem, criterion: Criterion, allowed: int, metric: str) -> bool:
    """Whether :func:`find_optimum` finds what ``BestFirst.solve`` would: nothing may be
    suppressed or the metric is one the compiled loop values with suppression, the
    criterion is monotone (then, without sensitive models, so is its suppression:
    ``BestFirst.monotone``), the hierarchies consistent, and there are quasi-identifiers
    and rows."""
    return (
        (allowed == 0 or metric in _SUMMARY_KINDS or metric in _CLASS_KINDS)
        and criterion.monotone
        and problem.consistent
        and problem.dimensions > 0
        and problem.rows > 0
    )


def values_suppressed_classes(metric: str, allowed: int) -> bool:
    """Whether the compiled search values nodes from their suppressed classes (loss,
    entropy and precision with rows to suppress) rather than from their summary (the
    others, and every metric without suppression): ``optimal_search`` lets the tests
    turn the two off apart."""
    return allowed > 0 and metric in _CLASS_KINDS


def _node_levels(idx: int, tops: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """The levels of node ``idx``, from its number (mixed radix, ``lattice.py``)."""
    return tuple(int(idx // s % (t + 1)) for t, s in zip(tops, strides, strict=True))


#: The metric's tables a :class:`Valuation` holds (``Metric.search_tables``' names).
_TABLES = Valuation._fields[2:]
#: The valuation of the metrics valued from the class summary (none of it is read): empty
#: arrays of each field's type.
_NO_VALUATION = Valuation(
    least=np.zeros(0, dtype=np.int64),
    levels=np.zeros(0, dtype=np.int16),
    by_level=np.zeros((0, 0), dtype=np.float64),
    cum=np.zeros(0, dtype=np.float64),
    cum_flogf=np.zeros(0, dtype=np.float64),
    start=np.zeros((0, 0), dtype=np.int64),
    length=np.zeros((0, 0), dtype=np.int64),
    values=np.zeros((0, 0), dtype=np.int64),
    weighted=np.zeros((0, 0), dtype=np.int64),
    penalty=np.zeros((0, 0), dtype=np.int64),
    domain=np.zeros(0, dtype=np.int64),
    leaves=np.zeros(0, dtype=np.int64),
    offsets=np.zeros((0, 0), dtype=np.int64),
    heights=np.zeros(0, dtype=np.int64),
)
_NO_VALUATION_FIELDS = tuple(_NO_VALUATION)


def _valuation(
    tables: dict[str, NDArray[np.float64] | NDArray[np.int64]],
    least: NDArray[np.int64],
    d: int,
) -> Valuation:
    """The metric's tables (``Metric.search_tables``) as a ``Valuation``: the ones it
    has not, empty arrays of the right type (never read for its kind). Each is a
    C-ordered writeable array of its field's type (copied if need be), as in
    :data:`_NO_VALUATION`: every search of a code width has one compiled loop."""

    def get(name: str, empty: NDArray[np.float64] | NDArray[np.int64]) -> Any:
        found = tables.get(name)
        return np.require(found if found is not None else empty, empty.dtype, ("C", "W"))

    return _NO_VALUATION._replace(
        least=least.copy(),
        levels=np.zeros(d, dtype=np.int16),
        **{name: get(name, getattr(_NO_VALUATION, name)) for name in _TABLES},
    )


def _keys(
    metric: Metric,
    levels: NDArray[np.int16],
    static: NDArray[np.float64],
    least: NDArray[np.int64],
    k: int,
    allowed: int,
) -> NDArray[np.float64]:
    """``Metric.suppression_keys`` of the nodes that may pass (``levels``, their static
    bounds and the rows each certainly suppresses), as ``BestFirst`` computes them.

    Without suppression those nodes suppress nothing, and a metric with lifted numbers
    (discernibility, AECS) bounds a node's suppression by the lifted bound of the bottom
    node's numbers (``Metric.suppression_bounds``; ``BestFirst._current_bound`` relies on
    it too): the same number for every node, computed once here, with the same float
    operations as row by row (measured on adult_subset without suppression,
    discernibility, in one process alternating blocks of runs: the search took 33-38 us
    less, of 0.5-1 ms)."""
    if allowed > 0 or not metric.lift_width:
        return metric.suppression_keys(levels, static, least, k)
    floor = metric.lifted_bounds(metric.base_lift(k)[None, :], _NOTHING, k)
    keys: NDArray[np.float64] = np.maximum(static, floor[0])
    return keys


#: One node suppressing no row (:func:`_keys`).
_NOTHING = np.zeros(1, dtype=np.int64)
_NOTHING.flags.writeable = False


def solve_slice(
    state: search_state.State,
    metric: search_state.Metric,
    valuation: Valuation | None,
    queue: frontier.Queue,
    shortcut: bool,
    budget: int,
    stop: bool,
    tables: CompiledTables,
) -> bool:
    """One slice of the compiled search (``kernels/solve.py``) on a table cache's
    ``tables``: whether the search finished. ``valuation``: the metric's tables when it
    values suppressed classes, else None. (The bundles go as plain tuples:
    :func:`~apps.engine.search.kernels.solve.search_slice`.)"""
    return bool(
        solve.search_slice(
            tuple(state),
            tuple(metric),
            _NO_VALUATION_FIELDS if valuation is None else tuple(valuation),
            tuple(queue),
            shortcut,
            budget,
            stop,
            tuple(tables.arena),
            tables.base,
            tables.base_summary,
            tuple(tables.maps),
        )  # fmt: skip
    )


def find_optimum(
    problem: SearchProblem,
    criterion: Criterion,
    metric_name: str,
    tops: Sequence[int],
    cache_bytes: int | None = None,
    *,
    allowed: int = 0,
    progress: ProgressListener | None = None,
    cancel: CancelSignal | None = None,
    deadline: float | None = None,
) -> CompiledFound:
    """The optimum with at most ``allowed`` suppressed rows (module docstring,
    :func:`applies`). ``progress`` hears after each slice and at the end, ``cancel`` is
    checked before each slice (raises :class:`SearchCancelled`); past ``deadline``
    (``time.perf_counter``) the best node so far is returned, not optimal, as
    ``BestFirst.solve`` does."""
    started = _now()
    size, strides = lattice_shape(tops)
    k = criterion.release_size
    # (as BestFirst: the pairs' rare rows in a thread while the metric and the cache are
    # made)
    if len(problem.counts) >= PARALLEL_TUPLES:
        pending: Deferred[RareRows] | None = Deferred(rare_profiles, problem, k, allowed)
    else:
        pending = None
        rare = rare_profiles(problem, k, allowed)
    metric = prepare_metric(metric_name, problem)
    by_classes = values_suppressed_classes(metric.name, allowed)
    tables = metric.search_tables() if by_classes else None
    cache = TableCache(problem, cache_bytes, k)
    try:
        if pending is not None:
            rare = pending.result()
        # The rows every node certainly suppresses (lattice_suppression_bounds), the
        # nodes that may pass (those not known to suppress more rows than allowed) and
        # the lifted numbers every node starts from, in one call.
        tops_ = np.asarray(tops, dtype=np.int64)
        strides_ = np.asarray(strides, dtype=np.int64)
        width = metric.lift_width
        least, may, levels, totals, status, bounds, keys, slot, lifted = search_state.start(
            tops_, strides_, rare.first_qi, rare.second_qi, rare.base, rare.width, rare.rare,
            allowed, metric.base_lift(k) if width else _NO_LIFT,
        )  # fmt: skip
        bounds[may] = static = metric.lower_bounds(levels)
        keys[may] = _keys(metric, levels, static, least[may], k, allowed)
        d = len(tops)
        valuation = _valuation(tables, least, d) if tables is not None else None
        state = search_state.State(
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
        spec = search_state.Metric(
            kind=(_CLASS_KINDS if by_classes else _SUMMARY_KINDS).get(
                metric.name, search_state.EXACT
            ),
            rows=rows,
            k=k,
            least_cost=min(max(k, 1), max(rows, 1)),
            allowed=allowed,
        )
        # Static order: by key, then tie rank (total level, then index).
        queue = frontier.queue(
            may[np.lexsort((may, totals, keys[may]))], state.keys, state.tops, state.strides
        )
        shortcut = bool(metric.exact_bound) and allowed == 0
        compiled = cache.compiled_tables
        # (with nothing to hear between slices, one slice)
        heard = progress is not None or cancel is not None or deadline is not None
        budget = FIRST_SLICE if heard else 1 << 62
        while True:
            if cancel is not None and is_cancelled(cancel):
                raise SearchCancelled("the search was cancelled")
            now = _now()
            # (past the deadline a search that has begun stops here, where BestFirst.solve
            # would: a node taken from the queue; one not begun first evaluates the top)
            expired = deadline is not None and now > deadline
            if expired and queue.ints[frontier.Q_PHASE] != frontier.STARTING:
                break
            before = int(state.counters[0])
            if solve_slice(
                state, spec, valuation, queue, shortcut, 0 if expired else budget, False, compiled
            ):
                break
            if expired:
                break
            budget = _next_slice(budget, int(state.counters[0]) - before, _now() - now)
            if progress is not None:
                progress(_progress(state, queue, size, tops, strides, _now() - started))
        optimal = bool(queue.ints[frontier.Q_PHASE] == frontier.FINISHED)
        if not optimal:  # (the best so far, evaluated if it was not)
            solve_slice(state, spec, valuation, queue, shortcut, 0, True, compiled)
        if progress is not None:
            progress(_progress(state, queue, size, tops, strides, _now() - started))
    finally:
        cache.release()
    evaluations = int(state.counters[0])
    best = int(queue.ints[frontier.Q_BEST])
    if best < 0:
        return CompiledFound(None, evaluations, size, metric, optimal)
    row = int(state.slot[best])
    suppressed, released, smallest = (int(v) for v in state.facts[row])
    return CompiledFound(
        NodeResult(
            levels=_node_levels(best, tops, strides),
            passes=True,  # (evaluated: at most ``allowed`` suppressed)
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


def _next_slice(budget: int, evaluated: int, seconds: float) -> int:
    """The evaluations of the next slice: as many as take :data:`SLICE_SECONDS` at the
    last slice's pace, at least one, at most four times the last budget."""
    if evaluated <= 0 or seconds <= 0:
        return budget * 4
    return max(1, min(int(SLICE_SECONDS * evaluated / seconds), budget * 4))


def _progress(
    state: search_state.State,
    queue: frontier.Queue,
    size: int,
    tops: Sequence[int],
    strides: Sequence[int],
    seconds: float,
) -> SearchProgress:
    """Where the compiled search stands (as ``BestFirst._report``: the best node so far)."""
    best = int(queue.ints[frontier.Q_BEST])
    found = best >= 0
    return SearchProgress(
        nodes_evaluated=int(state.counters[0]),
        nodes_total=size,
        best_levels=_node_levels(best, tops, strides) if found else None,
        best_loss=float(queue.floats[frontier.QF_BEST_VALUE]) if found else None,
        seconds=seconds,
    )
