"""A hierarchy as arrays, and its look-up arrays for one column dictionary, compiled.

:func:`compile_hierarchy` turns a hierarchy's rows into arrays once per hierarchy: its
leaves indexed for exact look-ups (``textcodes.text_index``) and, per level, each row's
label numbered in order of first appearance, with the leaves under each label.
:func:`level_maps` then gives, in one compiled pass per level over the dictionary's
values (never over the hierarchy's rows, except for a marker array per level no larger
than that level's labels), the code of every value at every level, numbering only the
generalized values present. Labels are made as they are read (:class:`LevelLabels`):
most searches read none.

``tests/engine/test_hierarchies.py`` checks the result against the definition on random
hierarchies and dictionaries (missing values, a single top value or several).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import polars as pl
from numba import njit
from numpy.typing import NDArray

from apps.engine.textcodes import TextIndex, dense_codes, text_index, text_views


@dataclass(frozen=True, eq=False)
class CompiledHierarchy:
    """Arrays of a hierarchy of ``L`` rows and height ``H``: ``codes[h, r]`` is the label
    of row ``r`` at level ``h + 1``, numbered in order of first appearance
    (``sizes[h]`` of them, whose texts are ``labels[h]``); the leaves under label ``g`` of
    level ``h + 1`` are ``leaves[leaf_at[h] + g]``."""

    index: TextIndex
    codes: NDArray[np.int32]
    sizes: NDArray[np.int64]
    leaves: NDArray[np.int64]
    leaf_at: NDArray[np.int64]
    labels: tuple[pl.Series, ...]
    #: Where each of these arrays lies in memory, with its length (:data:`ADDRESS_WORDS`
    #: words, the layout of ``hierarchies/lookups.py``): the look-ups of a table's
    #: columns read every hierarchy's arrays from one array of these rows, where a tuple
    #: of every array of every hierarchy would cost the compiled call more to receive
    #: than its work. Valid while this object lives (it holds the arrays).
    addresses: NDArray[np.int64]


#: The words of :attr:`CompiledHierarchy.addresses`: the height ``H`` and the rows ``L``;
#: the addresses of ``codes`` (int32 ``[H x L]``), ``sizes`` (``H``), ``leaves`` (and its
#: length) and ``leaf_at`` (``H + 1``); of the leaves' index: its hash table (and its
#: length), hashes (``L``), views (``[L x 2]``) and buffers' addresses (and their
#: number), and its sorted keys ``high``, ``low`` and ``order`` (``L`` each; 0: not made,
#: a leaf is longer than 12 bytes).
(
    HEIGHT, ROWS, CODES, SIZES, LEAVES, LEAVES_N, LEAF_AT, TABLE, TABLE_N, HASHES, TEXTS,
    BASES, BASES_N, HIGH, LOW, ORDER,
) = range(16)  # fmt: skip
ADDRESS_WORDS = 16


def _addresses(
    index: TextIndex,
    codes: NDArray[np.int32],
    sizes: NDArray[np.int64],
    leaves: NDArray[np.int64],
    leaf_at: NDArray[np.int64],
) -> NDArray[np.int64]:
    """:attr:`CompiledHierarchy.addresses` of these arrays."""
    words = np.zeros(ADDRESS_WORDS, dtype=np.int64)
    height, rows = codes.shape
    for array in (codes, sizes, leaves, leaf_at, index.table, index.hashes, index.texts.views):
        assert array.flags.c_contiguous
    words[HEIGHT], words[ROWS] = height, rows
    words[CODES], words[SIZES] = codes.ctypes.data, sizes.ctypes.data
    words[LEAVES], words[LEAVES_N] = leaves.ctypes.data, len(leaves)
    words[LEAF_AT] = leaf_at.ctypes.data
    words[TABLE], words[TABLE_N] = index.table.ctypes.data, len(index.table)
    words[HASHES], words[TEXTS] = index.hashes.ctypes.data, index.texts.views.ctypes.data
    words[BASES], words[BASES_N] = index.texts.bases.ctypes.data, len(index.texts.bases)
    if index.high is not None and index.low is not None and index.order is not None:
        keys = (index.high, index.low, index.order)
        assert all(k.flags.c_contiguous for k in keys)
        words[HIGH], words[LOW], words[ORDER] = (k.ctypes.data for k in keys)
    words.flags.writeable = False
    return words


def compile_hierarchy(rows: Sequence[Sequence[str]], height: int) -> CompiledHierarchy:
    """The arrays of a hierarchy given by its rows (leaf, level 1, ..., level H)."""
    n = len(rows)
    codes = np.empty((height, n), dtype=np.int32)
    sizes = np.zeros(height, dtype=np.int64)
    parts: list[NDArray[np.int64]] = []
    labels: list[pl.Series] = []
    scratch = np.empty(n, dtype=np.uint32)
    for h in range(height):
        column = pl.Series(f"level{h + 1}", [row[h + 1] for row in rows], dtype=pl.String)
        tv = text_views(column)
        first = dense_codes(tv.views, tv.bases, tv.nulls, scratch)
        codes[h] = scratch
        sizes[h] = len(first)
        parts.append(np.bincount(scratch, minlength=len(first)).astype(np.int64))
        labels.append(column[first])
    leaf_at = np.zeros(height + 1, dtype=np.int64)
    if height:
        np.cumsum(sizes, out=leaf_at[1:])
    leaves = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    index = text_index(pl.Series("leaf", [row[0] for row in rows], dtype=pl.String))
    addresses = _addresses(index, codes, sizes, leaves, leaf_at)
    return CompiledHierarchy(index, codes, sizes, leaves, leaf_at, tuple(labels), addresses)


@njit(cache=True, nogil=True)
def level_maps(
    positions: NDArray[np.int64],
    codes: NDArray[np.int32],
    sizes: NDArray[np.int64],
    leaves: NDArray[np.int64],
    leaf_at: NDArray[np.int64],
    top_single: bool,
) -> tuple[NDArray[np.uint32], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], bool]:
    """Look-up arrays of the ``n`` values of a dictionary whose leaf rows are
    ``positions`` (-1: the missing value), with the arrays of :class:`CompiledHierarchy`.

    Returns ``(maps, present, offsets, out_leaves, uncovered)``: ``maps[L, v]`` is the code of value
    ``v`` at level ``L`` (``maps[0]`` the identity); level ``L``'s generalized values are
    entries ``offsets[L] .. offsets[L + 1]`` of ``present`` (the hierarchy's label
    number, -1 for the missing value's own group, which comes last) and of
    ``out_leaves`` (leaves each covers). The missing value is a group of its own (one
    leaf) except at the top level when that is a single value (``top_single``), which
    it joins. ``uncovered``: some value is not a leaf (position -2, taken as missing
    here), for the caller to name (found in this pass: a call of its own to find it cost
    more than the pass)."""
    height = len(sizes)
    n = len(positions)
    missing = False
    uncovered = False
    for v in range(n):
        if positions[v] < 0:
            missing = True
            if positions[v] == -2:
                uncovered = True
    maps = np.empty((height + 1, n), dtype=np.uint32)
    offsets = np.zeros(height + 2, dtype=np.int64)
    present = np.empty(n * (height + 1) + height + 1, dtype=np.int64)
    out_leaves = np.empty(n * (height + 1) + height + 1, dtype=np.int64)
    for v in range(n):
        maps[0, v] = v
        present[v] = v
        out_leaves[v] = 1
    at = n
    offsets[1] = at
    for h in range(height):
        level = h + 1
        own = missing and not (level == height and top_single)
        size = sizes[h]
        row = codes[h]
        mark = np.full(size, -1, dtype=np.int64)
        for v in range(n):
            p = positions[v]
            if p >= 0:
                mark[row[p]] = 0
            elif not own:
                mark[row[0]] = 0  # (the single top value)
        count = 0
        for g in range(size):
            if mark[g] == 0:
                mark[g] = count
                present[at + count] = g
                out_leaves[at + count] = leaves[leaf_at[h] + g]
                count += 1
        for v in range(n):
            p = positions[v]
            if p >= 0:
                maps[level, v] = np.uint32(mark[row[p]])
            elif own:
                maps[level, v] = np.uint32(count)
            else:
                maps[level, v] = np.uint32(mark[row[0]])
        if own:
            present[at + count] = -1
            out_leaves[at + count] = 1
            count += 1
        at += count
        offsets[level + 1] = at
    return maps, present[:at].copy(), offsets, out_leaves[:at].copy(), uncovered


class LevelLabels(Sequence[tuple[str | None, ...]]):
    """``labels[L][code]``: the text of each generalized value at each level (None: the
    missing value), made from the arrays of :func:`level_maps` when a level is first
    read."""

    def __init__(
        self,
        dictionary: pl.Series,
        labels: tuple[pl.Series, ...],
        present: NDArray[np.int64],
        offsets: NDArray[np.int64],
    ) -> None:
        self._dictionary = dictionary
        self._labels = labels
        self._present = present
        self._offsets = offsets
        self._made: dict[int, tuple[str | None, ...]] = {}

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, level: int) -> tuple[str | None, ...]: ...
    @overload
    def __getitem__(self, level: slice) -> Sequence[tuple[str | None, ...]]: ...

    def __getitem__(
        self, level: int | slice
    ) -> tuple[str | None, ...] | Sequence[tuple[str | None, ...]]:
        if isinstance(level, slice):
            return [self[i] for i in range(*level.indices(len(self)))]
        if level < 0:
            level += len(self)
        if not 0 <= level < len(self):
            raise IndexError(level)
        made = self._made.get(level)
        if made is None:
            made = self._made[level] = self._make(level)
        return made

    def _make(self, level: int) -> tuple[str | None, ...]:
        if level == 0:
            return tuple(self._dictionary.to_list())
        ids = self._present[self._offsets[level] : self._offsets[level + 1]]
        own = len(ids) > 0 and ids[-1] < 0
        texts = self._labels[level - 1].gather(ids[:-1] if own else ids).to_list()
        return (*texts, *([None] if own else []))

    def __iter__(self) -> Iterator[tuple[str | None, ...]]:
        return (self[i] for i in range(len(self)))
