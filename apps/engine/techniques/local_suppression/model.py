"""Local suppression as an assignment problem over distinct tuples and blank patterns.

Rows with identical quasi-identifiers are interchangeable, so the problem is posed on
the distinct tuples t (with counts c_t).  Each record of t is released under one *blank
pattern* p (the set of its quasi-identifiers that are blanked); the released tuple is t
with p blanked, and every record released as the same tuple forms one class ("group").
Under the own-value rule (rules.py) k-anonymity asks every group to hold 0 or ≥ k
records; blanking column j costs w_j per cell (the variable's importance, 1 = count
cells).  This is k-anonymity by suppression (Meyerson & Williams 2004, NP-hard), posed
as an assignment so that an integer program can solve it exactly (exact.py).

A candidate is one (tuple, pattern) pair; patterns cover only a tuple's non-missing
columns (blanking a missing value changes nothing).  A group that even every candidate
together could not fill to k can never be used: its candidates are dropped up front.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import FloatArray, IntArray, pack_rows

MAX_QUASI = 12  # 2**12 patterns per tuple: beyond that the model is too large to pose


@dataclass(frozen=True)
class SuppressionModel:
    """Distinct tuples, their usable (tuple, pattern) candidates and the groups they form."""

    k: int
    tuples: IntArray  # T × m codes (0 = missing)
    counts: IntArray  # T
    tuple_of_row: IntArray  # n: index of each row's tuple
    weights: FloatArray  # m: cost of blanking one cell of each column
    cand_tuple: IntArray  # C
    cand_pattern: IntArray  # C (bit mask)
    cand_group: IntArray  # C (0..G-1)
    cand_cost: FloatArray  # C: cost per record
    groups: int
    group_codes: IntArray  # G × m: each group's released tuple (0 = blank)

    @property
    def risky(self) -> npt.NDArray[np.bool_]:
        """Tuples whose class is smaller than k before any blank."""
        mask: npt.NDArray[np.bool_] = self.counts < self.k
        return mask


def pattern_cost(pattern: int, weights: FloatArray) -> float:
    """Σ w_j over the columns j blanked by `pattern`."""
    return float(sum(w for j, w in enumerate(weights) if pattern >> j & 1))


def build_model(
    codes: IntArray, cards: Sequence[int], k: int, weights: FloatArray
) -> SuppressionModel:
    """Pose the problem for the coded rows (rows × quasi-identifiers)."""
    n, m = codes.shape
    if k < 1:
        raise EngineInputError(f"local suppression: k must be at least 1, not {k}")
    if m > MAX_QUASI:
        raise EngineInputError(
            f"local suppression: at most {MAX_QUASI} quasi-identifiers at once, not {m}"
        )
    if n and n < k:
        raise EngineInputError(f"local suppression: {n} rows cannot form a class of {k}")
    keys = pack_rows(codes, cards)
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    tuples = codes[first]
    missing = (tuples == 0).astype(np.int64) << np.arange(m, dtype=np.int64)
    null_masks = missing.sum(axis=1) if m else np.zeros(len(first), np.int64)
    c_tuple, c_pattern, c_key = [], [], []
    for pattern in range(1 << m):
        usable = np.flatnonzero((null_masks & pattern) == 0)
        blanked = tuples[usable].copy()
        for j in range(m):
            if pattern >> j & 1:
                blanked[:, j] = 0
        c_tuple.append(usable)
        c_pattern.append(np.full(usable.size, pattern, dtype=np.int64))
        c_key.append(pack_rows(blanked, cards))
    cand_tuple = np.concatenate(c_tuple) if c_tuple else np.zeros(0, np.int64)
    cand_pattern = np.concatenate(c_pattern) if c_pattern else np.zeros(0, np.int64)
    _, cand_group = np.unique(np.concatenate(c_key), return_inverse=True)
    cand_group = cand_group.ravel()
    potential = np.bincount(cand_group, weights=counts[cand_tuple])
    keep = potential[cand_group] >= k
    cand_tuple, cand_pattern = cand_tuple[keep], cand_pattern[keep]
    _, cand_group = np.unique(cand_group[keep], return_inverse=True)
    costs = np.array([pattern_cost(int(p), weights) for p in range(1 << m)], dtype=np.float64)
    group_of = cand_group.ravel()
    group_codes = np.zeros((int(group_of.max()) + 1 if group_of.size else 0, m), dtype=np.int64)
    released = tuples[cand_tuple].copy()
    for j in range(m):
        released[(cand_pattern >> j & 1).astype(bool), j] = 0
    group_codes[group_of] = released
    return SuppressionModel(
        k=k,
        tuples=tuples,
        counts=counts.astype(np.int64),
        tuple_of_row=inverse.ravel().astype(np.int64),
        weights=weights,
        cand_tuple=cand_tuple.astype(np.int64),
        cand_pattern=cand_pattern,
        cand_group=cand_group.ravel().astype(np.int64),
        cand_cost=costs[cand_pattern],
        groups=int(cand_group.max()) + 1 if cand_group.size else 0,
        group_codes=group_codes,
    )


def solution_cost(model: SuppressionModel, amounts: IntArray) -> float:
    """Σ cost × records over the candidates (`amounts[i]` records take candidate i)."""
    return float(np.dot(model.cand_cost, amounts))


def check_solution(model: SuppressionModel, amounts: IntArray) -> None:
    """Raise if `amounts` does not place every record or leaves a group with 1..k-1."""
    placed = np.bincount(model.cand_tuple, weights=amounts, minlength=model.counts.size)
    if not np.array_equal(placed.astype(np.int64), model.counts):
        raise AssertionError("local suppression: a solution does not place every record")
    sizes = np.bincount(model.cand_group, weights=amounts, minlength=model.groups)
    if np.any((sizes > 0) & (sizes < model.k)):
        raise AssertionError("local suppression: a solution leaves a class smaller than k")


def blank_mask(model: SuppressionModel, amounts: IntArray) -> npt.NDArray[np.bool_]:
    """rows × columns: True where a cell is blanked.

    The records of one tuple are interchangeable; they take the patterns in row order
    (the release is shuffled afterwards, so the order says nothing).
    """
    m = model.tuples.shape[1]
    n = model.tuple_of_row.size
    mask = np.zeros((n, m), dtype=np.bool_)
    order = np.argsort(model.tuple_of_row, kind="stable")
    starts = np.searchsorted(model.tuple_of_row[order], np.arange(model.counts.size))
    filled = np.zeros(model.counts.size, dtype=np.int64)
    for i in np.flatnonzero(amounts):
        t, take = int(model.cand_tuple[i]), int(amounts[i])
        pattern = int(model.cand_pattern[i])
        rows = order[starts[t] + filled[t] : starts[t] + filled[t] + take]
        filled[t] += take
        for j in range(m):
            if pattern >> j & 1:
                mask[rows, j] = True
    return mask
