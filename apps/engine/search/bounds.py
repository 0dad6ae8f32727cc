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

The rare rows are computed for the search's ``k`` (``kernels/rare.py``), once per problem
and ``k``: only the level pairs that can matter are grouped (a level pair where a single
QI already fails every node gets the single's rows; above a level pair with no rare row
there is none), each from the level pair below it; one compiled pass then takes the
maximum over singles and pairs for every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.engine.lattice import Lattice
from apps.engine.search import kernels
from apps.engine.search.problem import SearchProblem

#: A pair with more non-empty cells than this is left out (the bound stays valid with
#: fewer pairs: its level pairs keep their singles' rare rows).
MAX_PAIR_CELLS = 2_000_000
#: The cells grouped for all pairs together are bounded by this share of evaluating
#: every node from the distinct tuples (lattice size x tuples), and at least
#: PAIR_WORK_FLOOR: the bound saves evaluations, so it must cost less than they would.
#: Pairs past the budget keep their singles' rare rows.
PAIR_WORK_SHARE = 1 / 8
PAIR_WORK_FLOOR = 250_000
#: From this many distinct tuples a search computes the bounds in a thread while the
#: metric's arrays and the table cache are made (``workers.Deferred``: done by the caller
#: when no thread has started them). Below it the caller computes them: the caller's
#: work meanwhile is short (0.3 ms on adult), and the thread holds the interpreter until
#: its compiled pass starts, so the caller waited for it (a quiet 2-core machine,
#: protocol runs alternating: adult entropy k=20 0 % 8.5 -> 7.8 ms, fars_subset entropy
#: k=5 0 % 3.9 -> 3.4 ms, fars_subset discernibility k=20 5 % 70.9 -> 67.8 ms, cup
#: (over 50,000 tuples: threaded) unchanged).
PARALLEL_TUPLES = 50_000


def _rare_rows(cell_counts: NDArray[np.float64] | NDArray[np.int64], k: int) -> int:
    return int(cell_counts[(cell_counts > 0) & (cell_counts < k)].sum())


@dataclass(frozen=True)
class RareRows:
    """Rare rows under one ``k`` of every single QI and every pair of QIs at every (pair
    of) levels, in segments (:func:`kernels.rare_rows`): profile ``p`` covers QI
    ``first_qi[p]`` (and ``second_qi[p]``, or none when negative); its segment at levels
    ``(a, b)`` is ``base[p] + a * width[p] + b``."""

    rare: NDArray[np.int64]
    first_qi: NDArray[np.int64]
    second_qi: NDArray[np.int64]
    base: NDArray[np.int64]
    width: NDArray[np.int64]


def rare_rows(problem: SearchProblem, k: int, cap: int | None = None) -> RareRows:
    """The problem's :class:`RareRows` under ``k`` (memoized on the problem with
    ``cap``: level pairs a single already puts past ``cap`` keep the single's rows)."""
    key = ("rare rows", k, -1 if cap is None else cap)
    return problem.memoized(key, lambda: _rare_rows_of(problem, k, cap))


def _rare_rows_of(problem: SearchProblem, k: int, cap: int | None) -> RareRows:
    heights = problem.heights
    nodes = 1
    for h in heights:
        nodes *= h + 1
    tuples = len(problem.counts)
    max_work = int(min(max(PAIR_WORK_FLOOR, nodes * tuples * PAIR_WORK_SHARE), 2.0**62))
    return RareRows(
        *kernels.rare_rows(
            problem.codes,
            problem.counts,
            np.asarray(heights, dtype=np.int64),
            problem.flat_frequencies,
            problem.maps,
            problem.consistent,
            k,
            -1 if cap is None else cap,
            MAX_PAIR_CELLS,
            max_work,
        )
    )


#: No profile: no row is rare (``k`` <= 1, or no tuples).
NO_RARE_ROWS = RareRows(*(np.zeros(0, dtype=np.int64) for _ in range(5)))


def rare_profiles(problem: SearchProblem, k: int, cap: int | None = None) -> RareRows:
    """:func:`rare_rows`, or :data:`NO_RARE_ROWS` when no row can be rare (as
    :func:`lattice_suppression_bounds`, whose bounds are then all 0)."""
    if k <= 1 or not len(problem.counts):
        return NO_RARE_ROWS
    return rare_rows(problem, k, cap)


def suppression_lower_bounds(
    problem: SearchProblem, lattice: Lattice, k: int, cap: int | None = None
) -> NDArray[np.int64]:
    """For every node, a number of rows it certainly suppresses (module docstring).

    With ``cap``, a node whose bound exceeds ``cap`` may get a smaller number that still
    exceeds ``cap`` (whole blocks of the lattice are then skipped): enough for a search
    that allows at most ``cap`` suppressed rows."""
    return lattice_suppression_bounds(problem, lattice.tops, lattice.size, k, cap)


def lattice_suppression_bounds(
    problem: SearchProblem, tops: Sequence[int], size: int, k: int, cap: int | None = None
) -> NDArray[np.int64]:
    """:func:`suppression_lower_bounds` of the lattice of ``tops`` (``size`` nodes),
    without its :class:`Lattice`."""
    bound = np.zeros(size, dtype=np.int64)
    if k <= 1 or not len(problem.counts):
        return bound
    r = rare_rows(problem, k, cap)
    tops_ = np.asarray(tops, dtype=np.int64)
    kernels.raise_by_rare(
        tops_, r.first_qi, r.second_qi, r.base, r.width, r.rare, -1 if cap is None else cap, bound
    )
    return bound
