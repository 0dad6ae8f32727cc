"""Distinct texts prepared for exact look-ups (:class:`TextIndex`, a hierarchy's leaves) and
the positions of a column's values in them (:func:`find_texts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numba import njit
from numpy.typing import NDArray

from apps.engine.textcodes.order import _short_keys
from apps.engine.textcodes.views import (
    _LOW32,
    TextViews,
    _bits,
    _long_equal,
    _same,
    _value_hash,
    text_views,
)


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
    views: NDArray[np.uint64],
    values: int,
    index_high: NDArray[np.uint64],
    index_low: NDArray[np.uint64],
    order: NDArray[np.int64],
) -> tuple[NDArray[np.int64], bool]:
    """Positions of the first ``values`` values among the index's sorted keys, walking
    both once (-2: absent), the values after them missing (-1); False when a value is
    longer than 12 bytes or the values are not in order (then nothing is decided). One
    compiled call: the values' sort keys (:func:`_short_keys`) are made here."""
    out = np.empty(len(views), dtype=np.int64)
    high, low, short = _short_keys(views, np.arange(values))
    if not short:
        return out, False
    m = len(index_high)
    at = 0
    for i in range(values):
        if i and (high[i] < high[i - 1] or (high[i] == high[i - 1] and low[i] < low[i - 1])):
            return out, False
        while at < m and (
            index_high[at] < high[i] or (index_high[at] == high[i] and index_low[at] < low[i])
        ):
            at += 1
        if at < m and index_high[at] == high[i] and index_low[at] == low[i]:
            out[i] = order[at]
        else:
            out[i] = -2
    out[values:] = -1
    return out, True


def find_texts(
    index: TextIndex, series: pl.Series, views: TextViews | None = None
) -> NDArray[np.int64]:
    """Position in the index of each value of ``series``: -1 for the missing value, -2
    for a value the index does not hold. Many values in sorted order (a dictionary) are
    found by walking the index's sorted keys once; others through its hash table.
    ``views``: the values' views when known already (a dictionary coded by
    ``textcodes.code_column``), instead of reading them from ``series``."""
    q = text_views(series) if views is None else views
    t = index.texts
    n = len(q) - (1 if len(q.nulls) else 0)
    missing_last = not len(q.nulls) or (bool(q.nulls[-1]) and int(q.nulls.sum()) == 1)
    if index.order is not None and 8 * n >= len(index.order) and missing_last:
        assert index.high is not None and index.low is not None
        out, merged = _merge(q.views, n, index.high, index.low, index.order)
        if merged:
            return out
    return _find(
        index.table, index.hashes, t.views, t.bases, q.views, q.bases, q.nulls
    )  # fmt: skip
