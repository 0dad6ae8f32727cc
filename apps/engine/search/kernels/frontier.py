"""The queue of the compiled search (``solve.py``).

``best_first.py``'s ``_by_bound`` takes nodes by key, then tie rank (lowest total level,
then index): from the static order, sorted once, merged with a ``heapq`` of nodes
re-queued under a raised key. Here the same queue over integer arrays: :func:`before`
compares (key, tie rank), :func:`push` and :func:`pop` keep a binary heap of three
parallel arrays, and a :class:`Queue` holds the static order, the heap and the loop's
scalars, so that :func:`solve.search_slice` can stop after a budget of nodes and go
on from the same place in the next call.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def total_level(idx: int, tops: NDArray[np.int64], strides: NDArray[np.int64]) -> int:
    """The total level of node ``idx`` (the first part of its tie rank)."""
    total = 0
    for j in range(len(tops)):
        total += (idx // strides[j]) % (tops[j] + 1)
    return total


@njit(cache=True, nogil=True, inline="always")
def before(key_a: float, tot_a: int, a: int, key_b: float, tot_b: int, b: int) -> bool:
    """(key, tie rank) of ``a`` below that of ``b``."""
    if key_a != key_b:
        return key_a < key_b
    if tot_a != tot_b:
        return tot_a < tot_b
    return a < b


@njit(cache=True, nogil=True)
def push(
    keys: NDArray[np.float64],
    totals: NDArray[np.int64],
    nodes: NDArray[np.int64],
    size: int,
    key: float,
    total: int,
    node: int,
) -> int:
    """Add an entry to the heap of ``size`` entries; returns the new size."""
    at = size
    while at > 0:
        up = (at - 1) >> 1
        if not before(key, total, node, keys[up], totals[up], nodes[up]):
            break
        keys[at], totals[at], nodes[at] = keys[up], totals[up], nodes[up]
        at = up
    keys[at], totals[at], nodes[at] = key, total, node
    return size + 1


@njit(cache=True, nogil=True)
def pop(
    keys: NDArray[np.float64], totals: NDArray[np.int64], nodes: NDArray[np.int64], size: int
) -> int:
    """Remove the least entry (the caller read it at 0); returns the new size."""
    size -= 1
    key, total, node = keys[size], totals[size], nodes[size]
    at = 0
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and before(
            keys[child + 1], totals[child + 1], nodes[child + 1], keys[child], totals[child],
            nodes[child],
        ):  # fmt: skip
            child += 1
        if not before(keys[child], totals[child], nodes[child], key, total, node):
            break
        keys[at], totals[at], nodes[at] = keys[child], totals[child], nodes[child]
        at = child
    if size > 0:
        keys[at], totals[at], nodes[at] = key, total, node
    return size


class Queue(NamedTuple):
    """Where a search stands between calls of :func:`solve.search_slice`: the static order
    with its keys and total levels, the heap of re-queued nodes, and the scalars of the
    loop (``ints``: ``Q_*``; ``floats``: ``QF_*``)."""

    order: NDArray[np.int64]
    order_keys: NDArray[np.float64]
    order_totals: NDArray[np.int64]
    heap_keys: NDArray[np.float64]
    heap_totals: NDArray[np.int64]
    heap_nodes: NDArray[np.int64]
    ints: NDArray[np.int64]
    floats: NDArray[np.float64]


#: ``Queue.ints``: the phase; the next place in the static order; the heap's size; the
#: best node so far (-1: none) and its total level; the node taken from the queue but
#: not yet handled when a call stopped (-1: none) and its total level.
Q_PHASE, Q_AT, Q_HEAP, Q_BEST, Q_BEST_TOTAL, Q_NEXT, Q_NEXT_TOTAL = range(7)
#: ``Queue.floats``: the best value so far; the key of the node not yet handled.
QF_BEST_VALUE, QF_NEXT_KEY = 0, 1
#: Phases: the top node not evaluated yet, searching, finished (the optimum is known).
STARTING, SEARCHING, FINISHED = 0, 1, 2


@njit(cache=True, nogil=True)
def _total_tables(
    tops: NDArray[np.int64], strides: NDArray[np.int64]
) -> tuple[int, NDArray[np.int64], NDArray[np.int64]]:
    """Total levels by two look-ups: a node ``idx`` of the lattice numbered in mixed radix
    (``strides[j]`` = the product of the radices after ``j``) has total level
    ``high[idx // block] + low[idx % block]``, ``block`` the stride that splits the QIs
    into two tables of about the square root of the lattice's size each (on
    adult_subset 12,960 nodes: 144 + 90 entries, against 9 divisions per node). Returns
    ``block`` 0 (no tables) when the strides are not such a numbering."""
    d = len(tops)
    size = 1
    for t in tops:
        size *= t + 1
    for j in range(d):
        after = strides[j + 1] * (tops[j + 1] + 1) if j + 1 < d else 1
        if strides[j] != after:
            return 0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    block, cost = 0, size + 1
    for j in range(d - 1):  # (low: QIs after j; high: QIs up to j)
        b = strides[j]
        if b + size // b < cost:
            block, cost = b, b + size // b
    if block == 0:
        return 0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    high = np.empty(size // block, dtype=np.int64)
    for q in range(size // block):
        high[q] = total_level(q * block, tops, strides)
    low = np.empty(block, dtype=np.int64)
    for r in range(block):
        low[r] = total_level(r, tops, strides)
    return block, high, low


@njit(cache=True, nogil=True)
def queue(
    order: NDArray[np.int64],
    keys: NDArray[np.float64],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
) -> Queue:
    """A search not started, over ``order`` (the nodes not known to fail, by static key
    then tie rank: ``_by_bound``'s static order), with the nodes' static ``keys``."""
    end = len(order)
    order_keys = np.empty(end, dtype=np.float64)
    order_totals = np.empty(end, dtype=np.int64)
    block, high, low = _total_tables(tops, strides)
    for i in range(end):
        order_keys[i] = keys[order[i]]
        if block:
            q = order[i] // block
            order_totals[i] = high[q] + low[order[i] - q * block]
        else:
            order_totals[i] = total_level(order[i], tops, strides)
    ints = np.zeros(7, dtype=np.int64)  # (STARTING, at 0, an empty heap)
    ints[Q_BEST], ints[Q_BEST_TOTAL], ints[Q_NEXT] = -1, np.int64(1) << np.int64(62), -1
    floats = np.array([math.inf, 0.0])
    return Queue(
        order,
        order_keys,
        order_totals,
        np.empty(max(end, 1), dtype=np.float64),
        np.empty(max(end, 1), dtype=np.int64),
        np.empty(max(end, 1), dtype=np.int64),
        ints,
        floats,
    )
