"""The best-first search compiled (``search/compiled_search.py``), in slices.

When the criterion is monotone (k-anonymity, maximum risk) and the hierarchies are
consistent, :func:`search_slice` runs the whole best-first search of ``best_first.py``
(``BestFirst.solve`` with its ``_by_bound``, ``_probe``, ``_climb`` and ``_evaluate``)
step for step over integer arrays: the same nodes are taken in the same order, the same
are evaluated, and the same node is chosen; the Python search does it with a few Python
objects per node, this with none.

What the Python search keeps per node is here an array over the lattice (numbered in
mixed radix, ``lattice.py``; the arrays and a node's bounds are ``search_state.py``): the
status (unknown, within the limit, too many suppressed), the rows it certainly
suppresses, its key and static bound, the numbers lifted from its evaluated
specializations (discernibility, AECS) and, for evaluated nodes, a row of facts.
A node's tie rank (lowest total level, then index) is the pair (total level, index),
computed from the index. The queue (``frontier.py``) merges the static order (sorted by
the caller) with a binary heap of re-queued nodes, as ``_by_bound`` does with ``heapq``;
the loop's place is kept in a ``Queue`` between calls, each of which evaluates about a
budget of nodes. A node's facts, value and bounds are ``valuation.py``; evaluating it,
probing and climbing ``probe.py``.

The limit (``Metric.allowed``) is where a search with suppression differs from one
without, as in ``BestFirst.solve``: a node passes with at most ``allowed`` suppressed
rows (those suppressing more are not valued), tags its down-set failing above it, and
climbing from a failing chain (``_climb``) and valuing a passing node unevaluated (the
shortcut) happen only when nothing may be suppressed. Without suppression a node not
known to fail never has rows known suppressed, so the bounds of metrics without lifted
numbers need not read the known suppression (``search_state._current_bound``); with
it loss, entropy and precision value a node that suppresses rows from its classes and
bound one known to suppress more rows than its key assumed by their suppression bound
(``valuation.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.arena import Arena
from apps.engine.search.kernels.frontier import (
    FINISHED,
    Q_AT,
    Q_BEST,
    Q_BEST_TOTAL,
    Q_HEAP,
    Q_NEXT,
    Q_NEXT_TOTAL,
    Q_PHASE,
    QF_BEST_VALUE,
    QF_NEXT_KEY,
    SEARCHING,
    STARTING,
    Queue,
    before,
    pop,
    push,
)
from apps.engine.search.kernels.grouping import LevelMaps
from apps.engine.search.kernels.probe import evaluate, probe
from apps.engine.search.kernels.search_state import (
    TOO_MANY,
    UNKNOWN,
    WITHIN,
    Metric,
    State,
    _exceeds,
)
from apps.engine.search.kernels.valuation import Valuation, bound, cheap_bound, facts, order_key


@njit(cache=True, nogil=True)
def search_slice(
    state: tuple[Any, ...],
    metric: tuple[int, ...],
    valuation: tuple[Any, ...],
    queue: tuple[Any, ...],
    shortcut: bool,
    budget: int,
    stop: bool,
    arena: tuple[Any, ...],
    base: int,
    base_summary: NDArray[np.int64],
    maps: tuple[Any, ...],
) -> bool:
    """A slice of the search (:func:`_search`) on the fields of a :class:`State`, a
    :class:`Metric`, a :class:`Valuation`, a :class:`Queue`, an :class:`Arena` and a
    :class:`LevelMaps` as plain tuples (``tuple(state)``), made those again here:
    numba's dispatcher types a plain tuple of arrays in its compiled code and a
    NamedTuple in Python (measured, a call on a finished search: 7.8 us with the
    NamedTuples, 4.2 us with plain tuples), and a search is often a single slice."""
    return _search(
        State(*state), Metric(*metric), Valuation(*valuation), Queue(*queue), shortcut,
        budget, stop, Arena(*arena), base, base_summary, LevelMaps(*maps),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _search(
    s: State,
    m: Metric,
    v: Valuation,
    q: Queue,
    shortcut: bool,
    budget: int,
    stop: bool,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> bool:
    """The optimum with at most ``m.allowed`` suppressed rows, in slices: returns whether
    the search finished.
    The node chosen (or -1) is then ``q.ints[Q_BEST]``, its value ``q.floats[QF_BEST_VALUE]``,
    its facts (evaluated if it was not) in its ``s.slot`` row; the evaluations are in
    ``s.counters[0]``. ``v``: the metric's tables (``valuation.py``) for loss, entropy
    and precision with rows to suppress, empty arrays for the others.

    A call stops where ``BestFirst.solve`` checks its deadline (a node taken from the queue,
    the search not over) once it has evaluated ``budget`` nodes, and the next call goes on
    from there: calls of any budgets take the same nodes in the same order as one call.
    With ``budget`` 0 a call stops at the first such place. ``stop``: give up (the
    deadline passed): the best node so far settled as above, the search not finished.

    ``shortcut`` (nothing may be suppressed): the metric's value without suppression is
    its static bound (``s.bounds``), so a node known to pass is valued unevaluated."""
    ints, floats = q.ints, q.floats
    if ints[Q_PHASE] == FINISHED:
        return True
    if stop:
        _settle(s, m, v, ints[Q_BEST], arena, base, base_summary, maps)
        return False
    start = s.counters[0]
    if ints[Q_PHASE] == STARTING:
        ints[Q_PHASE] = SEARCHING
        if evaluate(s, m, v, len(s.status) - 1, arena, base, base_summary, maps) > m.allowed:
            ints[Q_PHASE] = FINISHED
            return True
    status = s.status
    order, order_keys, order_totals = q.order, q.order_keys, q.order_totals
    heap_keys, heap_totals, heap_nodes = q.heap_keys, q.heap_totals, q.heap_nodes
    best, best_value, best_total = ints[Q_BEST], floats[QF_BEST_VALUE], ints[Q_BEST_TOTAL]
    at, heap, end = ints[Q_AT], ints[Q_HEAP], len(order)
    keys, lifted, at_least, least = s.keys, s.lifted, s.at_least, v.least
    finished = True
    while True:
        if ints[Q_NEXT] >= 0:  # (taken before the last call stopped)
            key, total, idx = floats[QF_NEXT_KEY], ints[Q_NEXT_TOTAL], ints[Q_NEXT]
            ints[Q_NEXT] = -1
        else:
            if at == end and not heap:
                break
            if heap and (
                at == end
                or before(
                    heap_keys[0], heap_totals[0], heap_nodes[0], order_keys[at],
                    order_totals[at], order[at],
                )
            ):  # fmt: skip
                key, total, idx = heap_keys[0], heap_totals[0], heap_nodes[0]
                heap = pop(heap_keys, heap_totals, heap_nodes, heap)
            else:
                key, total, idx = order_keys[at], order_totals[at], order[at]
                at += 1
            if status[idx] == TOO_MANY:
                continue
            current = cheap_bound(m, keys, lifted, at_least, least, idx, True)
            if current != current:
                current = order_key(s, m, v, idx)
            if current > key:
                heap = push(heap_keys, heap_totals, heap_nodes, heap, current, total, idx)
                continue
            # (the body of solve's loop over _by_bound)
            if best >= 0 and _exceeds(key, best_value):
                break
            if s.counters[0] - start >= budget:  # (where solve checks its deadline)
                ints[Q_NEXT], ints[Q_NEXT_TOTAL], floats[QF_NEXT_KEY] = idx, total, key
                finished = False
                break
        if best >= 0:
            current = cheap_bound(m, keys, lifted, at_least, least, idx, False)
            if _exceeds(bound(s, m, v, idx) if current != current else current, best_value):
                continue
        if status[idx] == UNKNOWN:
            probe(s, m, v, idx, best_value, arena, base, base_summary, maps)
        if status[idx] == TOO_MANY:
            continue
        if best >= 0:
            current = cheap_bound(m, keys, lifted, at_least, least, idx, False)
            if _exceeds(bound(s, m, v, idx) if current != current else current, best_value):
                continue
        if shortcut and status[idx] == WITHIN and s.slot[idx] < 0:
            value = s.bounds[idx]
        else:
            if evaluate(s, m, v, idx, arena, base, base_summary, maps) > m.allowed:
                continue
            value = s.values[s.slot[idx]]
        if value < best_value or (
            value == best_value and (total < best_total or (total == best_total and idx < best))
        ):
            best, best_value, best_total = idx, value, total
    ints[Q_AT], ints[Q_HEAP] = at, heap
    ints[Q_BEST], floats[QF_BEST_VALUE], ints[Q_BEST_TOTAL] = best, best_value, best_total
    if finished:
        ints[Q_PHASE] = FINISHED
        _settle(s, m, v, best, arena, base, base_summary, maps)
    return finished


@njit(cache=True, nogil=True)
def _settle(
    s: State,
    m: Metric,
    v: Valuation,
    best: int,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> None:
    """The facts of the chosen node, evaluated if it was valued unevaluated."""
    if best >= 0 and s.slot[best] < 0:
        facts(s, m, v, best, arena, base, base_summary, maps)
