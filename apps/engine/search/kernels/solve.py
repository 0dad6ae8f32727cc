"""The best-first search compiled (``search/zero_limit.py``, ``search/suppressed.py``), in
slices.

When the criterion is monotone (k-anonymity, maximum risk), the hierarchies are
consistent and either nothing may be suppressed or the metric's value comes from the
summary of a node's classes (discernibility, AECS), :func:`solve_zero_limit` runs the
whole best-first search
of ``best_first.py`` (``BestFirst.solve`` with its ``_by_bound``, ``_probe``, ``_climb`` and
``_evaluate``) step for step over integer arrays: the same nodes are taken in the same
order, the same are evaluated, and the same node is chosen; the Python search does it
with a few Python objects per node, this with none.

What the Python search keeps per node is here an array over the lattice (numbered in
mixed radix, ``lattice.py``; the arrays and a node's bounds are ``search_state.py``): the
status (unknown, within the limit, too many suppressed), the rows it certainly
suppresses, its key and static bound, the numbers lifted from its evaluated
specializations (discernibility, AECS) and, for evaluated nodes, a row of facts.
A node's tie rank (lowest total level, then index) is the pair (total level, index),
computed from the index. The queue (``frontier.py``) merges the static order (sorted by
the caller) with a binary heap of re-queued nodes, as ``_by_bound`` does with ``heapq``;
the loop's place is kept in a ``Queue`` between calls, each of which evaluates about a
budget of nodes.

The limit (``Metric.allowed``) is where this differs from the search without
suppression, as in ``BestFirst.solve``: a node passes with at most ``allowed`` suppressed
rows (those suppressing more are not valued), tags its down-set failing above it, and
climbing from a failing chain (``_climb``) and valuing a passing node unevaluated (the
shortcut) happen only when nothing may be suppressed. Without suppression a node not
known to fail never has rows known suppressed, so the bounds of metrics without lifted
numbers need not read the known suppression (``search_state._current_bound``).

Loss, entropy and precision with suppression (:func:`solve_suppressed`, driven by
``search/suppressed.py``) value a node that suppresses rows from its classes, fetched
into the arena (:func:`_value`: the kernels ``EntropyMetric._value`` and
``LossMetric._value`` call, precision's formula), and bound a node known to suppress more
rows than its key assumed by the metric's suppression bound (:func:`_bound`, as
``BestFirst._current_bound``), from the metric's tables (a :class:`Valuation`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.loss.kernels import (
    add_suppression_entropy,
    entropy_suppression_bound,
    loss_suppression_bound,
    loss_value,
    precision_value,
    suppressed_leaves,
)
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
    total_level,
)
from apps.engine.search.kernels.grouping import (
    CLASSES,
    MIN_RELEASED,
    RELEASED,
    RELEASED_SQUARES,
    SUPPRESSED_ROWS,
    LevelMaps,
)
from apps.engine.search.kernels.lattice import raise_down, raise_up
from apps.engine.search.kernels.rollup import fetch
from apps.engine.search.kernels.search_state import (
    AECS,
    DISCERNIBILITY,
    EXACT,
    F_MIN_RELEASED,
    F_RELEASED,
    F_SUPPRESSED,
    TOO_MANY,
    UNKNOWN,
    WITHIN,
    Metric,
    State,
    _current_bound,
    _decode,
    _exceeds,
    _order_key,
)

#: Metric kinds valued from a node's classes when it suppresses rows (``Metric.kind``,
#: beyond ``search_state``'s): the search with suppression of :func:`solve_suppressed`.
ENTROPY, LOSS, PRECISION = 10, 11, 12


class Valuation(NamedTuple):
    """What :func:`solve_suppressed` needs to value a node from its classes and to bound
    it by the rows it is known to suppress (``BestFirst._current_bound``): the rows each
    node certainly suppresses as the search began (``BestFirst.least_suppressed``; the
    bound is raised only above them), a scratch row of levels, and the metric's tables,
    each ``[d x (H+1)]`` unless said: entropy's ``by_level``, its running sums
    (``cum``, ``cum_flogf``, 1-D, with ``start`` and ``length``) and values per level;
    loss's ``weighted`` and ``penalty``, the domain sizes (1-D), the leaves of every
    value (1-D, from ``offsets``); the hierarchies' heights (1-D, precision)."""

    least: NDArray[np.int64]
    levels: NDArray[np.int16]
    by_level: NDArray[np.float64]
    cum: NDArray[np.float64]
    cum_flogf: NDArray[np.float64]
    start: NDArray[np.int64]
    length: NDArray[np.int64]
    values: NDArray[np.int64]
    weighted: NDArray[np.int64]
    penalty: NDArray[np.int64]
    domain: NDArray[np.int64]
    leaves: NDArray[np.int64]
    offsets: NDArray[np.int64]
    heights: NDArray[np.int64]


@njit(cache=True, nogil=True)
def _no_valuation() -> Valuation:
    """An empty :class:`Valuation` (the metrics of ``search_state``: none read it)."""
    one = np.zeros(0, dtype=np.int64)
    two = np.zeros((0, 0), dtype=np.int64)
    real = np.zeros((0, 0), dtype=np.float64)
    flat = np.zeros(0, dtype=np.float64)
    return Valuation(
        one, np.zeros(0, dtype=np.int16), real, flat, flat, two, two, two, two, two, one, one,
        two, one,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _value(
    s: State,
    m: Metric,
    v: Valuation,
    columns: NDArray[Any],
    sizes: NDArray[np.int64],
    rows: int,
) -> float:
    """``Metric.value`` of node ``s.node`` (its classes: ``columns``, ``sizes``) when it
    suppresses rows (its classes under ``m.k``): the kernels of ``loss/kernels.py`` that
    ``EntropyMetric._value`` and ``LossMetric._value`` call, and precision's formula,
    on the same numbers, so the same floats; ``rows``: the rows it suppresses."""
    node = s.node
    d = len(node)
    if m.kind == PRECISION:
        return precision_value(node, v.heights, m.rows, rows)
    suppressed = sizes < m.k
    if m.kind == ENTROPY:
        total = 0.0
        values = np.empty(d, dtype=np.int64)
        for j in range(d):
            total += v.by_level[j, node[j]]
            values[j] = v.values[j, node[j]]
        return add_suppression_entropy(total, columns, sizes, suppressed, values)
    levels = node.astype(np.int64)
    sums = suppressed_leaves(columns, sizes, suppressed, levels, v.leaves, v.offsets)
    return loss_value(node, sums, v.weighted, m.rows, v.domain)


@njit(cache=True, nogil=True)
def _bound(s: State, m: Metric, v: Valuation, idx: int) -> float:
    """``BestFirst._current_bound``: for loss, entropy and precision, the key raised to the
    metric's suppression bound when the node is known to suppress more rows than the
    key assumed; for the others ``search_state._current_bound``."""
    if m.kind < ENTROPY:
        return _current_bound(s, m, idx)
    bound = s.keys[idx]
    least = s.at_least[idx]
    if least > v.least[idx]:
        _decode(idx, s.tops, s.strides, v.levels)
        if m.kind == ENTROPY:
            raised = entropy_suppression_bound(
                v.levels, least, v.by_level, v.cum, v.cum_flogf, v.start, v.length
            )
        elif m.kind == LOSS:
            raised = loss_suppression_bound(
                v.levels, least, v.weighted, v.penalty, m.rows, v.domain
            )
        else:
            raised = precision_value(v.levels, v.heights, m.rows, least)
        if raised > bound:
            return float(raised)
    return float(bound)


@njit(cache=True, nogil=True)
def _key(s: State, m: Metric, v: Valuation, idx: int) -> float:
    """``BestFirst._order_key``: for loss, entropy and precision (no lifted numbers) the
    bound, for the others ``search_state._order_key``."""
    if m.kind < ENTROPY:
        return _order_key(s, m, idx)
    return _bound(s, m, v, idx)


@njit(cache=True, nogil=True)
def _facts(
    s: State,
    m: Metric,
    v: Valuation,
    idx: int,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> int:
    """``Evaluator.facts_of``: the node's classes fetched (``kernels.fetch``), its facts
    stored in a new row (its value: infinite when it suppresses more rows than allowed,
    as ``Evaluator.value_limit``), its lifted numbers left in ``s.lift``; returns the
    row."""
    s.counters[0] += 1
    _decode(idx, s.tops, s.strides, s.node)
    summary = s.summary
    where, count = fetch(s.node, arena, base, base_summary, True, maps, m.k, summary)
    suppressed = summary[SUPPRESSED_ROWS]
    released = summary[RELEASED]
    squares = summary[RELEASED_SQUARES]
    row = s.counters[1]
    s.counters[1] += 1
    s.slot[idx] = row
    s.facts[row, F_SUPPRESSED] = suppressed
    s.facts[row, F_RELEASED] = released
    s.facts[row, F_MIN_RELEASED] = summary[MIN_RELEASED]
    if suppressed > m.allowed:
        value = math.inf
    elif m.kind >= ENTROPY and suppressed > 0:
        if where >= 0:
            d = len(s.node)
            value = _value(
                s, m, v,
                arena.codes[d * where : d * (where + count)].reshape((d, count)),
                arena.sizes[where : where + count], suppressed,
            )  # fmt: skip
        else:
            value = _value(s, m, v, arena.stage[:, :count], arena.grouped[:count], suppressed)
    elif m.kind == EXACT or m.kind >= ENTROPY:
        value = s.bounds[idx]
        if value != value:
            raise ValueError("a node suppressing nothing has no static bound")
    elif m.kind == DISCERNIBILITY:
        value = float(squares + suppressed * m.rows)
    elif m.rows == 0:
        value = 0.0
    elif released == 0:
        value = math.inf
    else:
        value = m.rows / released
    s.values[row] = value
    if m.kind == DISCERNIBILITY:
        s.lift[0] = float(squares + m.least_cost * suppressed)
    elif m.kind == AECS:
        s.lift[0] = -float(summary[CLASSES])
        s.lift[1] = -float(max(m.k, 1) * released + suppressed)
    return int(row)


@njit(cache=True, nogil=True)
def _evaluate(
    s: State,
    m: Metric,
    v: Valuation,
    idx: int,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> int:
    """``BestFirst._evaluate``: the node's facts (memoized), then its up-set tagged within
    the limit and lifted, or its down-set tagged failing, and the rows it suppresses
    raised in its down-set; returns its suppressed rows."""
    row = s.slot[idx]
    known = row >= 0
    if not known:
        row = _facts(s, m, v, idx, arena, base, base_summary, maps)
    else:
        _decode(idx, s.tops, s.strides, s.node)
    suppressed = s.facts[row, F_SUPPRESSED]
    within = suppressed <= m.allowed
    lifts = s.lifted.shape[0] > 0
    if within or (not known and lifts):
        raise_up(
            s.node,
            s.tops,
            s.strides,
            s.status,
            UNKNOWN,
            WITHIN if within else -1,
            s.lifted if not known else s.no_lift,
            s.lift,
        )
    if not within or (not known and suppressed > 0):
        raise_down(s.node, s.strides, s.status, -1 if within else TOO_MANY, s.at_least, suppressed)
    return int(suppressed)


@njit(cache=True, nogil=True)
def _chain(s: State, start: int) -> NDArray[np.int64]:
    """``kernels.climb_chain`` on the node numbering: from ``start`` through unknown
    nodes, each step to the successor with the most rows known suppressed, then the
    least key, then the first QI."""
    tops, strides, status, at_least, keys = s.tops, s.strides, s.status, s.at_least, s.keys
    d = len(tops)
    chain = np.empty(int(tops.sum()) + 1, dtype=np.int64)
    chain[0] = start
    n = 1
    cur = start
    while True:
        best = -1
        for j in range(d):
            if (cur // strides[j]) % (tops[j] + 1) < tops[j]:
                nxt = cur + strides[j]
                if status[nxt] == UNKNOWN and (
                    best < 0
                    or at_least[nxt] > at_least[best]
                    or (at_least[nxt] == at_least[best] and keys[nxt] < keys[best])
                ):
                    best = nxt
        if best < 0:
            return chain[:n]
        chain[n] = best
        n += 1
        cur = best


@njit(cache=True, nogil=True)
def _climb(
    s: State,
    m: Metric,
    v: Valuation,
    failing: int,
    best_value: float,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> None:
    """``BestFirst._climb``: from a failing node through failing successors (each round
    tries the unknown successors not bounded above ``best_value``, by key then tie rank,
    listed before the round) to a maximal failing node."""
    tops, strides = s.tops, s.strides
    d = len(tops)
    candidates = np.empty(d, dtype=np.int64)
    totals = np.empty(d, dtype=np.int64)
    while True:
        count = 0
        for j in range(d):
            if (failing // strides[j]) % (tops[j] + 1) < tops[j]:
                nxt = failing + strides[j]
                if s.status[nxt] == UNKNOWN and not _exceeds(s.keys[nxt], best_value):
                    # insertion in (key, tie rank) order
                    tot = total_level(nxt, tops, strides)
                    at = count
                    while at > 0 and before(
                        s.keys[nxt], tot, nxt, s.keys[candidates[at - 1]], totals[at - 1],
                        candidates[at - 1],
                    ):  # fmt: skip
                        candidates[at] = candidates[at - 1]
                        totals[at] = totals[at - 1]
                        at -= 1
                    candidates[at] = nxt
                    totals[at] = tot
                    count += 1
        moved = False
        for c in range(count):
            succ = candidates[c]
            if _evaluate(s, m, v, succ, arena, base, base_summary, maps) > m.allowed:
                failing = succ
                moved = True
                break
        if not moved:
            return


@njit(cache=True, nogil=True)
def _probe(
    s: State,
    m: Metric,
    v: Valuation,
    idx: int,
    best_value: float,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> None:
    """``BestFirst._probe``: a binary search on the chain above ``idx``, then, when
    nothing may be suppressed, a climb from the highest failing node of the chain."""
    chain = _chain(s, idx)
    lo, hi = 0, len(chain) - 1
    while lo <= hi and s.status[idx] == UNKNOWN:
        mid = (lo + hi) // 2
        if _evaluate(s, m, v, chain[mid], arena, base, base_summary, maps) <= m.allowed:
            hi = mid - 1
        else:
            lo = mid + 1
    if lo > 0 and m.allowed == 0:
        _climb(s, m, v, chain[lo - 1], best_value, arena, base, base_summary, maps)


@njit(cache=True, nogil=True)
def solve_zero_limit(
    s: State,
    m: Metric,
    q: Queue,
    shortcut: bool,
    budget: int,
    stop: bool,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> bool:
    """The optimum with at most ``m.allowed`` suppressed rows, in slices (:func:`_solve`),
    for the metrics valued without the node's classes (``m.kind`` of ``search_state``):
    returns whether the search finished."""
    return _solve(s, m, _no_valuation(), q, shortcut, budget, stop, arena, base, base_summary, maps)


@njit(cache=True, nogil=True)
def solve_suppressed(
    s: State,
    m: Metric,
    v: Valuation,
    q: Queue,
    budget: int,
    stop: bool,
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    maps: LevelMaps,
) -> bool:
    """:func:`_solve` for loss, entropy and precision (``m.kind`` :data:`LOSS`,
    :data:`ENTROPY`, :data:`PRECISION`) with rows to suppress: nodes valued from their
    classes (``v``), bounded by the rows they are known to suppress; returns whether
    the search finished."""
    return _solve(s, m, v, q, False, budget, stop, arena, base, base_summary, maps)


@njit(cache=True, nogil=True)
def _solve(
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
    ``s.counters[0]``.

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
        if _evaluate(s, m, v, len(s.status) - 1, arena, base, base_summary, maps) > m.allowed:
            ints[Q_PHASE] = FINISHED
            return True
    status = s.status
    order, order_keys, order_totals = q.order, q.order_keys, q.order_totals
    heap_keys, heap_totals, heap_nodes = q.heap_keys, q.heap_totals, q.heap_nodes
    best, best_value, best_total = ints[Q_BEST], floats[QF_BEST_VALUE], ints[Q_BEST_TOTAL]
    at, heap, end = ints[Q_AT], ints[Q_HEAP], len(order)
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
            current = _key(s, m, v, idx)
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
        if best >= 0 and _exceeds(_bound(s, m, v, idx), best_value):
            continue
        if status[idx] == UNKNOWN:
            _probe(s, m, v, idx, best_value, arena, base, base_summary, maps)
        if status[idx] == TOO_MANY:
            continue
        if best >= 0 and _exceeds(_bound(s, m, v, idx), best_value):
            continue
        if shortcut and status[idx] == WITHIN and s.slot[idx] < 0:
            value = s.bounds[idx]
        else:
            if _evaluate(s, m, v, idx, arena, base, base_summary, maps) > m.allowed:
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
        _facts(s, m, v, best, arena, base, base_summary, maps)
