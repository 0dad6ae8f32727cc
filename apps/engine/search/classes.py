"""Equivalence classes of a lattice node, computed by roll-up on the compressed table.

A :class:`ClassTable` holds one row per equivalence class of a node: the generalized code
of each QI and the class size. The bottom node's table is the distinct-tuple table
itself. The table of a node ``N`` is computed from the table of any *less general*
node ``M <= N`` by mapping each column from level ``M_j`` to ``N_j`` (inter-level lookup
arrays) and re-grouping (ARX's roll-up; El Emam et al. 2009). Grouping combines the
generalized codes into one int64 key in mixed radix, re-numbered densely whenever its
range grows past a few times the rows, and counts with ``bincount`` (no sorting).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from apps.engine.search.problem import I64, U32, SearchProblem

#: Key ranges are kept within max(this, _SPARSITY x rows) by dense re-numbering.
_BINCOUNT_RANGE = 1 << 10
_SPARSITY = 4
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


def _dense(key: I64, span: int) -> tuple[I64, int]:
    """Re-number keys in ``[0, span)`` to ``[0, distinct)``, keeping their order."""
    present = np.zeros(span, dtype=bool)
    present[key] = True
    values = np.flatnonzero(present)  # (on bool: far faster than cumsum to int64)
    rank = np.empty(span, dtype=np.int64)
    rank[values] = np.arange(len(values), dtype=np.int64)
    return rank[key], len(values)


def _group(cols: list[U32], radix: list[int], sizes: I64) -> tuple[tuple[U32, ...], I64]:
    """Group rows with equal code tuples, summing ``sizes``.

    The key combines the codes in mixed radix, largest radices first; whenever the key's
    range would exceed a few times the number of rows it is first re-numbered densely
    (:func:`_dense`, linear time), so grouping ends in one ``bincount``: no sorting.
    A QI with one value at its level (radix 1) splits nothing and is left out.
    """
    m = len(sizes)
    if m == 0:
        return tuple(np.zeros(0, dtype=np.uint32) for _ in cols), sizes
    active = sorted((j for j, r in enumerate(radix) if r > 1), key=lambda j: -radix[j])
    if not active:
        total_size = np.array([int(sizes.sum())], dtype=np.int64)
        return tuple(np.zeros(1, dtype=np.uint32) for _ in cols), total_size
    limit = max(_BINCOUNT_RANGE, _SPARSITY * m)
    key = cols[active[0]].astype(np.int64)
    span = radix[active[0]]
    compressed = False
    for j in active[1:]:
        r = radix[j]
        if span * r > limit:
            key, span = _dense(key, span)
            compressed = True
        key *= r
        key += cols[j]
        span *= r
    weights = sizes.astype(np.float64)  # exact: sizes sum to at most 2**53 rows
    total = np.bincount(key, weights=weights, minlength=span)
    present = np.flatnonzero(total > 0)  # (flatnonzero on floats is several times slower)
    new_sizes = total[present].astype(np.int64)
    count = len(present)
    out: list[U32] = [np.zeros(count, dtype=np.uint32)] * len(cols)
    if compressed:
        # Group number of every row; a group's rows share their codes: scatter them.
        rank = np.zeros(span, dtype=np.int64)
        rank[present] = np.arange(count, dtype=np.int64)
        group = rank[key]
        for j in active:
            col = np.empty(count, dtype=np.uint32)
            col[group] = cols[j]
            out[j] = col
        return tuple(out), new_sizes
    rest = present
    for j in reversed(active):
        rest, digit = np.divmod(rest, radix[j])
        out[j] = digit.astype(np.uint32)
    return tuple(out), new_sizes


def roll_up(
    problem: SearchProblem,
    source: ClassTable,
    levels: tuple[int, ...],
    base_columns: BaseColumns | None = None,
) -> ClassTable:
    """Classes of node ``levels`` from the classes of a less general node ``source``.

    Needs consistent hierarchies unless ``source`` is the bottom node (whose codes are
    the original values, mapped through ``maps[L]`` directly, or taken from
    ``base_columns`` when it follows ``source``).
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
                col = (
                    base_columns.get(j, b)
                    if base_columns is not None and source is base_columns.base
                    else lk.maps[b][col]
                )
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


class BaseColumns:
    """The distinct tuples' codes generalized to each level, computed once per QI and
    level on first use (every roll-up from the bottom node needs them)."""

    def __init__(self, problem: SearchProblem, base: ClassTable) -> None:
        self.problem = problem
        self.base = base  # the table whose rows these columns follow
        self._columns: dict[tuple[int, int], U32] = {}

    def get(self, j: int, level: int) -> U32:
        col = self._columns.get((j, level))
        if col is None:
            col = self.problem.lookups[j].maps[level][self.problem.codes[j]]
            self._columns[(j, level)] = col
        return col


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
        self.base_columns = BaseColumns(problem, self.base)
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
        if levels == self.base.levels:
            # The bottom node's classes: the tuples, grouped in case some repeat
            # (build_problem allows it; roll-ups group them anyway).
            radix = [lk.values_at(0) for lk in self.problem.lookups]
            columns, sizes = _group(list(self.base.columns), radix, self.base.sizes)
            table = ClassTable(self.base.levels, columns, sizes)
            self.put(table)
            return table
        table = roll_up(self.problem, self.best_source(levels), levels, self.base_columns)
        self.put(table)
        return table
