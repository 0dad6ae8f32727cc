"""Equivalence classes of a lattice node, computed by roll-up on the compressed table.

A :class:`ClassTable` holds one row per equivalence class of a node: the generalized code
of each QI and the class size. The bottom node's table is the distinct-tuple table
itself. The table of a node ``N`` is computed from the table of any *less general*
node ``M <= N`` by mapping each column from level ``M_j`` to ``N_j`` (inter-level lookup
arrays, :attr:`SearchProblem.flat_maps`) and re-grouping (ARX's roll-up; El Emam et al.
2009), in one compiled pass (:func:`kernels.roll_up_group`) that also summarizes the
classes under ``k``. During a search, :class:`TableCache` keeps the tables of evaluated
nodes in one arena and does lookup, roll-up and storage in one compiled call
(:func:`kernels.fetch`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from apps.engine.search import kernels
from apps.engine.search.problem import I64, SearchProblem
from apps.engine.search.problem import Codes as Codes


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
    Its classes are found by grouping, as tuples may repeat (``build_problem``), once
    per problem (:attr:`SearchProblem.memo`; the arrays are shared: do not modify them);
    its summary under ``k`` per call."""
    levels = (0,) * problem.dimensions
    codes, sizes = problem.memoized("bottom classes", lambda: _bottom(problem))
    return ClassTable(levels, codes, sizes, kernels.summarize(sizes, k), k)


def _bottom(problem: SearchProblem) -> tuple[Codes, I64]:
    if problem.distinct:
        return problem.codes, problem.counts
    levels = (0,) * problem.dimensions
    codes, sizes, _ = _group(problem, problem.codes, problem.counts, levels, levels, 1, Scratch())
    return codes, sizes


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
        problem.maps,
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


class CompiledTables(NamedTuple):
    """A table cache's arrays as the compiled search reads them (the arguments of
    :func:`kernels.fetch` that do not change during a search): the arena, the bottom
    node's classes (the arena's first ``base`` slots) and their summary under ``k``,
    and the problem's inter-level maps."""

    arena: kernels.Arena
    base: int
    base_summary: I64
    maps: kernels.LevelMaps


#: Bounds of the automatic cache size (:func:`default_cache_bytes`).
MIN_CACHE_BYTES, MAX_CACHE_BYTES = 16 << 20, 512 << 20


def default_cache_bytes(problem: SearchProblem) -> int:
    """Memory for cached class tables: 64 times the bottom node's table, within
    [16 MiB, 512 MiB].

    More is not always faster: the arena's pages are touched for the first time as its
    ring fills, and a first touch costs a page fault (about 2 us per 4 KiB page on the
    benchmark machine). Measured on adult, k = 5, 5 % (AECS: 2,021 roll-ups, 66 MB of
    tables in all), the roll-ups took about the same time with 16 MiB as with 512 MiB, where
    nothing is evicted but every table is new memory. Large tables need the room: on
    adult x100 (348,009 tuples) a smaller cache made AECS slower (25 % with 192 MiB
    instead of 512 before the arena; 60 % with a ring of four bottom tables).
    """
    base = problem.codes.nbytes + problem.counts.nbytes
    return int(min(MAX_CACHE_BYTES, max(MIN_CACHE_BYTES, 64 * base)))


#: Arenas whose ring is up to this size go back to their problem when a search is done
#: (:meth:`TableCache.release`), for the next search of the problem; larger ones are
#: freed (their searches are long, and they would hold much memory).
POOLED_ARENA_BYTES = 128 << 20


def _arena(problem: SearchProblem, base: ClassTable, max_bytes: int) -> kernels.Arena:
    """The working memory of a :class:`TableCache` (see :func:`kernels.fetch`)."""
    d = problem.dimensions
    dtype = problem.codes.dtype
    m = base.classes
    per_class = d * dtype.itemsize + 8
    # At least four bottom tables, so that every table fits in a quarter of the ring.
    ring = max(4 * m, 4, max_bytes // per_class)
    # np.empty where nothing is read before it is written (the ring, the slots from
    # HIGH on, the staging arrays): no page is touched (or zeroed) until used.
    codes = np.empty(d * (m + ring), dtype=dtype)
    sizes = np.empty(m + ring, dtype=np.int64)
    codes[: d * m] = base.columns.ravel()
    sizes[:m] = base.sizes
    # A slot per cached table: at most one per node of the lattice (a search of a small
    # lattice needs far fewer than a large table's ring could hold).
    nodes = math.prod(h + 1 for h in problem.heights)
    slots = max(64, min(1 << 16, ring // 16, nodes))
    state = np.zeros(kernels.STATE, dtype=np.int64)
    state[kernels.HEAD] = m
    return kernels.Arena(
        codes=codes,
        sizes=sizes,
        meta=np.empty((slots, d + 3), dtype=np.int64),
        summaries=np.empty((slots, kernels.SUMMARY), dtype=np.int64),
        state=state,
        # (zeroed as the groupings need it: kernels.Arena)
        scratch=np.empty((2, kernels.scratch_size(m)), dtype=np.int64),
        first=np.empty(max(m, 1), dtype=np.int64),
        grouped=np.empty(max(m, 1), dtype=np.int64),
        stage=np.empty((d, max(m, 1)), dtype=dtype),
        level_one=np.empty((d, max(m, 1)), dtype=dtype),  # (made when first read)
    )


def _reset(arena: kernels.Arena, base: int) -> None:
    """Empty the ring (the bottom node's classes stay). The scratch epoch goes on:
    entries stamped by earlier searches never match a later one's."""
    arena.state[kernels.HEAD] = base
    arena.state[kernels.HIGH] = 0
    arena.state[kernels.MOVES] = 0


class TableCache:
    """Class tables of evaluated nodes in one arena, bounded in bytes (default:
    :func:`default_cache_bytes`); the compiled :func:`kernels.fetch` looks a node up,
    or rolls it up from the cached node below it with the fewest classes and stores it.

    The arena holds the bottom node's classes and, after them, a ring of cached tables:
    a new table evicts the oldest it overlaps. Memory is allocated once per search and
    reused, so tables cost no allocation (and no page faults once the ring has been
    round); :meth:`release` hands it to the next search of the same problem (small
    arenas only, :data:`POOLED_ARENA_BYTES`). Tables are summarized under ``k`` (the
    criterion's release size).
    """

    def __init__(self, problem: SearchProblem, max_bytes: int | None = None, k: int = 1) -> None:
        self.problem = problem
        self.max_bytes = default_cache_bytes(problem) if max_bytes is None else max_bytes
        self.k = k
        self.base = base_table(problem, k)
        self._base = self.base.classes
        self._pool: list[kernels.Arena] = problem.memoized(("table arenas", self.max_bytes), list)
        try:
            arena = self._pool.pop()
            _reset(arena, self._base)
        except IndexError:
            arena = _arena(problem, self.base, self.max_bytes)
        self._arena: kernels.Arena | None = arena
        #: Summary of the last fetched node (:mod:`kernels` slots).
        self.summary = np.zeros(kernels.SUMMARY, dtype=np.int64)
        self._cacheable = problem.consistent and problem.dimensions > 0
        # The arguments of kernels.fetch after the node's levels, and its machine code
        # for them (:func:`_fetch_entry`), found at the first fetch: the compiled search
        # (:attr:`compiled_tables`) fetches within its own call and never needs it, and
        # finding it types every array of the arguments (about 15 us a search).
        self._fixed: tuple[Any, ...] = (
            arena,
            self._base,
            self.base.summary,
            self._cacheable,
            problem.maps,
            k,
            self.summary,
        )
        self._entry: Callable[..., tuple[int, int]] | None = None

    def release(self) -> None:
        """Hand the arena to the next search of the problem; this cache is then unusable."""
        arena, self._arena = self._arena, None
        self._fixed = ()
        if arena is not None and self.max_bytes <= POOLED_ARENA_BYTES and len(self._pool) < 2:
            self._pool.append(arena)

    def fetch(self, levels: NDArray[np.int16]) -> tuple[int, int]:
        """Classes of node ``levels`` (an int16 array): ``(where, count)`` for
        :meth:`view`; the node's summary is left in :attr:`summary`. Valid until the
        next fetch."""
        if self._arena is None:
            raise RuntimeError("the table cache was released")
        if levels.dtype == _LEVELS and levels.ndim == 1 and levels.flags.c_contiguous:
            entry = self._entry
            if entry is None:
                entry = self._entry = _fetch_entry(self._fixed)
            found: tuple[int, int] = entry(levels, *self._fixed)
            return found
        return kernels.fetch(levels, *self._fixed)

    @property
    def compiled_tables(self) -> CompiledTables:
        """What the compiled search reads of this cache (``kernels/solve.py``: it fetches
        nodes itself); valid until :meth:`release`."""
        arena = self._arena
        if arena is None:
            raise RuntimeError("the table cache was released")
        return CompiledTables(arena, self._base, self.base.summary, self.problem.maps)

    def view(self, where: int, count: int) -> tuple[Codes, I64]:
        """Codes and sizes of the table :meth:`fetch` returned (views, valid until the
        next fetch)."""
        arena = self._arena
        if arena is None:
            raise RuntimeError("the table cache was released")
        if where < 0:
            return arena.stage[:, :count], arena.grouped[:count]
        d = self.problem.dimensions
        block = arena.codes[d * where : d * (where + count)].reshape(d, count)
        return block, arena.sizes[where : where + count]

    def table(self, levels: tuple[int, ...]) -> ClassTable:
        """Classes of node ``levels`` as a :class:`ClassTable` of its own (copies)."""
        where, count = self.fetch(np.asarray(levels, dtype=np.int16))
        codes, sizes = self.view(where, count)
        return ClassTable(
            tuple(int(v) for v in levels), codes.copy(), sizes.copy(), self.summary.copy(), self.k
        )


_LEVELS = np.dtype(np.int16)
#: Machine code of kernels.fetch per type of its arguments after the levels
#: (:func:`_fetch_entry`).
_FETCH_ENTRIES: dict[tuple[Any, ...], Callable[..., tuple[int, int]]] = {}


def _fetch_entry(fixed: tuple[Any, ...]) -> Callable[..., tuple[int, int]]:
    """The machine code of :func:`kernels.fetch` for a C-ordered int16 row of levels
    and ``fixed`` (the other arguments), called without numba's dispatch: the dispatcher
    types every argument of every call, about 8 us per call here for the arena's and the
    maps' bundles of arrays, as long as the look-up itself (fars_subset, 5 %: 650
    fetches per search). Typing them once costs about 0.6 ms, so the code is kept per
    process by what decides the types: each array's dtype, dimensions and flags (numba's
    array type), the scalars' Python types. Loaded from numba's cache or compiled, as a
    first call would."""
    arrays = [*fixed[0], fixed[2], *fixed[4], fixed[6]]
    key = (
        tuple((a.dtype, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous,
               a.flags.writeable, a.flags.aligned) for a in arrays),
        type(fixed[1]), type(fixed[3]), type(fixed[5]),
    )  # fmt: skip
    entry = _FETCH_ENTRIES.get(key)
    if entry is None:
        dispatcher = kernels.fetch
        args = (np.zeros(len(fixed[4].values), dtype=_LEVELS), *fixed)
        signature = tuple(dispatcher.typeof_pyval(a) for a in args)
        if signature not in dispatcher.overloads:
            dispatcher.compile(signature)
        compiled: Any = dispatcher.overloads[signature]
        entry = _FETCH_ENTRIES[key] = compiled.entry_point
    return entry
