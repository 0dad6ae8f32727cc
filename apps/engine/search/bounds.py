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


def profiles(problem: SearchProblem) -> Profiles:
    """The problem's :class:`Profiles` (memoized on the problem)."""
    return problem.memoized("suppression profiles", lambda: _profiles(problem))


def _profiles(problem: SearchProblem) -> Profiles:
    heights = problem.heights
    nodes = 1
    for h in heights:
        nodes *= h + 1
    tuples = len(problem.counts)
    max_work = int(min(max(PAIR_WORK_FLOOR, nodes * tuples * PAIR_WORK_SHARE), 2.0**62))
    frequencies = [f for per_qi in problem.frequencies for f in per_qi]
    return Profiles(
        *kernels.profiles_of(
            problem.codes,
            problem.counts.astype(np.int64),
            np.asarray(heights, dtype=np.int64),
            np.concatenate(frequencies).astype(np.int64) if frequencies else np.zeros(0, np.int64),
            problem.flat_maps,
            problem.map_offsets,
            problem.level_values,
            problem.consistent,
            MAX_PAIR_CELLS,
            max_work,
        )
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
