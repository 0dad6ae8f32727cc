"""Walking the lattice in compiled loops: up-sets and down-sets as boxes, chains.

Nodes are numbered in mixed radix (``lattice.py``), so the up-set of a node (its
generalizations) and its down-set (its specializations) are boxes of that numbering:
:func:`raise_up` and :func:`raise_down` visit them with an odometer, never scanning the
lattice; :func:`climb_chain` climbs from a node through nodes of unknown status.
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
    d = len(node)
    w = lifted.shape[0]
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
    d = len(node)
    counter = np.zeros(d, dtype=np.int64)
    idx = np.int64(0)
    while True:
        if to_status >= 0:
            status[idx] = to_status
        if at_least[idx] < value:
            at_least[idx] = value
        j = d - 1
        while j >= 0:
            if counter[j] < node[j]:
                counter[j] += 1
                idx += strides[j]
                break
            idx -= counter[j] * strides[j]
            counter[j] = 0
            j -= 1
        if j < 0:
            return


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
