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
    _load64,
    _long_equal,
    _mix,
    _short,
    _table_hash,
)

#: Slots of :func:`dense_codes`'s hash table to start with (it doubles when half full).
INITIAL_SLOTS = 4096
#: Longest value whose bytes the hash table holds in its slot (4 in the view, then the
#: 8 from byte 4 and the last 8).
_HELD = 20


@njit(cache=True, nogil=True)
def _code_rows(
    views: NDArray[np.uint64],
    bases: NDArray[np.int64],
    nulls: NDArray[np.bool_],
    codes: NDArray[np.uint32],
    start: int | np.int64,
    size: int,
    seen: NDArray[np.uint64],
    count: int,
) -> tuple[int | np.int64, int, NDArray[np.uint64]]:
    """Code rows from ``start`` on in a table of ``size`` slots holding the ``count``
    values found before (``seen``), until done or the table is half full: (next row,
    distinct values so far, their descriptions). Row ``c`` of the descriptions is value
    ``c``'s two view words (a short value zero-padded; a long one's length and first 4
    bytes, then where its bytes lie), its hash, its first row, and for a long value its
    bytes 4-11 and its last 8 bytes (which with the first 4 are all the bytes of a value
    of at most :data:`_HELD` bytes).

    Slot ``s`` holds a value's code (-1: empty) and those words, in arrays made here,
    which a probe alone reads: a long value of at most 20 bytes is compared with the
    words its hash read already, without reading the bytes of the value in the slot.
    Rows and slots are unsigned. The compiler then knows that writing ``codes`` changes
    none of the table and that no index is negative (no wrap-around test): adult's
    columns are coded a quarter faster than with the tables handed in and signed
    indexes."""
    n = len(views)
    slots = np.full(size, -1, dtype=np.int32)
    first_words = np.empty(size, dtype=np.uint64)
    second_words = np.empty(size, dtype=np.uint64)
    middle_words = np.empty(size, dtype=np.uint64)
    last_words = np.empty(size, dtype=np.uint64)
    limit = size // 2
    known = np.empty((min(n, limit), 6), dtype=np.uint64)
    mask = np.uint64(size - 1)
    shift = np.uint64(64 - _bits(size))
    for g in range(count):
        for t in range(6):
            known[g, t] = seen[g, t]
        s = known[g, 2] >> shift
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = g
        first_words[s] = known[g, 0]
        second_words[s] = known[g, 1]
        middle_words[s] = known[g, 4]
        last_words[s] = known[g, 5]
    has_nulls = len(nulls) > 0
    for i in range(np.uint64(start), np.uint64(n)):
        if has_nulls and nulls[i]:
            codes[i] = np.uint32(0xFFFFFFFF)
            continue
        w0, w1 = views[i, 0], views[i, 1]
        length = np.int64(w0 & _LOW32)
        middle = last = np.uint64(0)
        if length <= INLINE:
            w0, w1 = _short(w0, w1)
            h = _fold(w0, w1)
            slot = h >> shift
            c = np.int64(slots[slot])
            while c >= 0 and (first_words[slot] != w0 or second_words[slot] != w1):
                slot = (slot + np.uint64(1)) & mask
                c = np.int64(slots[slot])
        elif length <= _HELD:
            # (_table_hash of these bytes: the same words, read once)
            at = bases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
            middle = _load64(at + 4)
            last = _load64(at + length - 8)
            h = _fold((w0 ^ middle) * np.uint64(0x9E3779B97F4A7C15), last)
            w1 = np.uint64(at)
            slot = h >> shift
            c = np.int64(slots[slot])
            while c >= 0 and (
                first_words[slot] != w0 or middle_words[slot] != middle or last_words[slot] != last
            ):
                slot = (slot + np.uint64(1)) & mask
                c = np.int64(slots[slot])
        else:
            at = bases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
            h = _table_hash(w0, at, length)
            w1 = np.uint64(at)
            slot = h >> shift
            c = np.int64(slots[slot])
            # (length and first 4 bytes, then the other bytes)
            while c >= 0 and (
                first_words[slot] != w0 or not _long_equal(np.int64(second_words[slot]), at, length)
            ):
                slot = (slot + np.uint64(1)) & mask
                c = np.int64(slots[slot])
        if c >= 0:
            codes[i] = np.uint32(c)
            continue
        if count == limit:
            return np.int64(i), count, known
        slots[slot] = count
        first_words[slot] = w0
        second_words[slot] = w1
        middle_words[slot] = middle
        last_words[slot] = last
        known[count, 0] = w0
        known[count, 1] = w1
        known[count, 2] = h
        known[count, 3] = i
        known[count, 4] = middle
        known[count, 5] = last
        codes[i] = np.uint32(count)
        count += 1
    return n, count, known


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
    # (a table of 4,096 slots to start with, 16 KiB of codes: two of a column's few
    # values rarely share a slot; with 64, adult's "Male" and "Female" did, and every
    # other row probed twice: sex coded 3 times slower)
    size = INITIAL_SLOTS
    at, count, known = _code_rows(
        views, bases, nulls, codes, 0, size, np.empty((0, 6), dtype=np.uint64), 0
    )
    while at < n:
        size *= 2
        at, count, known = _code_rows(views, bases, nulls, codes, at, size, known, count)
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
    else on a hash of the row compared code by code.

    The rows' keys are made a column at a time (a pass the compiler vectorizes, where
    a row at a time chains nine multiplications), then grouped with unsigned indexes
    into 32-bit arrays: half the time of a row at a time on adult."""
    d, n = codes.shape
    span = _span(radix)
    keyed = np.empty(n, dtype=np.int64)
    if span >= 0:
        keyed[:] = 0
        for j in range(d):
            r = radix[j]
            column = codes[j]
            for i in range(n):
                keyed[i] = keyed[i] * r + np.int64(column[i])
    else:
        hashed = np.full(n, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
        for j in range(d):
            column = codes[j]
            for i in range(n):
                hashed[i] = _mix(hashed[i] ^ np.uint64(column[i]))
        for i in range(n):
            keyed[i] = np.int64(hashed[i] >> np.uint64(1))
    bits = 4
    while (1 << bits) < 2 * max(n, 1):
        bits += 1
    table = np.full(1 << bits, -1, dtype=np.int32)
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    first = np.empty(n, dtype=np.uint32)
    counts = np.empty(n, dtype=np.int32)
    keys = np.empty(n, dtype=np.int64)
    count = np.uint64(0)
    for i in range(np.uint64(n)):
        key = keyed[i]
        slot = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift
        while True:
            g = table[slot]
            if g < 0:
                table[slot] = np.int32(count)
                first[count] = np.uint32(i)
                keys[count] = key
                counts[count] = 1
                count += np.uint64(1)
                break
            at = np.uint64(g)
            if keys[at] == key:
                same = True
                if span < 0:
                    r = np.uint64(first[at])
                    for j in range(d):
                        if codes[j, r] != codes[j, i]:
                            same = False
                            break
                if same:
                    counts[at] += 1
                    break
            slot = (slot + np.uint64(1)) & mask
    out = np.empty((d, count), dtype=np.uint32)
    for j in range(d):
        offset = rank_at[j]
        column = codes[j]
        for c in range(count):
            out[j, c] = ranks[offset + np.int64(column[first[c]])]
    rows = np.empty(count, dtype=np.int64)
    for c in range(count):
        rows[c] = counts[c]
    return out, rows
