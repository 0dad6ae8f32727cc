"""The intruder's candidates: the released records a target's description leads to.

Classic record linkage (Fellegi & Sunter 1969; distance-based linkage in statistical
disclosure control: Pagliuca & Seri 1999, Domingo-Ferrer & Torra 2001): the intruder
compares the target's quasi-identifiers, seen through the release's mapping, with every
released record.

* **Exact match**: the records that agree on every quasi-identifier (a suppressed cell
  agreeing with anything).
* **Nearest match**: when none agrees, the records closest to the target — first the
  fewest disagreeing categories, then, among those, the smallest distance on the numbers
  (standardized by the release's spread).  With an exact match the nearest are the exact
  ones.

Ties are kept: the candidates are every record at the smallest distance, and the
intruder's pick among them is uniform.  A target may have its own record *left out*
(the control's counterfactual release, see the package docstring): its tuple then counts
one record fewer, and a tuple left empty is no candidate.

Cost: one dictionary look-up per target for exact matches of a release without suppressed
cells; otherwise one comparison with each distinct tuple of categories (vectorized), then
a k-d tree per block of equal categories for the numbers.  Targets are a bounded sample,
so the work is linear in the number of distinct released tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.spatial import cKDTree

from apps.engine.attacks.view import BoolArray, FloatArray, IntArray, Released, Seen

TOLERANCE = 1e-9
_BRUTE_FORCE_TUPLES = 256  # blocks up to this size are searched without a tree


@dataclass(frozen=True)
class Candidates:
    tuples: IntArray  # indices of released tuples
    records: IntArray  # records in each (the target's own left out where asked)
    exact: bool

    @property
    def total(self) -> int:
        return int(self.records.sum())


EMPTY = Candidates(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), False)


class _Blocks:
    """Released tuples grouped by their categories (one block per distinct category tuple)."""

    def __init__(self, release: Released) -> None:
        self.release = release
        stacked = np.column_stack([release.codes, release.wild.astype(np.int64)])
        if stacked.shape[1]:
            keys, self.block_of = np.unique(stacked, axis=0, return_inverse=True)
        else:
            keys = np.zeros((1, 0), dtype=np.int64)
            self.block_of = np.zeros(release.tuples, dtype=np.int64)
        self.block_of = self.block_of.reshape(-1)
        d = release.codes.shape[1]
        self.codes: IntArray = keys[:, :d]
        self.wild: BoolArray = keys[:, d:].astype(bool)
        order = np.argsort(self.block_of, kind="stable")
        bounds = np.searchsorted(self.block_of[order], np.arange(len(keys) + 1))
        self.members = [order[bounds[b] : bounds[b + 1]] for b in range(len(keys))]
        self.records = np.bincount(self.block_of, weights=release.counts, minlength=len(keys))
        self._trees: dict[int, cKDTree] = {}

    def tree(self, block: int) -> cKDTree:
        if block not in self._trees:
            self._trees[block] = cKDTree(self.release.numbers[self.members[block]])
        return self._trees[block]

    @cached_property
    def any_wild(self) -> bool:
        return bool(self.wild.any())


def _nearest_in_block(
    blocks: _Blocks, block: int, point: FloatArray, gone: int
) -> tuple[float, IntArray]:
    """Smallest numeric distance in a block and the tuples at it (``gone``: a tuple whose
    records were all left out, or -1)."""
    release = blocks.release
    members = blocks.members[block]
    if members.size <= _BRUTE_FORCE_TUPLES or not release.numeric:
        distance = (
            np.sqrt(((release.numbers[members] - point) ** 2).sum(axis=1))
            if release.numeric
            else np.zeros(members.size)
        )
        distance = np.where(members == gone, np.inf, distance)
        best = float(distance.min())
        if not np.isfinite(best):
            return best, members[:0]
        return best, members[distance <= best + TOLERANCE]
    tree = blocks.tree(block)
    found, where = tree.query(point, k=min(2, members.size))
    found, where = np.atleast_1d(found), np.atleast_1d(where)
    usable = [(float(f), int(w)) for f, w in zip(found, where, strict=True) if members[w] != gone]
    if not usable:
        return float("inf"), members[:0]
    best = usable[0][0]
    near = np.asarray(tree.query_ball_point(point, best + TOLERANCE), dtype=np.int64)
    chosen = members[near]
    return best, chosen[chosen != gone]


def candidates(
    release: Released, seen: Seen, *, own: IntArray, leave_out: BoolArray
) -> list[Candidates]:
    """Each target's candidates (``own[t]``: its own released tuple or -1; ``leave_out[t]``:
    take one record of it out first)."""
    blocks = _Blocks(release)
    counts = release.counts
    index = None if blocks.any_wild else release.index
    found: list[Candidates] = []
    for t in range(seen.codes.shape[0]):
        mine = int(own[t])
        gone_one = bool(leave_out[t]) and mine >= 0
        if index is not None:
            u = index.get(release.key(seen.codes[t], seen.numbers[t]))
            if u is not None:
                kept = int(counts[u]) - (1 if gone_one and u == mine else 0)
                if kept > 0:
                    found.append(Candidates(np.array([u]), np.array([kept], dtype=np.int64), True))
                    continue
        found.append(_search(blocks, seen, t, mine if gone_one else -1))
    return found


def _search(blocks: _Blocks, seen: Seen, t: int, mine: int) -> Candidates:
    """Fewest category disagreements, then the nearest numbers (``mine``: the tuple one of
    whose records is left out, or -1)."""
    release = blocks.release
    if release.tuples == 0:
        return EMPTY
    disagree = ((blocks.codes != seen.codes[t]) & ~blocks.wild).sum(axis=1).astype(np.float64)
    gone: int = -1
    if mine >= 0:
        block = int(blocks.block_of[mine])
        if release.counts[mine] == 1:
            gone = int(mine)  # its only record is left out: the tuple is no candidate
            if blocks.records[block] == 1:
                disagree[block] = np.inf
    fewest = float(disagree.min())
    if not np.isfinite(fewest):
        return EMPTY
    best, tuples = float("inf"), np.zeros(0, dtype=np.int64)
    for candidate in np.flatnonzero(disagree == fewest):
        distance, near = _nearest_in_block(blocks, int(candidate), seen.numbers[t], gone)
        if distance < best - TOLERANCE:
            best, tuples = distance, near
        elif distance <= best + TOLERANCE:
            tuples = np.concatenate([tuples, near])
    if tuples.size == 0:
        return EMPTY
    records = release.counts[tuples].copy()
    if mine >= 0:
        records[tuples == mine] -= 1
    keep = records > 0
    return Candidates(tuples[keep], records[keep], fewest == 0 and best <= TOLERANCE)
