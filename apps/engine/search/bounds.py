"""A lower bound on the rows every node must suppress, from pairs of quasi-identifiers.

A row whose values on two QIs ``i, j`` (generalized to levels ``l_i, l_j``) are shared by
fewer than ``k`` rows of the data lies, at every node with those two levels, in an
equivalence class of fewer than ``k`` rows (a class agrees on all QIs, so it is a subset
of the rows sharing that pair), hence is suppressed. So for node ``N``

    suppressed(N) >= max over pairs (i, j) of R_ij[l_i, l_j],

``R_ij[a, b]`` = rows in (i, j)-cells of fewer than ``k`` rows at levels (a, b) (with one
QI, its single-QI counterpart). This needs no hierarchy property, costs one small
aggregation per pair and level pair, and lets the search (1) declare failing, without
evaluating them, the nodes whose bound exceeds the suppression limit (nearly all failing
nodes of adult without suppression), and (2) add the bound's cost to the metric's lower
bound of every node (``loss.Metric.lower_bounds``).

The cells' sizes at every pair of levels do not depend on ``k``: they are computed once
per problem as *profiles* (distinct sizes with running sums of rows, :class:`Profiles`,
memoized on the problem), from which ``R_ij`` for any ``k`` is a binary search per level
pair; one compiled pass then takes the maximum over pairs for every node.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.engine.lattice import Lattice
from apps.engine.search import kernels
from apps.engine.search.problem import SearchProblem

#: Pairs are aggregated from their non-empty cells (one compiled roll-up of the cells
#: per level pair, :func:`kernels.pair_profile`); skip a pair with more of these (the
#: bound stays valid with fewer pairs).
MAX_PAIR_CELLS = 2_000_000
#: A pair is also skipped when grouping its cells at every level pair (cells x level
#: pairs) would cost more than this share of evaluating every node from the distinct
#: tuples (lattice size x tuples), and more than PAIR_WORK_FLOOR: the bound saves
#: evaluations, so it must cost less than they would. (Adult: every pair is kept, the
#: largest costs 30,000; the ZIP-like case of the benchmark, 60 nodes and 50,000
#: tuples: the two pairs with ZIP codes are skipped, a problem's first search takes
#: 8 ms instead of 40.)
PAIR_WORK_SHARE = 1 / 8
PAIR_WORK_FLOOR = 250_000


def _rare_rows(cell_counts: NDArray[np.float64] | NDArray[np.int64], k: int) -> int:
    return int(cell_counts[(cell_counts > 0) & (cell_counts < k)].sum())


@dataclass(frozen=True)
class Profiles:
    """Cell sizes of every single QI and every pair of QIs at every (pair of) levels, in
    segments (:func:`kernels.pair_profile`): profile ``p`` covers QI ``first_qi[p]`` (and
    ``second_qi[p]``, or none when negative); its segment at levels ``(a, b)`` is
    ``base[p] + a * width[p] + b``. Independent of ``k``: computed once per problem."""

    values: NDArray[np.int64]
    cums: NDArray[np.int64]
    starts: NDArray[np.int64]
    first_qi: NDArray[np.int64]
    second_qi: NDArray[np.int64]
    base: NDArray[np.int64]
    width: NDArray[np.int64]


def _single_profile(frequencies: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    sizes = np.sort(frequencies[frequencies > 0].astype(np.int64))
    if not len(sizes):
        return sizes, sizes
    last = np.append(sizes[1:] != sizes[:-1], True)
    return sizes[last], np.cumsum(sizes)[last]


def profiles(problem: SearchProblem) -> Profiles:
    """The problem's :class:`Profiles` (memoized on the problem)."""
    return problem.memoized("suppression profiles", lambda: _profiles(problem))


def _profiles(problem: SearchProblem) -> Profiles:
    values: list[NDArray[np.int64]] = []
    cums: list[NDArray[np.int64]] = []
    starts: list[NDArray[np.int64]] = [np.zeros(1, dtype=np.int64)]
    first, second, base, width = [], [], [], []
    at, segments = 0, 0

    def add(v: NDArray[np.int64], c: NDArray[np.int64], s: NDArray[np.int64]) -> None:
        nonlocal at, segments
        values.append(v)
        cums.append(c)
        starts.append(s[1:] + at)
        at += len(v)
        segments += len(s) - 1

    heights = problem.heights
    for j in range(problem.dimensions):
        first.append(j)
        second.append(-1)
        base.append(segments)
        width.append(1)
        parts = [_single_profile(f) for f in problem.frequencies[j]]
        add(
            np.concatenate([v for v, _ in parts]),
            np.concatenate([c for _, c in parts]),
            np.cumsum([0] + [len(v) for v, _ in parts]).astype(np.int64),
        )
    counts = problem.counts.astype(np.int64)
    nodes = 1
    for h in heights:
        nodes *= h + 1
    max_work = int(min(max(PAIR_WORK_FLOOR, nodes * len(counts) * PAIR_WORK_SHARE), 2.0**62))
    scratch = np.zeros((2, kernels.scratch_size(len(counts))), dtype=np.int64)
    stamp = np.ones(1, dtype=np.int64)
    histogram = np.zeros(kernels.HISTOGRAM, dtype=np.int64)
    for i, j in itertools.combinations(range(problem.dimensions), 2):
        v, c, s = kernels.pair_profile(
            problem.codes[i],
            problem.codes[j],
            counts,
            np.array([i, j], dtype=np.int64),
            np.array([heights[i], heights[j]], dtype=np.int64),
            problem.flat_maps,
            problem.map_offsets,
            problem.level_values,
            problem.consistent,
            MAX_PAIR_CELLS,
            max_work,
            scratch,
            stamp,
            histogram,
        )
        if not len(s):
            continue  # too many cells: the bound stays valid without this pair
        first.append(i)
        second.append(j)
        base.append(segments)
        width.append(heights[j] + 1)
        add(v, c, s)

    def ints(parts: list[NDArray[np.int64]] | list[int]) -> NDArray[np.int64]:
        if parts and isinstance(parts[0], np.ndarray):
            return np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)
        return np.asarray(parts, dtype=np.int64).reshape(-1)

    return Profiles(
        ints(values), ints(cums), ints(starts), ints(first), ints(second), ints(base), ints(width)
    )


def suppression_lower_bounds(
    problem: SearchProblem, lattice: Lattice, k: int, cap: int | None = None
) -> NDArray[np.int64]:
    """For every node, a number of rows it certainly suppresses (module docstring).

    With ``cap``, a node whose bound exceeds ``cap`` may get a smaller number that still
    exceeds ``cap`` (whole blocks of the lattice are then skipped): enough for a search
    that allows at most ``cap`` suppressed rows."""
    bound = np.zeros(lattice.size, dtype=np.int64)
    if k <= 1 or not len(problem.counts):
        return bound
    p = profiles(problem)
    rare = kernels.rare_by_segment(p.values, p.cums, p.starts, k)
    tops = np.asarray(lattice.tops, dtype=np.int64)
    kernels.raise_by_profiles(
        tops, p.first_qi, p.second_qi, p.base, p.width, rare, -1 if cap is None else cap, bound
    )
    return bound
