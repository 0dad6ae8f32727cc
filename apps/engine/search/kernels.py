"""Compiled inner loops of the search (numba): roll-up with grouping, lattice tagging.

The search spends its time in two places per evaluated node: grouping the node's
classes from a cached less general node (``classes.py``) and writing what the node's
facts imply into per-node arrays over its up-set or down-set (``optimal.py``). With
numpy each is a few dozen whole-array calls on arrays of a few hundred to a few
thousand entries, so call overhead dominates (about 0.3 ms per node on adult). Here
each is one pass:

* :func:`roll_up_group` maps every class of the source through the inter-level lookup
  arrays and groups equal code tuples: a direct-address table when the mixed-radix key
  range is small, an open-addressing hash of the key otherwise, and a hash of the code
  tuple itself when the key would not fit in 62 bits. Classes come out in the order of
  their first source row. It also returns the node's summary under ``k`` (classes,
  released classes, suppressed rows, smallest released class, sum of squared released
  class sizes).
* :func:`raise_up` / :func:`raise_down` visit the up-set / down-set of a node as a box
  of the mixed-radix lattice numbering (no scan of the whole lattice).
* :func:`smallest_below` picks the cached node below a node with the fewest classes.

Every function is checked against a plain-Python oracle in
``tests/engine/test_kernels.py``; compiled code is cached on disk (``cache=True``), so
only the first process after an install pays for compilation.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

#: Summary slots returned by :func:`roll_up_group`.
CLASSES, RELEASED, SUPPRESSED_ROWS, MIN_RELEASED, RELEASED_SQUARES = range(5)
_KEY_LIMIT = np.int64(1) << np.int64(62)


@njit(cache=True, nogil=True)
def _code(
    src: NDArray[np.uint32], flat: NDArray[np.uint32], off: np.int64, j: int, i: int
) -> np.int64:
    if off < 0:
        return np.int64(src[j, i])
    return np.int64(flat[off + np.int64(src[j, i])])


@njit(cache=True, nogil=True)
def _hash(x: np.uint64) -> np.uint64:
    # splitmix64 finalizer: spreads consecutive keys over the table
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True)
def _span(radix: NDArray[np.int64]) -> np.int64:
    """Product of the radices, or -1 when it would exceed 2**62."""
    span = np.int64(1)
    for j in range(len(radix)):
        r = radix[j]
        if r > 1:
            if span > _KEY_LIMIT // r:
                return np.int64(-1)
            span *= r
    return span


def scratch_size(rows: int) -> int:
    """Columns of the ``[2 x n]`` scratch array :func:`roll_up_group` needs for
    ``rows`` rows (row 0: direct-address table; row 1: hash table of (entry, key)
    pairs, or the tuple hash table's entries)."""
    return max(8192, 8 * rows)


@njit(cache=True, nogil=True)
def _table_size(m: int) -> int:
    size = 1
    while size < 2 * m:
        size *= 2
    return size


@njit(cache=True, nogil=True)
def _groups_by_key(
    src: NDArray[np.uint32],
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    span: np.int64,
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their mixed-radix key (``span`` values): direct addressing when
    the span is small, else open addressing. A scratch entry ``epoch << 32 | group``
    is taken in this call only, so the scratch array is never cleared."""
    d, m = src.shape
    keys = np.zeros(m, dtype=np.int64)
    for j in range(d):
        r = radix[j]
        if r > 1:
            off = offsets[j]
            if off < 0:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(src[j, i])
            else:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(flat[off + np.int64(src[j, i])])
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    count = 0
    if span <= max(np.int64(1024), np.int64(4) * m):
        for i in range(m):
            key = keys[i]
            entry = scratch[0, key]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                scratch[0, key] = stamp + g
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
            else:
                out_sizes[entry - stamp] += sizes[i]
        return count
    # Open addressing; entry and key side by side in row 1 (one cache line a probe).
    size = _table_size(m)
    shift = np.uint64(64 - _log2(size))
    table = scratch[1]
    for i in range(m):
        key = keys[i]
        h = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            entry = table[2 * h]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                table[2 * h] = stamp + g
                table[2 * h + 1] = key
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
                break
            if table[2 * h + 1] == key:
                out_sizes[entry - stamp] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def _log2(size: int) -> int:
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return bits


@njit(cache=True, nogil=True)
def _groups_by_tuple(
    src: NDArray[np.uint32],
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their code tuples when the key would not fit in 62 bits: hash
    the tuple, compare tuples on equal hashes."""
    d, m = src.shape
    hashes = np.full(m, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    for j in range(d):
        off = offsets[j]
        for i in range(m):
            hashes[i] = _hash(hashes[i] ^ np.uint64(_code(src, flat, off, j, i)))
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    size = _table_size(m)
    mask = np.uint64(size - 1)
    count = 0
    for i in range(m):
        h = np.int64(hashes[i] & mask)
        while True:
            entry = scratch[0, h]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                scratch[0, h] = stamp + g
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
                break
            g = entry - stamp
            other = first[g]
            same = hashes[other] == hashes[i]
            if same:
                for j in range(d):
                    off = offsets[j]
                    if _code(src, flat, off, j, other) != _code(src, flat, off, j, i):
                        same = False
                        break
            if same:
                out_sizes[g] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def roll_up_group(
    src: NDArray[np.uint32],
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[NDArray[np.uint32], NDArray[np.int64], NDArray[np.int64]]:
    """Classes of a node from the classes ``src`` (``[d x m]`` codes, ``sizes``) of a
    less general node: column ``j`` maps through ``flat[offsets[j] + code]`` (or stays
    when ``offsets[j] < 0``); ``radix[j]`` = values of QI ``j`` at the node's level.
    ``scratch`` (``[2 x scratch_size(m)]``, zeros at first) holds no entry stamped
    with ``epoch`` (``1 <= epoch < 2**31``): pass a new epoch per call.

    Returns ``(codes [d x c], sizes [c], summary)``; ``summary`` holds, under ``k``,
    the slots named by :data:`CLASSES` ... :data:`RELEASED_SQUARES`.
    """
    d, m = src.shape
    first = np.empty(m, dtype=np.int64)
    grouped = np.empty(m, dtype=np.int64)
    span = _span(radix)
    e = np.int64(epoch)
    if span >= 0:
        count = _groups_by_key(src, sizes, flat, offsets, radix, span, first, grouped, scratch, e)
    else:
        count = _groups_by_tuple(src, sizes, flat, offsets, first, grouped, scratch, e)
    out_sizes = grouped[:count].copy()
    out = np.empty((d, count), dtype=np.uint32)
    for j in range(d):
        off = offsets[j]
        if off < 0:
            for g in range(count):
                out[j, g] = src[j, first[g]]
        else:
            for g in range(count):
                out[j, g] = flat[off + np.int64(src[j, first[g]])]
    summary = np.zeros(5, dtype=np.int64)
    summary[CLASSES] = count
    least = np.int64(-1)
    for g in range(count):
        s = out_sizes[g]
        if s < k:
            summary[SUPPRESSED_ROWS] += s
        else:
            summary[RELEASED] += 1
            summary[RELEASED_SQUARES] += s * s
            if least < 0 or s < least:
                least = s
    summary[MIN_RELEASED] = max(least, np.int64(0))
    return out, out_sizes, summary


@njit(cache=True, nogil=True)
def roll_up_levels(
    src: NDArray[np.uint32],
    sizes: NDArray[np.int64],
    source: NDArray[np.int64],
    target: NDArray[np.int64],
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[NDArray[np.uint32], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`roll_up_group` from the classes of node ``source`` to node ``target``
    (levels), with the problem's ``flat`` maps, ``map_offsets`` and ``level_values``
    (:class:`SearchProblem`)."""
    d = len(source)
    offsets = np.empty(d, dtype=np.int64)
    radix = np.empty(d, dtype=np.int64)
    for j in range(d):
        a, b = source[j], target[j]
        if a > b:
            raise ValueError("cannot roll up to a lower level")
        offsets[j] = -1 if a == b else map_offsets[j, a, b]
        if offsets[j] < -1:
            raise ValueError("roll-up above the bottom node needs consistent hierarchies")
        radix[j] = level_values[j, b]
    return roll_up_group(src, sizes, flat, offsets, radix, k, scratch, epoch)


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
def smallest_below(
    cached: NDArray[np.int16], classes: NDArray[np.int64], node: NDArray[np.int16]
) -> int:
    """Row of ``cached`` (levels of cached nodes, ``[slots x d]``) that is ``<= node``
    with the fewest ``classes``; -1 when none is."""
    slots, d = cached.shape
    best = -1
    for s in range(slots):
        below = True
        for j in range(d):
            if cached[s, j] > node[j]:
                below = False
                break
        if below and (best < 0 or classes[s] < classes[best]):
            best = s
    return best


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
