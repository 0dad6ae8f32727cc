"""Walking the lattice in compiled loops: up-sets and down-sets as boxes, chains.

Nodes are numbered in mixed radix (``lattice.py``), so the up-set of a node (its
generalizations) and its down-set (its specializations) are boxes of that numbering:
:func:`raise_up` and :func:`raise_down` visit them with an odometer, never scanning the
lattice (their ``_memo`` forms also forget the numbers a caller memoized from what they
raise); :func:`climb_chain` climbs from a node through nodes of unknown status;
:func:`raise_by_rare` walks all nodes in index order, as an odometer over prefixes of
levels, raising each to the rare rows of its singles and pairs (``rare.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def raise_up(
    node: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    from_status: int,
    to_status: int,
    lifted: NDArray[np.float64],
    lift: NDArray[np.float64],
) -> None:
    """Over the up-set of ``node``: status ``from_status`` becomes ``to_status`` (skip
    with ``to_status < 0``), and each ``lifted[c]`` rises to at least ``lift[c]``
    (``lifted`` is ``[w x size]``; ``w = 0`` for none)."""
    none = np.empty(0, dtype=np.float64)
    _up(node, tops, strides, status, from_status, to_status, lifted, lift, none, none)


@njit(cache=True, nogil=True)
def raise_up_memo(
    node: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    from_status: int,
    to_status: int,
    lifted: NDArray[np.float64],
    lift: NDArray[np.float64],
    order: NDArray[np.float64],
    bound: NDArray[np.float64],
) -> None:
    """:func:`raise_up`, and where a node's lifted numbers rise, its memoized numbers
    computed from them (``order[idx]``, ``bound[idx]``: ``best_first.py``'s order key
    and bound) become NaN, to be computed again."""
    _up(node, tops, strides, status, from_status, to_status, lifted, lift, order, bound)


@njit(cache=True, nogil=True, inline="always")
def _up(
    node: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    from_status: int,
    to_status: int,
    lifted: NDArray[np.float64],
    lift: NDArray[np.float64],
    order: NDArray[np.float64],
    bound: NDArray[np.float64],
) -> None:
    d = len(node)
    w = lifted.shape[0]
    memo = len(order) > 0
    counter = np.empty(d, dtype=np.int64)
    idx = np.int64(0)
    for j in range(d):
        counter[j] = node[j]
        idx += np.int64(node[j]) * strides[j]
    while True:
        if to_status >= 0 and status[idx] == from_status:
            status[idx] = to_status
        for c in range(w):
            if lifted[c, idx] < lift[c]:
                lifted[c, idx] = lift[c]
                if memo:
                    order[idx] = np.nan
                    bound[idx] = np.nan
        j = d - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                idx += strides[j]
                break
            idx -= (counter[j] - node[j]) * strides[j]
            counter[j] = node[j]
            j -= 1
        if j < 0:
            return


@njit(cache=True, nogil=True)
def raise_down(
    node: NDArray[np.int16],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    to_status: int,
    at_least: NDArray[np.int64],
    value: int,
) -> None:
    """Over the down-set of ``node``: status becomes ``to_status`` (skip with
    ``to_status < 0``) and ``at_least`` rises to at least ``value``."""
    _down(node, strides, status, to_status, at_least, value, np.empty(0, dtype=np.float64))


@njit(cache=True, nogil=True)
def raise_down_memo(
    node: NDArray[np.int16],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    to_status: int,
    at_least: NDArray[np.int64],
    value: int,
    bound: NDArray[np.float64],
) -> None:
    """:func:`raise_down`, and where ``at_least`` rises, the memoized number computed
    from it (``bound[idx]``, ``best_first.py``'s bound) becomes NaN."""
    _down(node, strides, status, to_status, at_least, value, bound)


@njit(cache=True, nogil=True, inline="always")
def _down(
    node: NDArray[np.int16],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    to_status: int,
    at_least: NDArray[np.int64],
    value: int,
    bound: NDArray[np.float64],
) -> None:
    """The down-set of ``node`` as nested boxes: QI ``j``'s level runs from the node's
    down to 0 under fixed levels of the QIs before it, the QIs after it free. A box whose
    top corner (the QIs after ``j`` at the node's levels) already has ``at_least >=
    value`` (and ``to_status``, when one is set) is skipped with every box below it: rows
    certainly suppressed only grow towards the bottom (a specialization suppresses at
    least what its generalizations do; every raise is over a down-set) and the nodes
    known to fail are a down-set, so nothing under such a corner would change. A search
    raises the same nodes again and again (every evaluated node raises its down-set), and
    this visits only the nodes that rise."""
    d = len(node)
    memo = len(bound) > 0
    if d == 0:
        if to_status >= 0:
            status[0] = to_status
        if at_least[0] < value:
            at_least[0] = value
            if memo:
                bound[0] = np.nan
        return
    # tail[j]: the index part of QIs j.. at the node's levels; prefix[j]: of QIs ..j-1
    # at the counters' levels
    tail = np.zeros(d + 1, dtype=np.int64)
    for j in range(d - 1, -1, -1):
        tail[j] = tail[j + 1] + np.int64(node[j]) * strides[j]
    prefix = np.zeros(d + 1, dtype=np.int64)
    counter = np.empty(d, dtype=np.int64)
    j = 0
    counter[0] = node[0]
    while True:
        here = prefix[j] + counter[j] * strides[j]
        corner = here + tail[j + 1]
        settled = at_least[corner] >= value and (to_status < 0 or status[corner] == to_status)
        if not settled and j < d - 1:
            prefix[j + 1] = here
            j += 1
            counter[j] = node[j]
            continue
        if not settled:  # (the last QI: the box is the node itself)
            if to_status >= 0:
                status[corner] = to_status
            if at_least[corner] < value:
                at_least[corner] = value
                if memo:
                    bound[corner] = np.nan
            counter[j] -= 1
        else:
            counter[j] = -1  # (every lower level of QI j is settled too)
        while counter[j] < 0:
            j -= 1
            if j < 0:
                return
            counter[j] -= 1


@njit(cache=True, nogil=True)
def climb_chain(
    start: int,
    levels: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    unknown: int,
    at_least: NDArray[np.int64],
    keys: NDArray[np.float64],
) -> NDArray[np.int64]:
    """Chain of generalizations from ``start`` through nodes of status ``unknown``:
    each step to the successor with the most rows known suppressed (``at_least``),
    then the least key, then the first QI; ends where no successor is unknown."""
    d = len(tops)
    chain = np.empty(int(tops.sum()) + 1, dtype=np.int64)
    chain[0] = start
    n = 1
    cur = start
    while True:
        best = -1
        for j in range(d):
            if levels[cur, j] < tops[j]:
                s = cur + strides[j]
                if status[s] == unknown and (
                    best < 0
                    or at_least[s] > at_least[best]
                    or (at_least[s] == at_least[best] and keys[s] < keys[best])
                ):
                    best = s
        if best < 0:
            return chain[:n]
        chain[n] = best
        n += 1
        cur = best


@njit(cache=True, nogil=True)
def raise_by_rare(
    tops: NDArray[np.int64],
    first_qi: NDArray[np.int64],
    second_qi: NDArray[np.int64],
    base: NDArray[np.int64],
    width: NDArray[np.int64],
    rare: NDArray[np.int64],
    cap: int,
    bound: NDArray[np.int64],
) -> None:
    """Raise ``bound[node]`` over the lattice of ``tops`` (nodes in index order) to the
    rare rows of each profile ``p`` at the node's levels: segment ``base[p] + l_i
    width[p] + l_j`` (``i = first_qi[p] < j = second_qi[p]``; a single QI ``i`` when
    ``j < 0``).

    Nodes are visited in index order, as an odometer over the levels; the maximum over
    the profiles within the first ``t`` QIs is kept per prefix, so that a node costs
    only the profiles whose last QI is the digit that changed and those after it (on
    adult about 13 profiles per node instead of 45). Once a prefix's maximum exceeds
    ``cap`` (``cap >= 0``), every node under it gets that maximum (more than ``cap``,
    not necessarily the node's whole bound) and is skipped. The last QI's levels are
    taken all at once under each prefix of the others: its profiles' segments are runs
    of consecutive levels, as are the nodes (a node costs a pass over those profiles
    without the odometer's steps)."""
    d = len(tops)
    profiles = len(base)
    # Profiles grouped by their last QI.
    by_last = np.zeros(d + 1, dtype=np.int64)
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        by_last[last + 1] += 1
    for t in range(d):
        by_last[t + 1] += by_last[t]
    order = np.empty(profiles, dtype=np.int64)
    filled = by_last[:d].copy()
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        order[filled[last]] = p
        filled[last] += 1
    # Nodes under a prefix of t QIs: a block of block[t] consecutive indices.
    block = np.ones(d + 1, dtype=np.int64)
    for t in range(d - 1, -1, -1):
        block[t] = block[t + 1] * (tops[t] + 1)
    counter = np.zeros(d, dtype=np.int64)
    partial = np.zeros(d + 1, dtype=np.int64)  # partial[t]: max within QIs < t
    final = d - 1  # (the last QI)
    row = np.empty(tops[final] + 1 if d else 1, dtype=np.int64)
    changed = 0
    idx = 0
    size = block[0]
    while idx < size:
        t = changed
        while t < final:
            best = partial[t]
            for q in range(by_last[t], by_last[t + 1]):
                p = order[q]
                s = base[p] + counter[first_qi[p]] * width[p]
                if second_qi[p] >= 0:
                    s += counter[t]
                r = rare[s]
                if r > best:
                    best = r
            partial[t + 1] = best
            t += 1
            if cap >= 0 and best > cap:
                break
        if t == final and not (cap >= 0 and partial[t] > cap):
            # Every level of the last QI at once: its profiles' segments are runs of
            # consecutive levels (``rare[row + b]``), as are the nodes (``idx + b``).
            row[:] = partial[final]
            for q in range(by_last[final], by_last[d]):
                p = order[q]
                at = base[p] + (counter[first_qi[p]] * width[p] if second_qi[p] >= 0 else 0)
                for b in range(tops[final] + 1):
                    if rare[at + b] > row[b]:
                        row[b] = rare[at + b]
            for b in range(tops[final] + 1):
                if bound[idx + b] < row[b]:
                    bound[idx + b] = row[b]
            idx += tops[final] + 1
        else:
            # t QIs fixed: the block of nodes under that prefix gets partial[t].
            end = idx + block[t]
            for i in range(idx, end):
                if bound[i] < partial[t]:
                    bound[i] = partial[t]
            idx = end
        # Next prefix of t QIs: carry from digit t - 1.
        j = t - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                break
            counter[j] = 0
            j -= 1
        if j < 0:
            return
        for u in range(j + 1, d):
            counter[u] = 0
        changed = j
