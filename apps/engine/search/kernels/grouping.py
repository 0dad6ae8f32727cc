"""Grouping rows of codes into classes, mapping each column up its hierarchy on the way.

:func:`roll_up_group` maps every row (a class of a less general node) through the
inter-level lookup arrays and groups equal code tuples: a direct-address table when the
mixed-radix key range is small, an open-addressing hash of the key otherwise, and a hash
of the code tuple itself when the key would not fit in 62 bits. Classes come out in the
order of their first source row, with their summary under ``k`` (classes, released
classes, suppressed rows, smallest released class, sum of squared released sizes). The
arena's roll-ups (``rollup.py``) and the rare rows of QI pairs (``rare.py``) group with the same
functions.

Working memory: a ``[2 x scratch_size(rows)]`` array whose entries are stamped with an
*epoch* (``epoch << 32 | group``), so that it is never cleared between calls.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

#: Summary slots (:func:`summarize`).
CLASSES, RELEASED, SUPPRESSED_ROWS, MIN_RELEASED, RELEASED_SQUARES = range(5)
#: Number of summary slots.
SUMMARY = 5
_KEY_LIMIT = np.int64(1) << np.int64(62)

Codes = NDArray[np.unsignedinteger[Any]]


class LevelMaps(NamedTuple):
    """A problem's inter-level lookup arrays in one bundle (``SearchProblem``): the
    maps from level ``a`` to level ``b`` of QI ``j`` are ``flat[offsets[j, a, b] +
    code]`` (offset -2 where there is none), and QI ``j`` has ``values[j, L]`` values at
    level ``L``."""

    flat: NDArray[np.uint32]
    offsets: NDArray[np.int64]
    values: NDArray[np.int64]


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


@njit(cache=True, nogil=True)
def scratch_size(rows: int) -> int:
    """Columns of the ``[2 x n]`` scratch array the grouping needs for ``rows`` rows
    (row 0: direct-address table; row 1: hash table of (entry, key) pairs, or the tuple
    hash table's entries)."""
    return max(8192, 8 * rows)


@njit(cache=True, nogil=True)
def _table_size(m: int) -> int:
    size = 1
    while size < 2 * m:
        size *= 2
    return size


@njit(cache=True, nogil=True, inline="always")
def _addressed(span: np.int64, m: int | np.int64) -> bool:
    """Whether ``m`` rows whose keys take ``span`` values (``_span``: negative when the
    key does not fit in 62 bits) are grouped by direct addressing, a table of ``span``
    entries, rather than hashed: when the span is at most ``max(1024, 4 m)``. The one
    place this threshold is decided (grouping, the scratch it needs, and which nodes a
    roll-up's hub would hash)."""
    return bool(span >= 0 and span <= max(np.int64(1024), np.int64(4) * m))


@njit(cache=True, nogil=True)
def _log2(size: int) -> int:
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return bits


@njit(cache=True, nogil=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:
    # splitmix64's finalizer: spreads consecutive keys over the table
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True)
def _keys(
    src: Codes, flat: NDArray[np.uint32], offsets: NDArray[np.int64], radix: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Each row's mixed-radix key, its columns mapped (``offsets[j] < 0``: kept)."""
    d, m = src.shape
    keys = np.zeros(m, dtype=np.int64)
    for j in range(d):
        r = radix[j]
        if r > 1:
            off = offsets[j]
            row = src[j]
            if off < 0:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(row[i])
            else:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(flat[off + np.int64(row[i])])
    return keys


@njit(cache=True, nogil=True)
def _groups_by_key(
    keys: NDArray[np.int64],
    sizes: NDArray[np.int64],
    span: np.int64,
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their key (``span`` values): direct addressing when the span is
    small, else open addressing (entry and key side by side: one cache line a probe)."""
    m = len(keys)
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    count = 0
    if _addressed(span, m):
        direct = scratch[0]
        for i in range(m):
            key = keys[i]
            entry = direct[key]
            if entry - stamp < 0 or entry - stamp > low:
                direct[key] = stamp + count
                first[count] = i
                out_sizes[count] = sizes[i]
                count += 1
            else:
                out_sizes[entry - stamp] += sizes[i]
        return count
    size = _table_size(m)
    shift = np.uint64(64 - _log2(size))
    table = scratch[1]
    for i in range(m):
        key = keys[i]
        h = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            entry = table[2 * h]
            if entry - stamp < 0 or entry - stamp > low:
                table[2 * h] = stamp + count
                table[2 * h + 1] = key
                first[count] = i
                out_sizes[count] = sizes[i]
                count += 1
                break
            if table[2 * h + 1] == key:
                out_sizes[entry - stamp] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def _mapped(src: Codes, flat: NDArray[np.uint32], offsets: NDArray[np.int64]) -> Codes:
    """The rows with every column mapped (for grouping on the code tuple)."""
    d, m = src.shape
    out = np.empty((d, m), dtype=src.dtype)
    for j in range(d):
        off = offsets[j]
        for i in range(m):
            out[j, i] = src[j, i] if off < 0 else flat[off + np.int64(src[j, i])]
    return out


@njit(cache=True, nogil=True)
def _groups_by_tuple(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their code tuples when the key would not fit in 62 bits: hash the
    tuple, compare tuples on equal hashes."""
    codes = _mapped(src, flat, offsets)
    d, m = codes.shape
    hashes = np.full(m, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    for j in range(d):
        for i in range(m):
            hashes[i] = _mix(hashes[i] ^ np.uint64(codes[j, i]))
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    size = _table_size(m)
    mask = np.uint64(size - 1)
    table = scratch[0]
    count = 0
    for i in range(m):
        h = np.int64(hashes[i] & mask)
        while True:
            entry = table[h]
            if entry - stamp < 0 or entry - stamp > low:
                table[h] = stamp + count
                first[count] = i
                out_sizes[count] = sizes[i]
                count += 1
                break
            g = entry - stamp
            other = first[g]
            same = hashes[other] == hashes[i]
            if same:
                for j in range(d):
                    if codes[j, other] != codes[j, i]:
                        same = False
                        break
            if same:
                out_sizes[g] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def level_offsets(
    source: NDArray[Any], target: NDArray[Any], maps: LevelMaps
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per QI, the offset of the map from level ``source[j]`` to ``target[j]`` in the
    flat maps (-1: the level stays) and the number of values at ``target[j]``."""
    d = len(source)
    offsets = np.empty(d, dtype=np.int64)
    radix = np.empty(d, dtype=np.int64)
    for j in range(d):
        a, b = source[j], target[j]
        if a > b:
            raise ValueError("cannot roll up to a lower level")
        offsets[j] = -1 if a == b else maps.offsets[j, a, b]
        if offsets[j] < -1:
            raise ValueError("roll-up above the bottom node needs consistent hierarchies")
        radix[j] = maps.values[j, b]
    return offsets, radix


@njit(cache=True, nogil=True)
def group(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    first: NDArray[np.int64],
    grouped: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group the mapped rows: on the mixed-radix key when it fits in 62 bits, else on
    the code tuple. ``first[g]`` = first row of group ``g``, ``grouped[g]`` its size."""
    span = _span(radix)
    if span >= 0:
        keys = _keys(src, flat, offsets, radix)
        return _groups_by_key(keys, sizes, span, first, grouped, scratch, epoch)
    return _groups_by_tuple(src, sizes, flat, offsets, first, grouped, scratch, epoch)


@njit(cache=True, nogil=True)
def gather(
    src: Codes,
    first: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    count: int,
    out: Codes,
) -> None:
    """Codes of each group (its first row's, mapped) into ``out[:, :count]``."""
    for j in range(src.shape[0]):
        off = offsets[j]
        row = src[j]
        if off < 0:
            for g in range(count):
                out[j, g] = row[first[g]]
        else:
            for g in range(count):
                out[j, g] = flat[off + np.int64(row[first[g]])]


@njit(cache=True, nogil=True)
def summarize_into(
    sizes: NDArray[np.int64], count: int, k: int, summary: NDArray[np.int64]
) -> None:
    """The summary slots of classes ``sizes[:count]`` under ``k``. Written without
    branches on ``size < k`` (selects): whether a class is released is unpredictable,
    and mispredicted branches made this loop cost as much as the gathering of codes."""
    none = np.int64(1) << np.int64(62)
    suppressed = np.int64(0)
    released = np.int64(0)
    squares = np.int64(0)
    least = none
    for g in range(count):
        s = sizes[g]
        small = s < k
        suppressed += s if small else 0
        released += 0 if small else 1
        squares += 0 if small else s * s
        least = min(least, none if small else s)
    summary[CLASSES] = count
    summary[RELEASED] = released
    summary[SUPPRESSED_ROWS] = suppressed
    summary[MIN_RELEASED] = 0 if least == none else least
    summary[RELEASED_SQUARES] = squares


@njit(cache=True, nogil=True)
def summarize(sizes: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """The summary slots of classes ``sizes`` under ``k`` (:func:`summarize_into`)."""
    summary = np.zeros(SUMMARY, dtype=np.int64)
    summarize_into(sizes, len(sizes), k, summary)
    return summary


@njit(cache=True, nogil=True)
def roll_up_group(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[Codes, NDArray[np.int64], NDArray[np.int64]]:
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
    count = group(src, sizes, flat, offsets, radix, first, grouped, scratch, np.int64(epoch))
    out = np.empty((d, count), dtype=src.dtype)
    gather(src, first, flat, offsets, count, out)
    summary = np.zeros(SUMMARY, dtype=np.int64)
    summarize_into(grouped, count, k, summary)
    return out, grouped[:count].copy(), summary


@njit(cache=True, nogil=True)
def roll_up_levels(
    src: Codes,
    sizes: NDArray[np.int64],
    source: NDArray[np.int64],
    target: NDArray[np.int64],
    maps: LevelMaps,
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[Codes, NDArray[np.int64], NDArray[np.int64]]:
    """:func:`roll_up_group` from the classes of node ``source`` to node ``target``
    (levels), with the problem's :class:`LevelMaps`."""
    offsets, radix = level_offsets(source, target, maps)
    return roll_up_group(src, sizes, maps.flat, offsets, radix, k, scratch, epoch)
