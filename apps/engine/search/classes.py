"""Equivalence classes of a lattice node, computed by roll-up on the compressed table.

A :class:`ClassTable` holds one row per equivalence class of a node: the generalized code
of each QI and the class size. The bottom node's table is the distinct-tuple table
itself. The table of a node ``N`` is computed from the table of any *less general*
node ``M <= N`` by mapping each column from level ``M_j`` to ``N_j`` (inter-level lookup
arrays, :attr:`SearchProblem.flat_maps`) and re-grouping (ARX's roll-up; El Emam et al.
2009), in one compiled pass (:func:`kernels.roll_up_group`) that also summarizes the
classes under ``k``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from apps.engine.search import kernels
from apps.engine.search.problem import I64, SearchProblem
from apps.engine.search.problem import Codes as Codes

_EMPTY = np.iinfo(np.int16).max


@dataclass(frozen=True, eq=False)
class ClassTable:
    """Equivalence classes of one node: generalized codes (``[d x classes]``, row ``j``
    = QI ``j``), class sizes, and the summary under ``k`` (:mod:`kernels` slots)."""

    levels: tuple[int, ...]
    columns: Codes
    sizes: I64
    summary: I64
    k: int

    @property
    def classes(self) -> int:
        return len(self.sizes)

    @property
    def nbytes(self) -> int:
        return int(self.sizes.nbytes + self.columns.nbytes)


class Scratch:
    """Working memory of :func:`kernels.roll_up_group`, reused across calls: each call
    gets a new epoch, so nothing is cleared between calls."""

    def __init__(self) -> None:
        self._array = np.zeros((2, 0), dtype=np.int64)
        self._epoch = 0

    def take(self, rows: int) -> tuple[I64, int]:
        need = kernels.scratch_size(rows)
        self._epoch += 1
        if self._array.shape[1] < need or self._epoch >= 1 << 31:
            self._array = np.zeros((2, max(need, 2 * self._array.shape[1])), dtype=np.int64)
            self._epoch = 1
        return self._array, self._epoch


def base_table(problem: SearchProblem, k: int = 1) -> ClassTable:
    """The bottom node's table: the distinct tuples themselves (level 0 = identity).
    Its summary is computed by grouping, as tuples may repeat (``build_problem``)."""
    levels = (0,) * problem.dimensions
    codes, sizes, summary = _group(
        problem, problem.codes, problem.counts, levels, levels, k, Scratch()
    )
    return ClassTable(levels, codes, sizes, summary, k)


def _group(
    problem: SearchProblem,
    codes: Codes,
    sizes: I64,
    source: tuple[int, ...],
    levels: tuple[int, ...],
    k: int,
    scratch: Scratch,
) -> tuple[Codes, I64, I64]:
    work, epoch = scratch.take(len(sizes))
    return kernels.roll_up_levels(
        codes,
        sizes,
        np.asarray(source, dtype=np.int64),
        np.asarray(levels, dtype=np.int64),
        problem.flat_maps,
        problem.map_offsets,
        problem.level_values,
        k,
        work,
        epoch,
    )


def roll_up(
    problem: SearchProblem,
    source: ClassTable,
    levels: tuple[int, ...],
    k: int | None = None,
    scratch: Scratch | None = None,
) -> ClassTable:
    """Classes of node ``levels`` from the classes of a less general node ``source``,
    summarized under ``k`` (default: the source's ``k``).

    Needs consistent hierarchies unless ``source`` is the bottom node (whose codes are
    the original values, mapped through ``maps[L]`` directly).
    """
    k = source.k if k is None else k
    if tuple(source.levels) == tuple(levels) and k == source.k:
        return source
    codes, sizes, summary = _group(
        problem, source.columns, source.sizes, source.levels, levels, k, scratch or Scratch()
    )
    return ClassTable(tuple(levels), codes, sizes, summary, k)


class TableCache:
    """Class tables of evaluated nodes, least-recently-used first out, bounded in bytes.

    :meth:`best_source` finds the cached node ``M <= N`` with the fewest classes, the
    cheapest starting point for rolling up ``N``. Levels of cached nodes are kept in one
    array (slots reused after eviction) scanned by :func:`kernels.smallest_below`.
    Tables are summarized under ``k`` (the criterion's release size).
    """

    def __init__(self, problem: SearchProblem, max_bytes: int = 512 << 20, k: int = 1) -> None:
        self.problem = problem
        self.max_bytes = max_bytes
        self.k = k
        self.scratch = Scratch()
        self.base = base_table(problem, k)
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
        slot = kernels.smallest_below(
            self._levels, self._classes, np.asarray(levels, dtype=np.int16)
        )
        if slot < 0 or self._classes[slot] >= self.base.classes:
            return self.base
        key = self._keys[slot]
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
            return self.base
        source = self.best_source(levels)
        if source is self.base and self.problem.consistent:
            # Most nodes first met from the bottom share their pattern of level-0 QIs:
            # roll up through that pattern's node with every other QI at level 1
            # (cached, far fewer classes than the tuples).
            hub = tuple(min(lv, 1) for lv in levels)
            if hub != levels:
                source = self.table(hub)
        table = roll_up(self.problem, source, levels, self.k, self.scratch)
        self.put(table)
        return table
