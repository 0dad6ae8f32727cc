"""Evaluating a node in the compiled search (``solve.py``) and settling unknown nodes:
``BestFirst._evaluate``, ``_probe`` and ``_climb`` over the search's arrays.

:func:`evaluate` takes a node's facts (``valuation.facts``, memoized) and tags what they
imply: its up-set within the limit and lifted (discernibility, AECS), or its down-set
failing, and the rows it suppresses raised in its down-set. :func:`probe` settles a node
of unknown status by a binary search on the chain above it (:func:`chain`: each step to
the successor with the most rows known suppressed, then the least key) and, when nothing
may be suppressed, climbs from the highest failing node of the chain to a maximal
failing one (:func:`climb`), whose down-set is the largest to tag.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.arena import Arena
from apps.engine.search.kernels.frontier import before, total_level
from apps.engine.search.kernels.grouping import LevelMaps
from apps.engine.search.kernels.lattice import raise_down, raise_up
from apps.engine.search.kernels.search_state import (
    F_SUPPRESSED,
    TOO_MANY,
    UNKNOWN,
    WITHIN,
    Metric,
    State,
    _decode,
    _exceeds,
)
from apps.engine.search.kernels.valuation import Valuation, facts


@njit(cache=True, nogil=True)
def evaluate(
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
        row = facts(s, m, v, idx, arena, base, base_summary, maps)
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
def chain(s: State, start: int) -> NDArray[np.int64]:
    """``kernels.climb_chain`` on the node numbering: from ``start`` through unknown
    nodes, each step to the successor with the most rows known suppressed, then the
    least key, then the first QI."""
    tops, strides, status, at_least, keys = s.tops, s.strides, s.status, s.at_least, s.keys
    d = len(tops)
    out = np.empty(int(tops.sum()) + 1, dtype=np.int64)
    out[0] = start
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
            return out[:n]
        out[n] = best
        n += 1
        cur = best


@njit(cache=True, nogil=True)
def climb(
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
            if evaluate(s, m, v, succ, arena, base, base_summary, maps) > m.allowed:
                failing = succ
                moved = True
                break
        if not moved:
            return


@njit(cache=True, nogil=True)
def probe(
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
    nodes = chain(s, idx)
    lo, hi = 0, len(nodes) - 1
    while lo <= hi and s.status[idx] == UNKNOWN:
        mid = (lo + hi) // 2
        if evaluate(s, m, v, nodes[mid], arena, base, base_summary, maps) <= m.allowed:
            hi = mid - 1
        else:
            lo = mid + 1
    if lo > 0 and m.allowed == 0:
        climb(s, m, v, nodes[lo - 1], best_value, arena, base, base_summary, maps)
