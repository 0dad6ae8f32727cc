"""A node's facts and value in the compiled search (``solve.py``), and its bounds.

:func:`facts` is ``Evaluator.facts_of``: the node's classes fetched into the arena
(``kernels.fetch``), the summary's facts stored in a row of ``State.facts``, its value
and its lifted numbers. What the node is worth comes from the summary (discernibility,
AECS; loss, entropy and precision when it suppresses nothing: its static bound) or,
for loss, entropy and precision when it suppresses rows, from its classes
(:func:`value`: the kernels ``EntropyMetric._value`` and ``LossMetric._value`` call,
precision's formula) and the metric's tables (a :class:`Valuation`). :func:`bound` and
:func:`order_key` are ``BestFirst._current_bound`` and ``BestFirst._order_key``: for
loss, entropy and precision the key raised to the metric's suppression bound when the
node is known to suppress more rows than the key assumed, for the others
``search_state``'s lifted bounds.
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
from apps.engine.search.kernels.grouping import (
    CLASSES,
    MIN_RELEASED,
    RELEASED,
    RELEASED_SQUARES,
    SUPPRESSED_ROWS,
    LevelMaps,
)
from apps.engine.search.kernels.rollup import fetch
from apps.engine.search.kernels.search_state import (
    AECS,
    DISCERNIBILITY,
    EXACT,
    F_MIN_RELEASED,
    F_RELEASED,
    F_SUPPRESSED,
    Metric,
    State,
    _current_bound,
    _decode,
    _order_key,
)

#: Metric kinds valued from a node's classes when it suppresses rows (``Metric.kind``,
#: beyond ``search_state``'s): loss, entropy and precision with rows to suppress.
ENTROPY, LOSS, PRECISION = 10, 11, 12


class Valuation(NamedTuple):
    """What the search needs to value a node from its classes and to bound it by the rows
    it is known to suppress (``BestFirst._current_bound``), for :data:`ENTROPY`,
    :data:`LOSS` and :data:`PRECISION` (the other kinds read none of it: empty arrays):
    the rows each node certainly suppresses as the search began
    (``BestFirst.least_suppressed``; the bound is raised only above them), a scratch row
    of levels, and the metric's tables, each ``[d x (H+1)]`` unless said: entropy's
    ``by_level``, its running sums (``cum``, ``cum_flogf``, 1-D, with ``start`` and
    ``length``) and values per level; loss's ``weighted`` and ``penalty``, the domain
    sizes (1-D), the leaves of every value (1-D, from ``offsets``); the hierarchies'
    heights (1-D, precision)."""

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
def value(
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
def bound(s: State, m: Metric, v: Valuation, idx: int) -> float:
    """``BestFirst._current_bound``: for loss, entropy and precision, the key raised to the
    metric's suppression bound when the node is known to suppress more rows than the
    key assumed; for the others ``search_state._current_bound``."""
    if m.kind < ENTROPY:
        return _current_bound(m, s.keys, s.lifted, s.at_least, idx)
    key = s.keys[idx]
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
        if raised > key:
            return float(raised)
    return float(key)


@njit(cache=True, nogil=True)
def order_key(s: State, m: Metric, v: Valuation, idx: int) -> float:
    """``BestFirst._order_key``: for loss, entropy and precision (no lifted numbers) the
    bound, for the others ``search_state._order_key``."""
    if m.kind < ENTROPY:
        return _order_key(m, s.keys, s.lifted, s.at_least, idx)
    return bound(s, m, v, idx)


@njit(cache=True, nogil=True, inline="always")
def cheap_bound(
    m: Metric,
    keys: NDArray[np.float64],
    lifted: NDArray[np.float64],
    at_least: NDArray[np.int64],
    least: NDArray[np.int64],
    idx: int,
    order: bool,
) -> float:
    """:func:`order_key` (``order``) or :func:`bound` of node ``idx`` from the arrays they
    read (``State.keys``, ``lifted``, ``at_least``, ``Valuation.least``), NaN when the
    node's key is to be raised by the metric's suppression bound (loss, entropy and
    precision, the node known to suppress more rows than its key assumed): then
    :func:`bound`. The search's loop bounds a node at every step and the raise is rare;
    this spares it taking a reference to each array of the State and the Valuation."""
    if m.kind < ENTROPY:
        if order:
            return _order_key(m, keys, lifted, at_least, idx)
        return _current_bound(m, keys, lifted, at_least, idx)
    if at_least[idx] > least[idx]:
        return math.nan
    return float(keys[idx])


@njit(cache=True, nogil=True)
def facts(
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
        worth = math.inf
    elif m.kind >= ENTROPY and suppressed > 0:
        if where >= 0:
            d = len(s.node)
            worth = value(
                s, m, v,
                arena.codes[d * where : d * (where + count)].reshape((d, count)),
                arena.sizes[where : where + count], suppressed,
            )  # fmt: skip
        else:
            worth = value(s, m, v, arena.stage[:, :count], arena.grouped[:count], suppressed)
    elif m.kind == EXACT or m.kind >= ENTROPY:
        worth = s.bounds[idx]
        if worth != worth:
            raise ValueError("a node suppressing nothing has no static bound")
    elif m.kind == DISCERNIBILITY:
        worth = float(squares + suppressed * m.rows)
    elif m.rows == 0:
        worth = 0.0
    elif released == 0:
        worth = math.inf
    else:
        worth = m.rows / released
    s.values[row] = worth
    if m.kind == DISCERNIBILITY:
        s.lift[0] = float(squares + m.least_cost * suppressed)
    elif m.kind == AECS:
        s.lift[0] = -float(summary[CLASSES])
        s.lift[1] = -float(max(m.k, 1) * released + suppressed)
    return int(row)
