"""The generalization lattice: one generalization level per quasi-identifier.

A node is a tuple of levels ``(l_1, ..., l_d)`` with ``0 <= l_j <= top_j``; node ``M`` is a
*specialization* of ``N`` (and ``N`` a *generalization* of ``M``) when ``M <= N``
componentwise (El Emam et al. 2009, OLA; ARX's ``SolutionSpace``). Nodes are numbered in
mixed radix with the first QI most significant, so index order equals lexicographic
order of the level tuples. The lattice is held as one ``[size x d]`` level matrix, which
makes up-set/down-set masks a single vectorized comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError

#: Memory the exact search holds per lattice node, measured: NODE_BYTES_BASE +
#: NODE_BYTES_PER_QI x quasi-identifiers. ``bench/bench_lattice_memory.py`` runs searches as
#: the Step 7 job does (Pareto front included) on lattices of 65 k to 2.1 M nodes and reads
#: each one's peak resident memory: the arrays over all nodes take 110-230 bytes a node,
#: each evaluated node about 400 more (its memoized facts). The worst it measured, a search
#: that evaluated almost every node (1 M nodes, 10 QIs, 100 % suppression allowed, so its
#: Pareto front ran down to nothing suppressed), took 608 bytes a node, everything
#: included: the limit takes that for every node (2 bytes per QI for the level matrix, the
#: rest the base; docs/benchmarks.md, "Memory of the exact search"). The class tables are
#: bounded apart (``search.classes.default_cache_bytes``, at most 512 MiB).
NODE_BYTES_BASE = 600
NODE_BYTES_PER_QI = 2
#: Memory the lattice may take when no budget is set (the app sets one from its
#: ``DEIDWEB_SEARCH_MEMORY_MB`` setting through :func:`set_search_memory`).
DEFAULT_SEARCH_MEMORY = 2 << 30
_budget = [DEFAULT_SEARCH_MEMORY]


def set_search_memory(nbytes: int) -> None:
    """The memory the exact search's lattice may take, in bytes (every later search)."""
    if nbytes <= 0:
        raise EngineInputError("the search's memory budget must be positive")
    _budget[0] = int(nbytes)


def search_memory() -> int:
    return _budget[0]


def node_bytes(dimensions: int) -> int:
    """Measured memory of one lattice node of the exact search (see NODE_BYTES_BASE)."""
    return NODE_BYTES_BASE + NODE_BYTES_PER_QI * dimensions


def max_nodes(dimensions: int, memory: int | None = None) -> int:
    """Largest lattice the exact search takes on, with ``dimensions`` quasi-identifiers,
    within ``memory`` bytes (default: the budget set, :func:`set_search_memory`). Larger
    lattices go to the heuristic (``search.heuristic``)."""
    return (search_memory() if memory is None else memory) // node_bytes(dimensions)


@njit(cache=True, nogil=True)
def node_levels(tops: NDArray[np.int64], size: int) -> tuple[NDArray[np.int16], NDArray[np.int64]]:
    """The levels of every node of the lattice of ``tops`` (``[size x d]``, in index
    order: mixed radix, the first QI most significant) and each node's total level."""
    d = len(tops)
    levels = np.empty((size, d), dtype=np.int16)
    total = np.empty(size, dtype=np.int64)
    counter = np.zeros(d, dtype=np.int16)
    sum_ = 0
    for idx in range(size):
        for j in range(d):
            levels[idx, j] = counter[j]
        total[idx] = sum_
        j = d - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                sum_ += 1
                break
            sum_ -= counter[j]
            counter[j] = 0
            j -= 1
    return levels, total


@njit(cache=True, nogil=True)
def by_total(total: NDArray[np.int64], most: int) -> NDArray[np.int64]:
    """Nodes by increasing total level, index order among equal totals."""
    starts = np.zeros(most + 2, dtype=np.int64)
    for idx in range(len(total)):
        starts[total[idx] + 1] += 1
    for t in range(most + 1):
        starts[t + 1] += starts[t]
    order = np.empty(len(total), dtype=np.int64)
    for idx in range(len(total)):
        order[starts[total[idx]]] = idx
        starts[total[idx]] += 1
    return order


def lattice_shape(tops: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """The size of the lattice of ``tops`` and the stride of each QI in the node
    numbering (module docstring); an error when a top is negative or the lattice is
    larger than the exact search's memory budget holds (:func:`max_nodes`)."""
    if any(t < 0 for t in tops):
        raise EngineInputError("a maximum generalization level is negative")
    radix = [int(t) + 1 for t in tops]
    size = 1
    for r in radix:
        size *= r
    limit = max_nodes(len(radix))
    if size > limit:
        raise EngineInputError(
            f"the lattice has {size:,} nodes, more than the {limit:,} its memory budget "
            f"({search_memory() >> 20:,} MiB) holds: use fewer quasi-identifiers or set "
            "maximum levels"
        )
    strides = [1] * len(radix)
    for j in range(len(radix) - 2, -1, -1):
        strides[j] = strides[j + 1] * radix[j + 1]
    return size, tuple(strides)


class Lattice:
    """All nodes of the lattice of per-QI levels ``0..tops[j]``."""

    def __init__(self, tops: Sequence[int]) -> None:
        self.tops: tuple[int, ...] = tuple(int(t) for t in tops)
        size, strides = lattice_shape(self.tops)
        self.size: int = size
        self.strides: tuple[int, ...] = strides
        # The level of every QI of every node, in index order (an odometer, compiled).
        self.levels: NDArray[np.int16]
        self.total: NDArray[np.int64]
        self.levels, self.total = node_levels(np.asarray(self.tops, dtype=np.int64), size)

    # at_most[j][v] = nodes whose level j is <= v (at_least likewise): an up-set or
    # down-set mask is then d boolean ANDs instead of a [size x d] comparison. Built on
    # first use: the search walks up-sets and down-sets as boxes (search/kernels.py).
    @cached_property
    def _at_most(self) -> tuple[NDArray[np.bool_], ...]:
        return tuple(
            np.stack([self.levels[:, j] <= v for v in range(t + 1)])
            for j, t in enumerate(self.tops)
        )

    @cached_property
    def _at_least(self) -> tuple[NDArray[np.bool_], ...]:
        return tuple(
            np.stack([self.levels[:, j] >= v for v in range(t + 1)])
            for j, t in enumerate(self.tops)
        )

    @property
    def dimensions(self) -> int:
        return len(self.tops)

    @property
    def bottom(self) -> int:
        return 0

    @property
    def top(self) -> int:
        return self.size - 1

    def index(self, levels: Sequence[int]) -> int:
        """Node index of a level tuple."""
        if len(levels) != len(self.tops) or any(
            not 0 <= lv <= t for lv, t in zip(levels, self.tops, strict=True)
        ):
            raise EngineInputError(f"levels {tuple(levels)} are outside the lattice {self.tops}")
        return sum(int(lv) * s for lv, s in zip(levels, self.strides, strict=True))

    def node(self, index: int) -> tuple[int, ...]:
        """Level tuple of a node index."""
        return tuple(self.levels[index].tolist())

    def predecessors(self, index: int) -> list[int]:
        """Direct specializations: one QI one level lower."""
        lv = self.levels[index]
        return [index - s for j, s in enumerate(self.strides) if lv[j] > 0]

    def successors(self, index: int) -> list[int]:
        """Direct generalizations: one QI one level higher."""
        lv = self.levels[index]
        return [index + s for j, s in enumerate(self.strides) if lv[j] < self.tops[j]]

    def generalizations_mask(self, index: int) -> NDArray[np.bool_]:
        """Boolean mask of the up-set of ``index`` (the node itself included)."""
        return self._mask(self._at_least, index)

    def specializations_mask(self, index: int) -> NDArray[np.bool_]:
        """Boolean mask of the down-set of ``index`` (the node itself included)."""
        return self._mask(self._at_most, index)

    def _mask(self, tables: tuple[NDArray[np.bool_], ...], index: int) -> NDArray[np.bool_]:
        lv = self.levels[index]
        if not tables:
            return np.ones(self.size, dtype=bool)
        mask: NDArray[np.bool_] = tables[0][lv[0]].copy()
        for j in range(1, len(tables)):
            mask &= tables[j][lv[j]]
        return mask

    def tie_order(self) -> NDArray[np.int64]:
        """Rank of every node under the deterministic tie-break of the search:
        lowest total level first, then lexicographic levels (= index order).
        Computed once per lattice: do not modify the array."""
        return self._rank

    @cached_property
    def _rank(self) -> NDArray[np.int64]:
        rank = np.empty(self.size, dtype=np.int64)
        rank[self.by_rank] = np.arange(self.size, dtype=np.int64)
        return rank

    @cached_property
    def by_rank(self) -> NDArray[np.int64]:
        """Nodes in tie-break order (the inverse of :meth:`tie_order`; do not modify):
        by total level, index order among equal totals (a counting sort)."""
        return by_total(self.total, sum(self.tops))
