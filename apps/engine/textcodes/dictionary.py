"""A text column's codes and its sorted dictionary in one compiled call per column
(:func:`code_column`), and the dictionaries of several columns made into polars Series at
once (:func:`dictionary_series`): no gather per column, no Python per value.

:func:`code_column` codes the values in order of first appearance
(:func:`~apps.engine.textcodes.codes.dense_codes`), sorts the distinct values by their
bytes (polars' string order: :mod:`.order`), ranks each code in that order and copies the
distinct values, sorted, into one byte array; it also keeps their views
(:class:`ColumnCodes`), with which a hierarchy finds them without reading the dictionary
back from polars (``find_texts(..., views=...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
from numba import njit
from numpy.typing import NDArray

from apps.engine.textcodes.codes import dense_codes
from apps.engine.textcodes.order import _byte_order, _settle_ties, _short_keys
from apps.engine.textcodes.views import _LOW32, INLINE, TextViews, _load8, text_views


@njit(cache=True, nogil=True)
def _sorted_rows(
    views: NDArray[np.uint64], bases: NDArray[np.int64], rows: NDArray[np.int64]
) -> NDArray[np.int64]:
    """:func:`~apps.engine.textcodes.order.sorted_order`, compiled (the distinct values
    ``rows`` in polars' string order: their positions in ``rows``)."""
    high, low, short = _short_keys(views, rows)
    if not short:
        return _byte_order(views, bases, rows)
    order = np.argsort(high)
    for t in range(1, len(order)):
        if high[order[t]] == high[order[t - 1]]:
            _settle_ties(order, high, low)
            break
    return order


@njit(cache=True, nogil=True)
def _code_column(
    views: NDArray[np.uint64],
    bases: NDArray[np.int64],
    nulls: NDArray[np.bool_],
    codes: NDArray[np.uint32],
) -> tuple[NDArray[np.uint32], NDArray[np.uint64], NDArray[np.uint8], NDArray[np.int64]]:
    first = dense_codes(views, bases, nulls, codes)
    order = _sorted_rows(views, bases, first)
    m = len(first)
    rank = np.empty(m + 1, dtype=np.uint32)
    for g in range(m):
        rank[order[g]] = np.uint32(g)
    rank[m] = np.uint32(m)  # the missing value, last
    dviews = np.empty((m, 2), dtype=np.uint64)
    ends = np.empty(m, dtype=np.int64)
    total = np.int64(0)
    for g in range(m):
        row = first[order[g]]
        dviews[g, 0] = views[row, 0]
        dviews[g, 1] = views[row, 1]
        total += np.int64(views[row, 0] & _LOW32)
        ends[g] = total
    texts = np.empty(total, dtype=np.uint8)
    at = np.int64(0)
    for g in range(m):
        w0, w1 = dviews[g, 0], dviews[g, 1]
        length = np.int64(w0 & _LOW32)
        if length <= INLINE:
            for t in range(length):
                if t < 4:
                    texts[at + t] = np.uint8((w0 >> np.uint64(32 + 8 * t)) & np.uint64(0xFF))
                else:
                    texts[at + t] = np.uint8((w1 >> np.uint64(8 * (t - 4))) & np.uint64(0xFF))
        else:
            where = bases[np.int64(w1 & _LOW32)] + np.int64(w1 >> np.uint64(32))
            for t in range(length):
                texts[at + t] = _load8(where + t)
        at += length
    return rank, dviews, texts, ends


_MISSING_VIEW = np.zeros((1, 2), dtype=np.uint64)


@dataclass(frozen=True)
class ColumnCodes:
    """One column coded by :func:`code_column`: ``rank[code]`` is the place in the sorted
    dictionary of the value coded ``code`` (the missing value's code, the last, ranks
    last); ``texts`` holds the distinct values' bytes in that order, value ``g`` ending
    at ``ends[g]``; ``views`` are the views of the dictionary's values (the missing value
    last, when there is one), read through the column's buffers."""

    name: str
    rank: NDArray[np.uint32]
    texts: NDArray[np.uint8]
    ends: NDArray[np.int64]
    views: TextViews

    @property
    def missing(self) -> bool:
        return len(self.views.nulls) > 0


def code_column(series: pl.Series, codes: NDArray[np.uint32]) -> ColumnCodes:
    """Write each value's code, in order of first appearance, into ``codes``; the rank
    of each code in the sorted dictionary, the dictionary's bytes and views."""
    tv = text_views(series)
    rank, dviews, texts, ends = _code_column(tv.views, tv.bases, tv.nulls, codes)
    nulls = tv.nulls  # (none: read-only already)
    if len(tv.nulls):
        dviews = np.concatenate((dviews, _MISSING_VIEW))
        nulls = np.zeros(len(dviews), dtype=np.bool_)
        nulls[-1] = True
        nulls.flags.writeable = False
    # (read-only, as text_views' arrays: the look-ups' compiled code serves both)
    dviews.flags.writeable = False
    return ColumnCodes(series.name, rank, texts, ends, TextViews(dviews, tv.bases, nulls, tv.keep))


def dictionary_series(columns: Sequence[ColumnCodes]) -> list[pl.Series]:
    """The sorted dictionary of each coded column as a String Series named after it (the
    missing value last): one Arrow array of every column's values, cut into slices."""
    sizes = [len(c.ends) + int(c.missing) for c in columns]
    count = sum(sizes)
    offsets = np.zeros(count + 1, dtype=np.int64)
    valid = np.ones(count, dtype=np.bool_)
    at = before = 0
    for column, size in zip(columns, sizes, strict=True):
        m = len(column.ends)
        offsets[at + 1 : at + m + 1] = column.ends + before
        before += int(column.ends[-1]) if m else 0
        if column.missing:
            offsets[at + m + 1] = before
            valid[at + m] = False
        at += size
    texts = np.concatenate([c.texts for c in columns]) if columns else np.zeros(0, np.uint8)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    array = pa.Array.from_buffers(
        pa.large_utf8(), count, [bitmap, pa.py_buffer(offsets), pa.py_buffer(texts)]
    )
    whole = pl.Series("", array, dtype=pl.String)
    out = []
    at = 0
    for column, size in zip(columns, sizes, strict=True):
        out.append(whole.slice(at, size).alias(column.name))
        at += size
    return out


def dictionary_codes(
    series: pl.Series, codes: NDArray[np.uint32]
) -> tuple[pl.Series, NDArray[np.uint32]]:
    """Write each value's code, in order of first appearance, into ``codes``; return the
    sorted dictionary (distinct values by their bytes, the missing value last: what
    ``unique().sort()`` gives) and the rank of each code in it (``rank[code]``)."""
    coded = code_column(series, codes)
    return dictionary_series([coded])[0], coded.rank


def encode_text(series: pl.Series) -> tuple[NDArray[np.uint32], pl.Series]:
    """Codes of a text column in its sorted dictionary, and that dictionary
    (:func:`dictionary_codes`)."""
    codes = np.empty(len(series), dtype=np.uint32)
    dictionary, rank = dictionary_codes(series, codes)
    return rank[codes], dictionary
