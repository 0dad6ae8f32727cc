"""The state of the compiled search (``solve.py``) and a node's bounds.

:class:`State` holds what the Python search (``best_first.py``) keeps per node, as arrays
over the lattice numbered in mixed radix (``lattice.py``): status (unknown, within the
limit, too many suppressed), the rows a node certainly suppresses, its key and static
bound, the numbers lifted from its evaluated specializations (discernibility, AECS), and
for evaluated nodes a row of facts. :func:`layout` makes the start of a search from the
rows every node certainly suppresses; :func:`_lifted_bound`, :func:`_current_bound` and
:func:`_order_key` are the Python search's bounds and queue key of a node, on these arrays.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.lattice import raise_by_rare

#: Node status (as ``best_first.py``).
UNKNOWN, WITHIN, TOO_MANY = 0, 1, 2
#: Metric kinds: a metric whose value without suppression is its static bound (loss,
#: entropy, precision), discernibility, AECS.
EXACT, DISCERNIBILITY, AECS = 0, 1, 2
#: Facts of an evaluated node (columns of ``State.facts``).
F_SUPPRESSED, F_RELEASED, F_MIN_RELEASED = 0, 1, 2


class State(NamedTuple):
    """The arrays of one search (module docstring); ``counters`` holds the evaluations
    and the facts rows in use."""

    tops: NDArray[np.int64]
    strides: NDArray[np.int64]
    status: NDArray[np.int8]
    at_least: NDArray[np.int64]
    keys: NDArray[np.float64]
    bounds: NDArray[np.float64]
    lifted: NDArray[np.float64]
    no_lift: NDArray[np.float64]
    slot: NDArray[np.int64]
    facts: NDArray[np.int64]
    values: NDArray[np.float64]
    counters: NDArray[np.int64]
    node: NDArray[np.int16]
    summary: NDArray[np.int64]
    lift: NDArray[np.float64]


class Metric(NamedTuple):
    """What the search needs of the metric and the limit: the metric's kind, the rows,
    ``k``, the least cost of a row in a class under ``k`` (discernibility), and the rows a
    node may suppress (``allowed``)."""

    kind: int
    rows: int
    k: int
    least_cost: int
    allowed: int = 0


@njit(cache=True, nogil=True)
def layout(
    least: NDArray[np.int64], tops: NDArray[np.int64], strides: NDArray[np.int64], allowed: int
) -> tuple[
    NDArray[np.int64],
    NDArray[np.int16],
    NDArray[np.int64],
    NDArray[np.int8],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.int64],
]:
    """What a search allowing ``allowed`` suppressed rows starts from, given the rows every
    node certainly suppresses (``least``): the nodes that may pass (not known to suppress
    more, in index order), their levels and total levels, every node's status (too many
    suppressed where more rows are known suppressed), static bounds (NaN), keys
    (infinite) and facts rows (none)."""
    size = len(least)
    d = len(tops)
    status = np.empty(size, dtype=np.int8)
    count = 0
    for idx in range(size):
        if least[idx] <= allowed:
            status[idx] = UNKNOWN
            count += 1
        else:
            status[idx] = TOO_MANY
    may = np.empty(count, dtype=np.int64)
    levels = np.empty((count, d), dtype=np.int16)
    totals = np.empty(count, dtype=np.int64)
    at = 0
    for idx in range(size):
        if least[idx] <= allowed:
            may[at] = idx
            totals[at] = _decode(idx, tops, strides, levels[at])
            at += 1
    bounds = np.full(size, np.nan, dtype=np.float64)
    keys = np.full(size, np.inf, dtype=np.float64)
    slot = np.full(size, -1, dtype=np.int64)
    return may, levels, totals, status, bounds, keys, slot


@njit(cache=True, nogil=True)
def start(
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    first_qi: NDArray[np.int64],
    second_qi: NDArray[np.int64],
    base: NDArray[np.int64],
    width: NDArray[np.int64],
    rare: NDArray[np.int64],
    allowed: int,
    base_lift: NDArray[np.float64],
) -> tuple[
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int16],
    NDArray[np.int64],
    NDArray[np.int8],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.int64],
    NDArray[np.float64],
]:
    """What the compiled search starts from, in one call (each call's argument typing
    cost as much as a small lattice's pass): the rows every node certainly suppresses
    (``least``: :func:`~apps.engine.search.kernels.lattice.raise_by_rare` of the rare
    rows' profiles, none with no profile, capped at ``allowed``), then :func:`layout`,
    then the lifted numbers every node starts from (``base_lift``'s ``w`` numbers,
    ``[w x size]``). Returns ``(least, *layout, lifted)``."""
    size = 1
    for t in tops:
        size *= t + 1
    least = np.zeros(size, dtype=np.int64)
    if len(base):
        raise_by_rare(tops, first_qi, second_qi, base, width, rare, allowed, least)
    may, levels, totals, status, bounds, keys, slot = layout(least, tops, strides, allowed)
    w = len(base_lift)
    lifted = np.empty((w, size), dtype=np.float64)
    for c in range(w):
        lifted[c, :] = base_lift[c]
    return least, may, levels, totals, status, bounds, keys, slot, lifted


@njit(cache=True, nogil=True)
def _decode(
    idx: int, tops: NDArray[np.int64], strides: NDArray[np.int64], out: NDArray[np.int16]
) -> int:
    """The levels of node ``idx`` into ``out``; returns its total level."""
    total = 0
    for j in range(len(tops)):
        v = (idx // strides[j]) % (tops[j] + 1)
        out[j] = v
        total += v
    return total


@njit(cache=True, nogil=True, inline="always")
def _exceeds(bound: float, best: float) -> bool:
    """``evaluate.exceeds``: a lower bound certainly above ``best``."""
    return bound > best + 1e-9 * max(1.0, abs(best))


@njit(cache=True, nogil=True, inline="always")
def _lifted_bound(m: Metric, lifted: NDArray[np.float64], idx: int, least: int) -> float:
    """``Metric.lifted_bound`` of discernibility and AECS from node ``idx``'s lifted
    numbers (``State.lifted``), knowing it suppresses ``least`` rows."""
    if m.kind == DISCERNIBILITY:
        if least == 0:
            return float(lifted[0, idx])
        return float(lifted[0, idx]) + float(m.rows - m.least_cost) * least
    n = m.rows
    if n == 0:
        return 0.0
    k = max(m.k, 1)
    most = min(-lifted[0, idx], (-lifted[1, idx] - least) // k, float((n - least) // k))
    return n / most if most > 0 else math.inf


# The bounds read the few arrays they need, not a State: numba takes a reference to every
# array of a tuple a function is given (an atomic increment and decrement each, 15 arrays
# for a State, 14 for a Valuation), inlined or not, and the search bounds a node at each
# step of its queue. Counted on adult_subset, discernibility k = 20 at 5 %: 85,814 of a
# search's 328,793 reference operations were in the loop's bounds; 9,042 are now.


@njit(cache=True, nogil=True, inline="always")
def _current_bound(
    m: Metric,
    keys: NDArray[np.float64],
    lifted: NDArray[np.float64],
    at_least: NDArray[np.int64],
    idx: int,
) -> float:
    """``BestFirst._current_bound`` on ``State.keys``, ``lifted`` and ``at_least``.
    (Metrics without lifted numbers only search without suppression, where the known
    suppression is 0 off the failing nodes.)"""
    bound = keys[idx]
    if lifted.shape[0]:
        raised = _lifted_bound(m, lifted, idx, at_least[idx])
        return raised if raised > bound else bound
    return float(bound)


@njit(cache=True, nogil=True, inline="always")
def _order_key(
    m: Metric,
    keys: NDArray[np.float64],
    lifted: NDArray[np.float64],
    at_least: NDArray[np.int64],
    idx: int,
) -> float:
    """``BestFirst._order_key`` on ``State.keys``, ``lifted`` and ``at_least``."""
    if not lifted.shape[0]:
        return _current_bound(m, keys, lifted, at_least, idx)
    raised = _lifted_bound(m, lifted, idx, 0)
    key = keys[idx]
    return raised if raised > key else key
