"""A String column's Arrow string views (:class:`TextViews`) and the compiled reads of them:
the bytes of a long value, hashes of short and long values, and exact equality.
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
#: The bases of a column without data buffers (every value held in its view).
_NO_BASES = np.zeros(1, dtype=np.int64)
_NO_BASES.flags.writeable = False
_VIEW = pa.string_view()
#: (asking polars for its newest level costs more than the conversion of a small column)
_NEWEST = pl.CompatLevel.newest()


def text_views(series: pl.Series) -> TextViews:
    """The views of a String column, without copying when it is one chunk (views of
    several chunks are copied into one array, their buffer indexes moved along); long
    values are read where they lie, through their buffers' addresses."""
    if not isinstance(series.dtype, pl.String):  # (isinstance: polars' == runs Python)
        series = series.cast(pl.String)
    nulls = series.is_null().to_numpy() if series.null_count() else _NO_NULLS
    if series.n_chunks() == 1:
        single = _one_chunk(series, nulls)
        if single is not None:
            return single
    chunks = series.get_chunks() if series.n_chunks() > 1 else [series]
    arrays = [c.to_arrow(compat_level=_NEWEST) for c in chunks]
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


def _one_chunk(series: pl.Series, nulls: NDArray[np.bool_]) -> TextViews | None:
    """:func:`text_views` of a column of one chunk that polars hands over as views (the
    usual case), in fewer steps; None otherwise."""
    array = series.to_arrow(compat_level=_NEWEST)
    if array.type != _VIEW or not len(array):
        return None
    raw = array.buffers()
    views = np.frombuffer(raw[1], dtype=np.uint64).reshape(-1, 2)
    if array.offset or len(views) != len(array):
        views = np.ascontiguousarray(views[array.offset : array.offset + len(array)])
    views.flags.writeable = False
    if len(raw) > 2:
        bases = np.array([b.address for b in raw[2:] if b is not None] or [0], dtype=np.int64)
        bases.flags.writeable = False
    else:  # (short values only: no data buffer)
        bases = _NO_BASES
    if len(nulls):
        nulls.flags.writeable = False
    return TextViews(views, bases, nulls, (raw,))


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
def _table_hash(w0: np.uint64, at: np.int64, n: np.int64) -> np.uint64:
    """A cheaper hash of the ``n > 12`` bytes at ``at`` (``w0``: the view's first word,
    its length and first 4 bytes), for a hash table in which values are then compared
    exactly (:func:`~apps.engine.textcodes.codes.dense_codes`): one multiply per 8
    bytes and one :func:`_fold` at the end, where :func:`_long_hash` mixes every word
    fully (measured on adult's long values: coding 25-35 % faster)."""
    h = w0
    t = np.int64(4)
    while t + 8 < n:
        h = (h ^ _load64(at + t)) * np.uint64(0x9E3779B97F4A7C15)
        t += 8
    return _fold(h, _load64(at + n - 8))


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


@dataclass(frozen=True)
class TableViews:
    """The views of several columns' values one after the other (a table's dictionaries),
    for passes over all the columns in one compiled call: column ``j``'s values are
    entries ``starts[j] .. starts[j + 1]`` of ``views`` and of ``nulls`` (``nulls`` empty
    when no value of any column is missing), its long values read through
    ``bases[base_at[j]:]``. Every array read-only (one compiled version serves both
    makers: :func:`joined_views` and ``textcodes.code_table``)."""

    views: NDArray[np.uint64]
    bases: NDArray[np.int64]
    base_at: NDArray[np.int64]
    nulls: NDArray[np.bool_]
    starts: NDArray[np.int64]
    keep: tuple[object, ...]

    def __len__(self) -> int:
        return len(self.starts) - 1

    def column(self, j: int) -> TextViews:
        """Column ``j``'s views as :class:`TextViews` (``nulls`` empty when none of its
        values is missing)."""
        a, b = int(self.starts[j]), int(self.starts[j + 1])
        nulls = self.nulls[a:b] if len(self.nulls) and self.nulls[a:b].any() else _NO_NULLS
        return TextViews(self.views[a:b], self.bases[int(self.base_at[j]) :], nulls, self.keep)


def frozen(*arrays: NDArray[Any]) -> None:
    """Make arrays read-only (the form in which :class:`TableViews` holds them)."""
    for array in arrays:
        array.flags.writeable = False


def joined_views(parts: tuple[TextViews, ...] | list[TextViews]) -> TableViews:
    """Columns' views (:func:`text_views`, ``code_column``) one after the other, as
    :class:`TableViews` (copied into one array of each kind)."""
    sizes = [len(p) for p in parts]
    starts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    base_at = np.zeros(len(parts), dtype=np.int64)
    if parts:
        np.cumsum([len(p.bases) for p in parts[:-1]], out=base_at[1:])
    views = (
        np.ascontiguousarray(np.concatenate([p.views for p in parts]))
        if parts
        else np.zeros((0, 2), dtype=np.uint64)
    )
    bases = np.concatenate([p.bases for p in parts]) if parts else _NO_BASES.copy()
    if any(len(p.nulls) for p in parts):
        nulls = np.concatenate(
            [p.nulls if len(p.nulls) else np.zeros(len(p), dtype=np.bool_) for p in parts]
        )
    else:
        nulls = _NO_NULLS.copy()
    frozen(views, bases, base_at, nulls, starts)
    return TableViews(views, bases, base_at, nulls, starts, tuple(p.keep for p in parts))
