"""Equivalence classes of a lattice node, computed by roll-up on the compressed table.

A :class:`ClassTable` holds one row per equivalence class of a node: the generalized code
of each QI and the class size. The bottom node's table is the distinct-tuple table
itself. The table of a node ``N`` is computed from the table of any *less general*
node ``M <= N`` by mapping each column from level ``M_j`` to ``N_j`` (inter-level lookup
arrays) and re-grouping (ARX's roll-up; El Emam et al. 2009). Grouping combines the
generalized codes into one int64 key in mixed radix and either counts with ``bincount``
(small key range) or sorts (``np.unique``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from apps.engine.search.problem import I64, U32, SearchProblem

#: Key ranges up to max(this, _SPARSITY x classes) are grouped by bincount, not sorting.
_BINCOUNT_RANGE = 1 << 10
_SPARSITY = 8
_KEY_LIMIT = 1 << 62
_EMPTY = np.iinfo(np.int16).max


@dataclass(frozen=True, eq=False)
class ClassTable:
    """Equivalence classes of one node: generalized codes per QI and class sizes."""

    levels: tuple[int, ...]
    columns: tuple[U32, ...]
    sizes: I64

    @property
    def classes(self) -> int:
        return len(self.sizes)

    @property
    def nbytes(self) -> int:
        return int(self.sizes.nbytes + sum(c.nbytes for c in self.columns))


def base_table(problem: SearchProblem) -> ClassTable:
    """The bottom node's table: the distinct tuples themselves (level 0 = identity)."""
    return ClassTable((0,) * problem.dimensions, problem.codes, problem.counts)


def _group(cols: list[U32], radix: list[int], sizes: I64) -> tuple[tuple[U32, ...], I64]:
    """Group rows with equal code tuples, summing ``sizes``."""
    m = len(sizes)
    if m == 0:
        return tuple(np.zeros(0, dtype=np.uint32) for _ in cols), sizes
    key = cols[0].astype(np.int64)
    span = radix[0]
    compressed = False
    for col, r in zip(cols[1:], radix[1:], strict=True):
        if span * r >= _KEY_LIMIT:  # re-number the partial key densely to stay in int64
            uniq, key = np.unique(key, return_inverse=True)
            span = len(uniq)
            compressed = True
        key *= r
        key += col
        span *= r
    if not compressed and span <= max(_BINCOUNT_RANGE, _SPARSITY * m):
        weights = sizes.astype(np.float64)  # exact: sizes sum to at most 2**53 rows
        total = np.bincount(key, weights=weights, minlength=span)
        present = np.flatnonzero(total)
        new_sizes = total[present].astype(np.int64)
        out: list[U32] = [np.empty(0, dtype=np.uint32)] * len(cols)
        rest = present
        for j in range(len(cols) - 1, -1, -1):
            rest, digit = np.divmod(rest, radix[j])
            out[j] = digit.astype(np.uint32)
        return tuple(out), new_sizes
    bits = max(int(sizes.max()).bit_length(), 1)
    if not compressed and span < (1 << (62 - bits)):
        # Sort key and size packed in one int64: a plain sort (no argsort + gathers).
        packed = np.sort((key << bits) | sizes)
        keys = packed >> bits
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        new_sizes = np.add.reduceat(packed & ((1 << bits) - 1), starts)
        out = [np.empty(0, dtype=np.uint32)] * len(cols)
        rest = keys[starts]
        for j in range(len(cols) - 1, -1, -1):
            rest, digit = np.divmod(rest, radix[j])
            out[j] = digit.astype(np.uint32)
        return tuple(out), new_sizes.astype(np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    new_sizes = np.bincount(inverse, weights=sizes.astype(np.float64)).astype(np.int64)
    return tuple(c[first] for c in cols), new_sizes


def roll_up(problem: SearchProblem, source: ClassTable, levels: tuple[int, ...]) -> ClassTable:
    """Classes of node ``levels`` from the classes of a less general node ``source``.

    Needs consistent hierarchies unless ``source`` is the bottom node (whose codes are
    the original values, mapped through ``maps[L]`` directly).
    """
    cols: list[U32] = []
    radix: list[int] = []
    bottom = all(a == 0 for a in source.levels)
    for j, (a, b) in enumerate(zip(source.levels, levels, strict=True)):
        lk = problem.lookups[j]
        if a > b:
            raise ValueError(f"cannot roll up from level {a} to level {b}")
        col = source.columns[j]
        if a != b:
            if bottom:
                col = lk.maps[b][col]
            else:
                assert problem.upmaps is not None, "roll-up needs consistent hierarchies"
                upmap = problem.upmaps[j][a][b]
                assert upmap is not None
                col = upmap[col]
        cols.append(col)
        radix.append(lk.values_at(b))
    if all(a == b for a, b in zip(source.levels, levels, strict=True)):
        return source
    columns, sizes = _group(cols, radix, source.sizes)
    return ClassTable(tuple(levels), columns, sizes)


class TableCache:
    """Class tables of evaluated nodes, least-recently-used first out, bounded in bytes.

    :meth:`best_source` finds the cached node ``M <= N`` with the fewest classes, the
    cheapest starting point for rolling up ``N``. Levels of cached nodes are kept in one
    array (slots reused after eviction) so that this is one vectorized comparison.
    """

    def __init__(self, problem: SearchProblem, max_bytes: int = 512 << 20) -> None:
        self.problem = problem
        self.max_bytes = max_bytes
        self.base = base_table(problem)
        self._tables: OrderedDict[tuple[int, ...], tuple[int, ClassTable]] = OrderedDict()
        self._bytes = 0
        # Empty slots hold level _EMPTY, which is never <= a node, so they never match.
        self._levels = np.full((64, problem.dimensions), _EMPTY, dtype=np.int16)
        self._classes = np.zeros(64, dtype=np.int64)
        self._keys: list[tuple[int, ...] | None] = [None] * 64
        self._free = list(range(63, -1, -1))

    def _slot(self) -> int:
        if not self._free:
            n = len(self._keys)
            self._levels = np.concatenate([self._levels, np.full_like(self._levels, _EMPTY)])
            self._classes = np.concatenate([self._classes, np.zeros_like(self._classes)])
            self._keys.extend([None] * n)
            self._free = list(range(2 * n - 1, n - 1, -1))
        return self._free.pop()

    def put(self, table: ClassTable) -> None:
        if table.levels in self._tables or table.classes == 0:
            return
        if table.nbytes > self.max_bytes // 4 or not self.problem.consistent:
            return
        slot = self._slot()
        self._levels[slot] = table.levels
        self._classes[slot] = table.classes
        self._keys[slot] = table.levels
        self._tables[table.levels] = (slot, table)
        self._bytes += table.nbytes
        while self._bytes > self.max_bytes and self._tables:
            key, (old_slot, old) = self._tables.popitem(last=False)
            self._bytes -= old.nbytes
            self._keys[old_slot] = None
            self._levels[old_slot] = _EMPTY
            self._free.append(old_slot)

    def best_source(self, levels: tuple[int, ...]) -> ClassTable:
        """Cached table of a node ``<= levels`` with the fewest classes (or the base)."""
        if not self._tables:
            return self.base
        below = np.all(self._levels <= np.asarray(levels, dtype=np.int16), axis=1)
        if not below.any():
            return self.base
        cand = np.flatnonzero(below)
        key = self._keys[int(cand[np.argmin(self._classes[cand])])]
        assert key is not None
        self._tables.move_to_end(key)
        return self._tables[key][1]

    def table(self, levels: tuple[int, ...]) -> ClassTable:
        """Classes of node ``levels``, rolled up from the best cached source, cached."""
        hit = self._tables.get(levels)
        if hit is not None:
            self._tables.move_to_end(levels)
            return hit[1]
        table = roll_up(self.problem, self.best_source(levels), levels)
        self.put(table)
        return table
