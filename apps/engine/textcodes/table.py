"""Every text column of a table coded, each one's sorted dictionary made and the rows
grouped, in one compiled call (:func:`code_table`): what :func:`.dictionary.code_column`,
:func:`.dictionary.dictionary_series` and :func:`.codes.group_rows` do column by column,
without the Python and the compiled calls around each column.

The columns are handed over through Arrow's C data interface (``ArrowArray`` and
``ArrowSchema``, a stable layout of machine words): polars writes each column's
description into an array of words (``Series._export_arrow_to_c``, about a microsecond a
column, where ``to_arrow`` makes Python objects of the array and its buffers), and the
compiled call reads the string views where they lie, codes, sorts and groups, copies each
dictionary's bytes out, and releases the columns (their ``release`` callbacks) before it
returns. The dictionaries' views then point into those copied bytes, not into the
table's buffers: nothing of the table is held once the call has returned.

Measured on ARX's adult_subset (3,016 rows, 9 columns), A/B against the column-by-column
passes, alternating processes on a loaded machine (2 cores, load 6-8): the encoding of a
protocol run (``phases.py``, 300 runs, wall) took a median 0.46-0.62 ms against
0.96-1.12 ms, its thread time (1,000 runs) a minimum of 0.25-0.50 ms against 0.48-0.91 ms;
adult (30,162 rows), thread time, 200 runs: 2.09-2.18 ms against 2.44-2.54 ms (minimum).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numba.np.numpy_support import carray
from numpy.typing import NDArray

from apps.engine.textcodes.codes import group_rows
from apps.engine.textcodes.dictionary import _code_column
from apps.engine.textcodes.views import _LOW32, INLINE, TableViews, _load8, _load64, frozen

#: Words of an exported part of a column: its ``ArrowArray`` (words 0-9: length, null
#: count, offset, buffers, children, the buffers' addresses, ..., release at 8), its
#: ``ArrowSchema`` (words 10-18: format at 10, ..., release at 17) and the column it
#: belongs to (word 19).
_WORDS = 20
_SCHEMA, _OWNER = 10, 19
_ARRAY_RELEASE, _SCHEMA_RELEASE = 8, _SCHEMA + 7
#: The format of a string-view array in the C data interface.
_VIEW_FORMAT = (ord("v"), ord("u"), 0)
#: What the compiled call says in its first word.
DONE, NOT_VIEWS, TOO_LONG = 0, 1, 2


#: Pointers to 64-bit words and to bytes (what ``carray`` reads arrays from).
_WORD_POINTER = cast(Any, types.CPointer)(types.uint64)
_BYTE_POINTER = cast(Any, types.CPointer)(types.uint8)


@intrinsic
def _words_at_intrinsic(typingctx: Any, address: Any) -> Any:
    """A pointer to the 64-bit words at ``address`` (for ``carray``)."""
    signature = _WORD_POINTER(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


@intrinsic
def _bytes_at_intrinsic(typingctx: Any, address: Any) -> Any:
    """A pointer to the bytes at ``address`` (for ``carray``)."""
    signature = _BYTE_POINTER(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


@intrinsic
def _release_intrinsic(typingctx: Any, function: Any, structure: Any) -> Any:
    """Call the C function at address ``function`` with the pointer ``structure`` (an
    Arrow structure's ``release`` callback)."""
    signature = types.void(types.int64, types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        pointer = ir.IntType(8).as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [pointer])
        callee = builder.inttoptr(args[0], kind.as_pointer())
        builder.call(callee, [builder.inttoptr(args[1], pointer)])
        return context.get_dummy_value()

    return signature, codegen


_words_at = cast(Callable[[np.int64], Any], _words_at_intrinsic)
_bytes_at = cast(Callable[[np.int64], Any], _bytes_at_intrinsic)
_call = cast(Callable[[np.int64, np.int64], None], _release_intrinsic)


@njit(cache=True)
def _release(exported: NDArray[np.int64]) -> None:
    """Release every exported part not released yet (a released structure's ``release``
    is null)."""
    at = np.int64(exported.ctypes.data)
    for p in range(len(exported)):
        if exported[p, _ARRAY_RELEASE] != 0:
            _call(exported[p, _ARRAY_RELEASE], at + 8 * p * _WORDS)
        if exported[p, _SCHEMA_RELEASE] != 0:
            _call(exported[p, _SCHEMA_RELEASE], at + 8 * (p * _WORDS + _SCHEMA))


@njit(cache=True)
def _is_view(exported: NDArray[np.int64], p: int) -> bool:
    """Whether part ``p`` is a string-view array (format ``vu``, at least its validity,
    views and sizes buffers)."""
    form = exported[p, _SCHEMA]
    return bool(
        form != 0
        and exported[p, 3] >= 3
        and _load8(form) == _VIEW_FORMAT[0]
        and _load8(form + 1) == _VIEW_FORMAT[1]
        and _load8(form + 2) == _VIEW_FORMAT[2]
    )


@njit(cache=True)
def _column_views(
    exported: NDArray[np.int64], first: int, last: int, n: int
) -> tuple[NDArray[np.uint64], NDArray[np.int64], NDArray[np.bool_]]:
    """The views, data buffers' addresses and missing values (empty when none is) of the
    column exported in parts ``first .. last - 1`` (:class:`~.views.TextViews`' arrays):
    one part's views read where they lie, several parts' copied into one array, the
    buffer indexes of a later part's long values moved past the buffers before it."""
    buffers = 0
    for p in range(first, last):
        buffers += exported[p, 3] - 3
    bases = np.zeros(max(buffers, 1), dtype=np.int64)
    nulls = np.zeros(0, dtype=np.bool_)
    views = np.empty((0, 2), dtype=np.uint64)
    if last - first > 1:
        views = np.empty((n, 2), dtype=np.uint64)
    at = 0
    before = 0
    for p in range(first, last):
        length, offset, count = exported[p, 0], exported[p, 2], exported[p, 3]
        addresses = exported[p, 5]
        for b in range(count - 3):
            bases[before + b] = np.int64(_load64(addresses + 8 * (2 + b)))
        if length:
            where = np.int64(_load64(addresses + 8)) + 16 * offset
            words = carray(_words_at(where), (length, 2))
            if last - first == 1:
                views = words
            else:
                for i in range(length):
                    w0, w1 = words[i, 0], words[i, 1]
                    if (w0 & _LOW32) > INLINE:
                        w1 += np.uint64(before)
                    views[at + i, 0] = w0
                    views[at + i, 1] = w1
            validity = np.int64(_load64(addresses))
            if validity != 0 and exported[p, 1] != 0:
                bits = carray(_bytes_at(validity), ((offset + length + 7) // 8,))
                for i in range(length):
                    t = offset + i
                    if not (bits[t >> 3] >> (t & 7)) & 1:
                        if not len(nulls):
                            nulls = np.zeros(n, dtype=np.bool_)
                        nulls[at + i] = True
        at += length
        before += count - 3
    return views, bases, nulls


@njit(cache=True, inline="always")
def _grown(array: NDArray[Any], need: int | np.int64) -> NDArray[Any]:
    """``array``, or a copy of it at least twice as long when shorter than ``need``."""
    if need <= len(array):
        return array
    grown = np.empty(max(need, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


@njit(cache=True)
def _code_table(
    exported: NDArray[np.int64], d: int, n: int
) -> tuple[
    NDArray[np.int64],
    NDArray[np.uint32],
    NDArray[np.int64],
    NDArray[np.uint64],
    NDArray[np.uint8],
    NDArray[np.bool_],
]:
    """Code the ``d`` exported columns of ``n`` values, make each one's sorted dictionary
    and group the rows; release the columns. Returns ``facts``: :data:`DONE` (else why
    not done, and nothing else is meaningful), the address of the dictionaries' bytes
    (the one entry of their views' ``bases``), the size of each dictionary, then whether
    each holds the missing value; the grouped codes ``[d x t]`` and counts; and every
    dictionary one after the other: the views (a long value's pointing into the bytes,
    buffer 0), the bytes and which entry is the missing value. (Few arrays: for each
    array a compiled call returns, numba unpickles the array's Python type.)"""
    parts = len(exported)
    facts = np.zeros(2 + 2 * d, dtype=np.int64)
    for p in range(parts):
        if not _is_view(exported, p):
            facts[0] = NOT_VIEWS
    codes = np.empty((d, n), dtype=np.uint32)
    radix = np.zeros(d, dtype=np.int64)
    rank_at = np.zeros(d, dtype=np.int64)
    ranks = np.empty(0, dtype=np.uint32)
    dviews = np.empty(0, dtype=np.uint64)
    texts = np.empty(0, dtype=np.uint8)
    dnulls = np.empty(0, dtype=np.bool_)
    entries = 0
    used = np.int64(0)
    first = 0
    for j in range(d if facts[0] == DONE else 0):
        last = first
        while last < parts and exported[last, _OWNER] == j:
            last += 1
        views, bases, nulls = _column_views(exported, first, last, n)
        first = last
        rank, column_views, column_texts, ends = _code_column(views, bases, nulls, codes[j])
        m = len(ends)
        size = m + (1 if len(nulls) else 0)
        facts[2 + j] = size
        facts[2 + d + j] = 1 if len(nulls) else 0
        radix[j] = len(rank)
        if j:
            rank_at[j] = rank_at[j - 1] + radix[j - 1]
        ranks = _grown(ranks, rank_at[j] + radix[j])
        ranks[rank_at[j] : rank_at[j] + radix[j]] = rank
        dviews = _grown(dviews, 2 * (entries + size))
        texts = _grown(texts, used + len(column_texts))
        dnulls = _grown(dnulls, entries + size)
        texts[used : used + len(column_texts)] = column_texts
        start = np.int64(0)
        for g in range(m):
            w0, w1 = column_views[g, 0], column_views[g, 1]
            if (w0 & _LOW32) > INLINE:  # (its bytes, copied: buffer 0 at their offset)
                w1 = np.uint64(used + start) << np.uint64(32)
            dviews[2 * (entries + g)] = w0
            dviews[2 * (entries + g) + 1] = w1
            dnulls[entries + g] = False
            start = ends[g]
        if len(nulls):  # (the missing value, last: an empty view)
            dviews[2 * (entries + m)] = 0
            dviews[2 * (entries + m) + 1] = 0
            dnulls[entries + m] = True
        entries += size
        used += len(column_texts)
    if used >= np.int64(1) << np.int64(32):  # (past a view's 32-bit offset)
        facts[0] = TOO_LONG
    _release(exported)
    if facts[0] != DONE:
        nothing = np.zeros(0, dtype=np.uint8)
        return facts, codes[:, :0], radix[:0], dviews[:0].reshape(-1, 2), nothing, dnulls[:0]
    grouped, counts = group_rows(codes, radix, ranks, rank_at)
    texts = texts[:used]
    facts[1] = texts.ctypes.data
    return facts, grouped, counts, dviews[: 2 * entries].reshape(-1, 2), texts, dnulls[:entries]


_NO_NULLS = np.zeros(0, dtype=np.bool_)
_NO_NULLS.flags.writeable = False
_VIEW = pa.string_view()


@dataclass(frozen=True)
class CodedTable:
    """The text columns of a table coded by :func:`code_table`: the distinct rows of
    ranks (``grouped``, ``[d x t]``, each code the value's place in its column's sorted
    dictionary) and the rows of each (``counts``), the dictionaries as String Series
    (sorted, the missing value last) and their views, one after the other
    (:class:`~.views.TableViews`, a long value's read from the dictionaries' own bytes)."""

    grouped: NDArray[np.uint32]
    counts: NDArray[np.int64]
    dictionaries: tuple[pl.Series, ...]
    views: TableViews


def code_table(columns: Sequence[pl.Series]) -> CodedTable | None:
    """Code String columns of one length (:mod:`this module <.table>`): the same codes,
    dictionaries and grouped rows as :func:`~.dictionary.code_column`,
    :func:`~.dictionary.dictionary_series` and :func:`~.codes.group_rows`. None when a
    column is not handed over as string views, or the dictionaries' bytes reach 4 GiB
    (then code them column by column)."""
    d = len(columns)
    n = len(columns[0]) if d else 0
    parts: list[pl.Series] = []
    owners: list[int] = []
    for j, series in enumerate(columns):
        if series.n_chunks() == 1:
            parts.append(series)
            owners.append(j)
        else:  # (each chunk exported on its own; the compiled call puts them together)
            chunks = series.get_chunks()
            parts.extend(chunks)
            owners.extend([j] * len(chunks))
    exported = np.zeros((len(parts), _WORDS), dtype=np.int64)
    exported[:, _OWNER] = owners
    at = exported.ctypes.data
    try:
        for p, part in enumerate(parts):
            part._export_arrow_to_c(at + 8 * _WORDS * p, at + 8 * (_WORDS * p + _SCHEMA))
        facts, grouped, counts, dviews, texts, dnulls = _code_table(exported, d, n)
    except BaseException:
        _release(exported)  # (whatever was exported and not released yet)
        raise
    if facts[0] != DONE:
        return None
    known = facts.tolist()
    sizes, missing = known[2 : 2 + d], known[2 + d :]
    # (read-only, as text_views' arrays: the look-ups' compiled code serves both)
    bases = facts[1:2]
    for array in (dviews, dnulls, bases):
        array.flags.writeable = False
    bitmap = pa.py_buffer(np.packbits(~dnulls, bitorder="little")) if any(missing) else None
    whole = pl.Series(
        "",
        pa.Array.from_buffers(
            _VIEW, len(dnulls), [bitmap, pa.py_buffer(dviews), pa.py_buffer(texts)]
        ),
        dtype=pl.String,
    )
    dictionaries = []
    start = 0
    for series, size in zip(columns, sizes, strict=True):
        dictionaries.append(whole.slice(start, size).alias(series.name))
        start += size
    starts = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    base_at = np.zeros(d, dtype=np.int64)
    frozen(starts, base_at)
    nulls = dnulls if any(missing) else _NO_NULLS
    views = TableViews(dviews, bases, base_at, nulls, starts, (texts,))
    return CodedTable(grouped, counts, tuple(dictionaries), views)
