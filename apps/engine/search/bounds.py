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
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from apps.engine.lattice import Lattice
from apps.engine.search import kernels
from apps.engine.search.problem import SearchProblem

#: Pairs are aggregated from their non-empty cells (one compiled roll-up of the cells
#: per level pair, :func:`kernels.pair_rare_rows`); skip a pair with more of these (the
#: bound stays valid with fewer pairs).
MAX_PAIR_CELLS = 2_000_000


def _rare_rows(cell_counts: NDArray[np.float64] | NDArray[np.int64], k: int) -> int:
    return int(cell_counts[(cell_counts > 0) & (cell_counts < k)].sum())


def suppression_lower_bounds(problem: SearchProblem, lattice: Lattice, k: int) -> NDArray[np.int64]:
    """For every node, a number of rows it certainly suppresses (module docstring)."""
    bound = np.zeros(lattice.size, dtype=np.int64)
    if k <= 1 or not len(problem.counts):
        return bound
    tops = lattice.tops
    levels = lattice.levels
    for j in range(problem.dimensions):
        per_level = np.array(
            [
                _rare_rows(problem.frequencies[j][lv].astype(np.float64), k)
                for lv in range(tops[j] + 1)
            ],
            dtype=np.int64,
        )
        np.maximum(bound, per_level[levels[:, j]], out=bound)
    counts = problem.counts.astype(np.int64)
    for i, j in itertools.combinations(range(problem.dimensions), 2):
        kernels.pair_rare_rows(
            problem.codes[i],
            problem.codes[j],
            counts,
            np.array([i, j], dtype=np.int64),
            np.array([tops[i], tops[j]], dtype=np.int64),
            problem.flat_maps,
            problem.map_offsets,
            problem.level_values,
            k,
            MAX_PAIR_CELLS,
            levels,
            bound,
        )
    return bound
