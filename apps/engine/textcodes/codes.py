"""Codes in one compiled pass: every value of a column gets the code of its first
appearance (:func:`dense_codes`, a hash table over the views in which values are compared
exactly), and the distinct rows of several coded columns are counted (:func:`group_rows`).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.textcodes.views import (
    _LOW32,
    INLINE,
    _bits,
    _fold,
    _long_equal,
    _mix,
    _short,
    _table_hash,
)

#: Slots of :func:`dense_codes`'s hash table to start with (it doubles when half full).
INITIAL_SLOTS = 4096


@njit(cache=True, nogil=True)
def _insert(
    views: NDArray[np.uint64],
    bases: NDArray[np.int64],
    nulls: NDArray[np.bool_],
    table: NDArray[np.int32],
    known: NDArray[np.uint64],
    codes: NDArray[np.uint32],
    start: int,
    count: int,
) -> tuple[int, int]:
    """Code rows from ``start`` on, until done or the table is half full: (next row,
    distinct values so far). Row ``c`` of ``known`` describes value ``c``: its view
    (short values zero-padded), its hash and its first row."""
    n = len(views)
    mask = np.int64(len(table) - 1)
    shift = np.uint64(64 - _bits(len(table)))
    limit = len(table) // 2
    has_nulls = len(nulls) > 0
    for i in range(start, n):
        if has_nulls and nulls[i]:
            codes[i] = np.uint32(0xFFFFFFFF)
            continue
        w0, w1 = views[i, 0], views[i, 1]
        length = np.int64(w0 & _LOW32)
        at = np.int64(0)
        if length <= INLINE:
            w0, w1 = _short(w0, w1)
            h = _fold(w0, w1)
        else:
            at = bases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
            h = _table_hash(w0, at, length)
        slot = np.int64(h >> shift)
        c = np.int64(table[slot])
        while c >= 0:
            # (length and first 4 bytes; then the other 8 bytes of a short value, or the
            # bytes of a long one)
            if known[c, 0] == w0:
                if length <= INLINE:
                    if known[c, 1] == w1:
                        break
                else:
                    v1 = known[c, 1]
                    kt = bases[np.int64(v1 & _LOW32)] + np.int64(v1 >> np.uint64(32))
                    if _long_equal(kt, at, length):
                        break
            slot = (slot + 1) & mask
            c = np.int64(table[slot])
        if c >= 0:
            codes[i] = np.uint32(c)
            continue
        if count == limit:
            return i, count
        known[count, 0] = w0
        known[count, 1] = w1
        known[count, 2] = h
        known[count, 3] = np.uint64(i)
        codes[i] = np.uint32(count)
        table[slot] = count
        count += 1
    return n, count


@njit(cache=True, nogil=True)
def _rehash(known: NDArray[np.uint64], count: int, size: int) -> NDArray[np.int32]:
    table = np.full(size, -1, dtype=np.int32)
    mask = np.int64(size - 1)
    shift = np.uint64(64 - _bits(size))
    for g in range(count):
        s = np.int64(known[g, 2] >> shift)
        while table[s] >= 0:
            s = (s + 1) & mask
        table[s] = g
    return table


@njit(cache=True, nogil=True)
def dense_codes(
    views: NDArray[np.uint64],
    bases: NDArray[np.int64],
    nulls: NDArray[np.bool_],
    codes: NDArray[np.uint32],
) -> NDArray[np.int64]:
    """Each value's code into ``codes``, distinct values numbered in order of first
    appearance; returns the first row of each (missing values get the code after the
    last, without a row). The table doubles as values are found, so its size follows
    the distinct values, not the rows."""
    n = len(views)
    # (a table of 4,096 slots to start with, 16 KiB: two of a column's few values
    # rarely share a slot; with 64, adult's "Male" and "Female" did, and every other
    # row probed twice: sex coded 3 times slower)
    known = np.empty((min(n, INITIAL_SLOTS // 2), 4), dtype=np.uint64)
    size = INITIAL_SLOTS
    table = np.full(size, -1, dtype=np.int32)
    at, count = 0, 0
    while True:
        at, count = _insert(views, bases, nulls, table, known, codes, at, count)
        if at >= n:
            break
        size *= 2
        if size // 2 > len(known):
            grown = np.empty((min(n, size // 2), 4), dtype=np.uint64)
            grown[:count] = known[:count]
            known = grown
        table = _rehash(known, count, size)
    if len(nulls):
        for i in range(n):
            if nulls[i]:
                codes[i] = np.uint32(count)
    first = np.empty(count, dtype=np.int64)
    for g in range(count):
        first[g] = np.int64(known[g, 3])
    return first


@njit(cache=True, nogil=True)
def _span(radix: NDArray[np.int64]) -> np.int64:
    """Product of the radices, or -1 past 2**62 (a tuple key would not fit)."""
    span = np.int64(1)
    for r in radix:
        if r > 1:
            if span > (np.int64(1) << np.int64(62)) // r:
                return np.int64(-1)
            span *= r
    return span


@njit(cache=True, nogil=True)
def group_rows(
    codes: NDArray[np.uint32],
    radix: NDArray[np.int64],
    ranks: NDArray[np.uint32],
    rank_at: NDArray[np.int64],
) -> tuple[NDArray[np.uint32], NDArray[np.int64]]:
    """The distinct rows of ``codes`` (``[d x n]``, column ``j`` with ``radix[j]``
    codes) with the number of rows of each, their codes mapped through
    ``ranks[rank_at[j] + code]``: ``([d x t] codes, [t] counts)``, in order of first
    appearance. Rows are grouped on their mixed-radix key when it fits in 62 bits,
    else on a hash of the row compared code by code."""
    d, n = codes.shape
    span = _span(radix)
    bits = 4
    while (1 << bits) < 2 * max(n, 1):
        bits += 1
    table = np.full(1 << bits, -1, dtype=np.int32)
    mask = np.int64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    first = np.empty(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if span >= 0:
            key = np.int64(0)
            for j in range(d):
                key = key * radix[j] + np.int64(codes[j, i])
        else:
            h = np.uint64(0x243F6A8885A308D3)
            for j in range(d):
                h = _mix(h ^ np.uint64(codes[j, i]))
            key = np.int64(h >> np.uint64(1))
        slot = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            g = np.int64(table[slot])
            if g < 0:
                table[slot] = count
                first[count] = i
                keys[count] = key
                counts[count] = 1
                count += 1
                break
            if keys[g] == key:
                same = True
                if span < 0:
                    r = first[g]
                    for j in range(d):
                        if codes[j, r] != codes[j, i]:
                            same = False
                            break
                if same:
                    counts[g] += 1
                    break
            slot = (slot + 1) & mask
    out = np.empty((d, count), dtype=np.uint32)
    for j in range(d):
        offset = rank_at[j]
        for c in range(count):
            out[j, c] = ranks[offset + np.int64(codes[j, first[c]])]
    return out, counts[:count].copy()
