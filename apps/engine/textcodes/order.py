"""The distinct values in polars' string order (:func:`sorted_order`: two integer keys for
short values, a compiled merge sort on bytes for long ones).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.textcodes.views import (
    _LOW32,
    INLINE,
    TextViews,
    _address,
    _load8,
    _short,
)


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
