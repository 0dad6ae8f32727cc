"""Exact dictionary codes of text columns, in compiled passes over Arrow string views.

A polars String column is stored as Arrow *string views*: 16 bytes per value, its length
and then, up to 12 bytes, the value itself (zero-padded), else its first 4 bytes and where
the rest lies in a data buffer. Two values of at most 12 bytes are therefore equal exactly
when their views are, and comparing longer values reads their bytes. That lets one
compiled pass give every value of a column a code (a hash table over the views in which
values are compared exactly, so no hash collision can merge two values), another sort the
distinct values by their bytes (the order of polars' string sort), and a third find
values in a prepared index (a hierarchy's leaves): no Python per value (ARX's
``Dictionary`` does the like with a Java hash map of strings).

Everything is checked against polars (unique, sort, look-ups) on random texts, short
and long, with missing values, in ``tests/engine/test_textcodes.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numpy.typing import NDArray

#: Longest value held in its view (Arrow's string-view layout).
INLINE = 12
_LOW32 = np.uint64(0xFFFFFFFF)
#: Per length up to 12, the bits of each view word that hold the length and the value.
_KEEP0 = np.array([(1 << min(64, 32 + 8 * n)) - 1 for n in range(INLINE + 1)], dtype=np.uint64)
_KEEP1 = np.array([(1 << (8 * max(0, n - 4))) - 1 for n in range(INLINE + 1)], dtype=np.uint64)


@dataclass(frozen=True)
class TextViews:
    """The string views of a column (``[n x 2]`` 64-bit words, little-endian: length and
    first 4 bytes, then bytes 4..11, or buffer index and offset), the address in memory of
    each data buffer (``bases``; the buffers, in ``keep``, stay alive with this object) and
    which values are missing (``nulls``, empty when none is)."""

    views: NDArray[np.uint64]
    bases: NDArray[np.int64]
    nulls: NDArray[np.bool_]
    keep: tuple[object, ...]

    def __len__(self) -> int:
        return len(self.views)


_NO_NULLS = np.zeros(0, dtype=np.bool_)
_NO_NULLS.flags.writeable = False
_VIEW = pa.string_view()


def text_views(series: pl.Series) -> TextViews:
    """The views of a String column, without copying when it is one chunk (views of
    several chunks are copied into one array, their buffer indexes moved along); long
    values are read where they lie, through their buffers' addresses."""
    if series.dtype != pl.String:
        series = series.cast(pl.String)
    nulls = series.is_null().to_numpy() if series.null_count() else _NO_NULLS
    chunks = series.get_chunks() if series.n_chunks() > 1 else [series]
    arrays = [c.to_arrow(compat_level=pl.CompatLevel.newest()) for c in chunks]
    # (polars hands its strings over as views; any other layout is made into views)
    arrays = [a if a.type == _VIEW else a.cast(_VIEW) for a in arrays if len(a)]
    raws = [a.buffers() for a in arrays]

    def own(i: int) -> NDArray[np.uint64]:
        words = np.frombuffer(raws[i][1], dtype=np.uint64).reshape(-1, 2)
        return words[arrays[i].offset : arrays[i].offset + len(arrays[i])]

    data = [b for raw in raws for b in raw[2:] if b is not None]
    if not arrays:
        views = np.zeros((0, 2), dtype=np.uint64)
    elif len(arrays) == 1:
        views = own(0)
    else:
        views = np.empty((sum(len(a) for a in arrays), 2), dtype=np.uint64)
        at = before = 0
        for i, raw in enumerate(raws):
            views[at : at + len(arrays[i])] = own(i)
            if before:
                _shift_buffers(views[at : at + len(arrays[i])], before)
            at += len(arrays[i])
            before += sum(1 for b in raw[2:] if b is not None)
    bases = np.array([b.address for b in data] or [0], dtype=np.int64)
    # Read-only all of them, as the views of Arrow's buffers are: one compiled version
    # of each function serves every column.
    views = np.ascontiguousarray(views)
    for array in (views, bases, nulls):
        array.flags.writeable = False
    return TextViews(views, bases, nulls, tuple(raws))


@njit(cache=True, nogil=True)
def _shift_buffers(views: NDArray[np.uint64], by: int) -> None:
    """Move the buffer index of every long value by ``by`` (views of a later chunk)."""
    for i in range(len(views)):
        if (views[i, 0] & _LOW32) > INLINE:
            views[i, 1] += np.uint64(by)


# The per-value helpers take words, not arrays (or are inlined where they read arrays):
# a compiled call that passes arrays counts references on each of them, which costs more
# than the comparison itself.


@njit(cache=True, nogil=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:
    # splitmix64's finalizer
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True, inline="always")
def _fold(w0: np.uint64, w1: np.uint64) -> np.uint64:
    """Hash of a short value's two view words (the high bits, which pick the slot, mix
    every bit of both)."""
    h = (w0 ^ (w1 * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
    return h ^ (h >> np.uint64(29))


@njit(cache=True, nogil=True, inline="always")
def _short(w0: np.uint64, w1: np.uint64) -> tuple[np.uint64, np.uint64]:
    """A short value's view with every byte past its length zeroed (Arrow asks for
    zeros there; this does not rely on it)."""
    n = np.int64(w0 & _LOW32)
    return w0 & _KEEP0[n], w1 & _KEEP1[n]


@intrinsic
def _load64_intrinsic(typingctx: Any, address: Any) -> Any:
    """The 8 bytes at ``address`` as one little-endian word (one unaligned load, which
    x86-64 and ARM64 allow; the caller keeps the 8 bytes within a live buffer)."""
    signature = types.uint64(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        where = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.load(where, align=1)

    return signature, codegen


@intrinsic
def _load8_intrinsic(typingctx: Any, address: Any) -> Any:
    """The byte at ``address``."""
    signature = types.uint8(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.load(builder.inttoptr(args[0], ir.IntType(8).as_pointer()))

    return signature, codegen


_load64 = cast(Callable[[np.int64], np.uint64], _load64_intrinsic)
_load8 = cast(Callable[[np.int64], np.uint8], _load8_intrinsic)


@njit(cache=True, nogil=True, inline="always")
def _address(bases: NDArray[np.int64], w1: np.uint64) -> np.int64:
    """Where in memory a long value (second view word ``w1``) begins."""
    at: np.int64 = bases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
    return at


@njit(cache=True, nogil=True, inline="always")
def _short_hash(w0: np.uint64, w1: np.uint64) -> np.uint64:
    """Hash of a value of at most 12 bytes, from its view."""
    a, b = _short(w0, w1)
    return _fold(a, b)


@njit(cache=True, nogil=True, inline="always")
def _long_hash(at: np.int64, n: np.int64) -> np.uint64:
    """Hash of the ``n > 12`` bytes at address ``at``, eight at a time (the last word
    ending at the value's end)."""
    h = np.uint64(n) * np.uint64(0x9E3779B97F4A7C15)
    t = np.int64(0)
    while t + 8 < n:
        h = _mix(h ^ _load64(at + t))
        t += 8
    return _mix(h ^ _load64(at + n - 8))


@njit(cache=True, nogil=True, inline="always")
def _long_equal(at: np.int64, bt: np.int64, n: np.int64) -> bool:
    """Whether the ``n > 12`` bytes at addresses ``at`` and ``bt`` are equal (the first
    four are equal already: they are in the views)."""
    t = np.int64(4)
    while t + 8 < n:
        if _load64(at + t) != _load64(bt + t):
            return False
        t += 8
    return bool(_load64(at + n - 8) == _load64(bt + n - 8))


@njit(cache=True, nogil=True, inline="always")
def _same(a0: np.uint64, a1: np.uint64, b0: np.uint64, b1: np.uint64) -> int:
    """1 when two views are of one short value, 0 when their values differ, -1 when both
    are long values of one length and first 4 bytes (the rest decides)."""
    n = np.int64(a0 & _LOW32)
    if n != np.int64(b0 & _LOW32):
        return 0
    if n <= INLINE:
        x0, x1 = _short(a0, a1)
        y0, y1 = _short(b0, b1)
        return 1 if x0 == y0 and x1 == y1 else 0
    return -1 if (a0 >> np.uint64(32)) == (b0 >> np.uint64(32)) else 0


@njit(cache=True, nogil=True)
def _value_hash(views: NDArray[np.uint64], bases: NDArray[np.int64], i: int) -> np.uint64:
    """Hash of value ``i`` (:func:`_short_hash` or :func:`_long_hash`)."""
    w0, w1 = views[i, 0], views[i, 1]
    n = np.int64(w0 & _LOW32)
    if n <= INLINE:
        return _short_hash(w0, w1)
    return _long_hash(_address(bases, w1), n)


@njit(cache=True, nogil=True)
def _bits(size: int) -> int:
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return bits


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
            h = _long_hash(at, length)
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
    known = np.empty((min(n, 512), 4), dtype=np.uint64)
    size = 64
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


@njit(cache=True, nogil=True, inline="always")
def _big_endian(w: np.uint64, skip: int, take: int) -> np.uint64:
    """Bytes ``skip .. skip + take - 1`` of the little-endian word ``w``, most
    significant first."""
    out = np.uint64(0)
    for t in range(take):
        out = (out << np.uint64(8)) | ((w >> np.uint64(8 * (skip + t))) & np.uint64(0xFF))
    return out


@njit(cache=True, nogil=True)
def _short_keys(
    views: NDArray[np.uint64], rows: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], bool]:
    """Sort keys of values ``rows`` when all are at most 12 bytes (else False): bytes
    0-7, then bytes 8-11 and the length, most significant byte first; with bytes past
    the end zero, their order is the bytes' order, a value before those it begins."""
    m = len(rows)
    high = np.empty(m, dtype=np.uint64)
    low = np.empty(m, dtype=np.uint64)
    for g in range(m):
        w0, w1 = views[rows[g], 0], views[rows[g], 1]
        n = np.int64(w0 & _LOW32)
        if n > INLINE:
            return high, low, False
        w0, w1 = _short(w0, w1)
        # bytes 0-3 are in w0's upper half, 4-11 in w1
        high[g] = (_big_endian(w0, 4, 4) << np.uint64(32)) | _big_endian(w1, 0, 4)
        low[g] = (_big_endian(w1, 4, 4) << np.uint64(8)) | np.uint64(n)
    return high, low, True


@njit(cache=True, nogil=True)
def _settle_ties(
    order: NDArray[np.int64], high: NDArray[np.uint64], low: NDArray[np.uint64]
) -> None:
    """Within each run of equal ``high`` keys in ``order``, order by ``low``."""
    m = len(order)
    start = 0
    while start < m:
        end = start + 1
        while end < m and high[order[end]] == high[order[start]]:
            end += 1
        if end - start > 1:
            run = order[start:end].copy()
            keys = np.empty(end - start, dtype=np.uint64)
            for t in range(end - start):
                keys[t] = low[run[t]]
            inner = np.argsort(keys)
            for t in range(end - start):
                order[start + t] = run[inner[t]]
        start = end


@njit(cache=True, nogil=True, inline="always")
def _byte(w0: np.uint64, w1: np.uint64, at: np.int64, t: int) -> int:
    """Byte ``t`` of a value (view words ``w0, w1``; ``at``: where a long one lies)."""
    if np.int64(w0 & _LOW32) <= INLINE:
        if t < 4:
            return int((w0 >> np.uint64(32 + 8 * t)) & np.uint64(0xFF))
        return int((w1 >> np.uint64(8 * (t - 4))) & np.uint64(0xFF))
    return int(_load8(np.int64(at + t)))


@njit(cache=True, nogil=True)
def _before(views: NDArray[np.uint64], bases: NDArray[np.int64], a: int, b: int) -> bool:
    """Whether value ``a`` sorts before value ``b`` (bytes, then length)."""
    a0, a1 = views[a, 0], views[a, 1]
    b0, b1 = views[b, 0], views[b, 1]
    na, nb = np.int64(a0 & _LOW32), np.int64(b0 & _LOW32)
    at = _address(bases, a1) if na > INLINE else np.int64(0)
    bt = _address(bases, b1) if nb > INLINE else np.int64(0)
    for t in range(min(na, nb)):
        x = _byte(a0, a1, at, t)
        y = _byte(b0, b1, bt, t)
        if x != y:
            return x < y
    return bool(na < nb)


@njit(cache=True, nogil=True)
def _byte_order(
    views: NDArray[np.uint64], bases: NDArray[np.int64], rows: NDArray[np.int64]
) -> NDArray[np.int64]:
    """The order of values ``rows`` by their bytes (a merge sort comparing bytes)."""
    m = len(rows)
    order = np.arange(m)
    spare = np.empty(m, dtype=np.int64)
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(views, bases, rows[order[j]], rows[order[i]]):
                    spare[k] = order[j]
                    j += 1
                else:
                    spare[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                spare[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                spare[k] = order[j]
                j += 1
                k += 1
        order, spare = spare, order
        width *= 2
    return order


def sorted_order(tv: TextViews, rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """The order of the distinct values ``rows`` by their bytes, a value before any
    longer one it begins (polars' string order). Values of at most 12 bytes are sorted
    on two integer keys (numpy's sort, then runs of equal first keys); longer ones by a
    compiled merge sort comparing bytes."""
    high, low, short = _short_keys(tv.views, rows)
    if not short:
        return _byte_order(tv.views, tv.bases, rows)
    order = np.argsort(high)
    if len(order) > 1 and bool((np.diff(high[order]) == 0).any()):
        _settle_ties(order, high, low)
    return order


def dictionary_codes(
    series: pl.Series, codes: NDArray[np.uint32]
) -> tuple[pl.Series, NDArray[np.uint32]]:
    """Write each value's code, in order of first appearance, into ``codes``; return the
    sorted dictionary (distinct values by their bytes, the missing value last: what
    ``unique().sort()`` gives) and the rank of each code in it (``rank[code]``)."""
    if series.dtype != pl.String:
        series = series.cast(pl.String)
    tv = text_views(series)
    first = dense_codes(tv.views, tv.bases, tv.nulls, codes)
    order = sorted_order(tv, first)
    rank = np.empty(len(first) + 1, dtype=np.uint32)
    rank[order] = np.arange(len(first), dtype=np.uint32)
    rank[len(first)] = len(first)  # the missing value, last
    dictionary = series[first[order]] if len(first) else series.clear()
    if len(tv.nulls):
        dictionary = dictionary.extend(pl.Series(series.name, [None], dtype=pl.String))
    return dictionary, rank


def encode_text(series: pl.Series) -> tuple[NDArray[np.uint32], pl.Series]:
    """Codes of a text column in its sorted dictionary, and that dictionary
    (:func:`dictionary_codes`)."""
    codes = np.empty(len(series), dtype=np.uint32)
    dictionary, rank = dictionary_codes(series, codes)
    return rank[codes], dictionary


@dataclass(frozen=True)
class TextIndex:
    """Distinct texts prepared for exact look-ups (:func:`find_texts`): their views, an
    open-addressing table of their positions and their hashes; when every text is of at
    most 12 bytes, also their sort keys in order (``high``, ``low``: :func:`_short_keys`)
    and the position of each (``order``), for looking up many sorted values at once."""

    texts: TextViews
    table: NDArray[np.int64]
    hashes: NDArray[np.uint64]
    high: NDArray[np.uint64] | None = None
    low: NDArray[np.uint64] | None = None
    order: NDArray[np.int64] | None = None


def text_index(series: pl.Series) -> TextIndex:
    """Index distinct, non-missing texts (a hierarchy's leaves) by position."""
    tv = text_views(series)
    table, hashes = _index(tv.views, tv.bases)
    rows = np.arange(len(tv), dtype=np.int64)
    high, low, short = _short_keys(tv.views, rows)
    if not short:
        return TextIndex(tv, table, hashes)
    order = np.lexsort((low, high))
    return TextIndex(tv, table, hashes, high[order], low[order], order)


@njit(cache=True, nogil=True)
def _index(
    views: NDArray[np.uint64], bases: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
    n = len(views)
    size = 1 << _bits(max(16, 2 * n))
    table = np.full(size, -1, dtype=np.int64)
    hashes = np.empty(n, dtype=np.uint64)
    mask = np.int64(size - 1)
    shift = np.uint64(64 - _bits(size))
    for i in range(n):
        h = _value_hash(views, bases, i)
        hashes[i] = h
        slot = np.int64(h >> shift)
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = i
    return table, hashes


@njit(cache=True, nogil=True)
def _find(
    table: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    views: NDArray[np.uint64],
    bases: NDArray[np.int64],
    qviews: NDArray[np.uint64],
    qbases: NDArray[np.int64],
    qnulls: NDArray[np.bool_],
) -> NDArray[np.int64]:
    n = len(qviews)
    out = np.empty(n, dtype=np.int64)
    mask = np.int64(len(table) - 1)
    shift = np.uint64(64 - _bits(len(table)))
    for i in range(n):
        if len(qnulls) and qnulls[i]:
            out[i] = -1
            continue
        w0, w1 = qviews[i, 0], qviews[i, 1]
        h = _value_hash(qviews, qbases, i)
        slot = np.int64(h >> shift)
        found = -2
        while True:
            c = table[slot]
            if c < 0:
                break
            if hashes[c] == h:
                same = _same(views[c, 0], views[c, 1], w0, w1)
                if same < 0:
                    v1 = views[c, 1]
                    at = bases[np.int64(v1 & _LOW32)] + np.int64(v1 >> np.uint64(32))
                    qt = qbases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
                    same = 1 if _long_equal(at, qt, np.int64(w0 & _LOW32)) else 0
                if same > 0:
                    found = c
                    break
            slot = (slot + 1) & mask
        out[i] = found
    return out


@njit(cache=True, nogil=True)
def _merge(
    high: NDArray[np.uint64],
    low: NDArray[np.uint64],
    index_high: NDArray[np.uint64],
    index_low: NDArray[np.uint64],
    order: NDArray[np.int64],
    out: NDArray[np.int64],
) -> bool:
    """Positions of values in sorted order (their keys ``high``, ``low``) among the
    index's sorted keys, walking both once (-2: absent); False when the values are not
    in order (then nothing is decided)."""
    m = len(index_high)
    at = 0
    for i in range(len(high)):
        if i and (high[i] < high[i - 1] or (high[i] == high[i - 1] and low[i] < low[i - 1])):
            return False
        while at < m and (
            index_high[at] < high[i] or (index_high[at] == high[i] and index_low[at] < low[i])
        ):
            at += 1
        if at < m and index_high[at] == high[i] and index_low[at] == low[i]:
            out[i] = order[at]
        else:
            out[i] = -2
    return True


def find_texts(index: TextIndex, series: pl.Series) -> NDArray[np.int64]:
    """Position in the index of each value of ``series``: -1 for the missing value, -2
    for a value the index does not hold. Many values in sorted order (a dictionary) are
    found by walking the index's sorted keys once; others through its hash table."""
    q = text_views(series)
    t = index.texts
    n = len(q) - (1 if len(q.nulls) else 0)
    missing_last = not len(q.nulls) or (bool(q.nulls[-1]) and int(q.nulls.sum()) == 1)
    if index.order is not None and 8 * n >= len(index.order) and missing_last:
        rows = np.arange(n, dtype=np.int64)
        high, low, short = _short_keys(q.views, rows)
        assert index.high is not None and index.low is not None
        out = np.empty(len(q), dtype=np.int64)
        if short and _merge(high, low, index.high, index.low, index.order, out[:n]):
            out[n:] = -1
            return out
    return _find(
        index.table, index.hashes, t.views, t.bases, q.views, q.bases, q.nulls
    )  # fmt: skip


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
