"""sdcMicro's local-suppression heuristic, re-implemented as the comparison baseline.

Written from the description and source of sdcMicro's `localSuppression` / `kAnon`
(R/localSuppression.R, `suppSubset`; src/calcSuppInds.cpp; Templ, Kowarik & Meindl 2015,
J. Stat. Softw. 67(4)), not copied:

1. classes larger than k are cut to k records for the search (the rest rejoin unchanged);
2. the records of classes smaller than k (f_k under the chosen blank rule), riskiest
   first, are visited one after another; for each, the records at the smallest positive
   distance (number of quasi-identifiers on which both are non-blank and differ) are
   found, and the record's value is blanked in the first variable, in importance order
   (by default the variable with the most categories first), on which it differs from
   one of them;
3. f_k is recomputed and step 2 repeats until every class reaches k.

Each visit blanks one cell whatever the others do, so a class of three records below k
gets three blanks where one pattern shared with a near class might do (sdcMicro issue
#354).  sdcMicro counts classes with a blank matching any value (alpha = 1, "wildcard");
`rule="own_value"` runs the same heuristic with alpha = 0, for a like-for-like count.
Under that rule the heuristic can get stuck: records blanked in every variable form one
class, and when it has fewer than k records nothing is left to blank (sdcMicro stops
with an error).  The baseline then completes the release the cheapest obvious way:
it blanks every variable of further records, taken from the largest classes (which stay
at k or above), until that class reaches k; `SdcMicroOutcome.completion_cells` says how
many cells that added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import IntArray, pack_rows
from apps.engine.techniques.local_suppression.rules import (
    BlankRule,
    own_value_class_sizes,
    wildcard_class_sizes,
)

MAX_PASSES = 1_000


def default_order(codes: IntArray) -> list[int]:
    """sdcMicro's default importance: the variable with the most categories is blanked first."""
    categories = [np.unique(codes[codes[:, j] > 0, j]).size for j in range(codes.shape[1])]
    return sorted(range(codes.shape[1]), key=lambda j: (-categories[j], j))


def _fk(codes: IntArray, rule: BlankRule) -> IntArray:
    return wildcard_class_sizes(codes) if rule == "wildcard" else own_value_class_sizes(codes)


@dataclass(frozen=True)
class SdcMicroOutcome:
    blanked: npt.NDArray[np.bool_]  # rows × columns: True where a cell is blanked
    passes: int
    completion_cells: int  # cells added after the heuristic got stuck (own-value rule only)


def sdcmicro_local_suppression(
    codes: IntArray,
    cards: Sequence[int],
    k: int,
    *,
    order: Sequence[int] | None = None,
    rule: BlankRule = "wildcard",
) -> SdcMicroOutcome:
    """Where sdcMicro's heuristic blanks cells (codes: 0 = missing), and how it got there."""
    if rule not in ("wildcard", "own_value"):
        raise EngineInputError(
            f"sdcMicro's heuristic counts with 'wildcard' or 'own_value', not {rule!r}"
        )
    n, m = codes.shape
    if n < k:
        raise EngineInputError(f"{n} rows cannot form a class of {k}")
    columns = list(order) if order is not None else default_order(codes)
    # Step 1: keep at most k records of each class (the first ones) for the search.
    keys = pack_rows(codes, cards)
    ranks = np.empty(n, dtype=np.int64)
    by_key = np.argsort(keys, kind="stable")
    sorted_keys = keys[by_key]
    starts = np.searchsorted(sorted_keys, sorted_keys, side="left")
    ranks[by_key] = np.arange(n) - starts
    kept = np.flatnonzero(ranks < k)
    mat = codes[kept].copy()
    released = codes.copy()
    completion = 0
    passes = 0
    for passes in range(1, MAX_PASSES + 1):  # noqa: B007 (the count is reported)
        fk = _fk(mat, rule)
        if not np.any(fk < k):
            break
        problems = np.flatnonzero(fk < k)
        problems = problems[np.argsort(fk[problems], kind="stable")]
        before = int(np.count_nonzero(mat == 0))
        for i in problems:
            _blank_one(mat, int(i), columns)
        if int(np.count_nonzero(mat == 0)) == before:  # stuck: nothing left to blank
            released[kept] = mat
            completion = _complete(released, k)
            break
    else:
        raise EngineInputError(f"sdcMicro's heuristic did not reach k = {k} in {MAX_PASSES} passes")
    if not completion:
        released[kept] = mat
    return SdcMicroOutcome(
        blanked=(released == 0) & (codes != 0), passes=passes, completion_cells=completion
    )


def _complete(released: IntArray, k: int) -> int:
    """Blank whole records from the largest classes until the all-blank class has k."""
    fully = np.all(released == 0, axis=1)
    short = k - int(fully.sum())
    if short <= 0:
        return 0
    keys = pack_rows(released, [int(released[:, j].max()) for j in range(released.shape[1])])
    values, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    added = 0
    for cls in np.argsort(-counts, kind="stable"):
        spare = int(counts[cls]) - k
        rows = np.flatnonzero((inverse == cls) & ~fully)
        for i in rows[: max(0, min(spare, short))]:
            added += int(np.count_nonzero(released[i]))
            released[i] = 0
            short -= 1
        if short == 0:
            break
    return added


def _blank_one(mat: IntArray, i: int, columns: list[int]) -> None:
    """One visit of step 2: blank one value of record i (calcSuppInds + the column choice)."""
    row = mat[i]
    both = (mat != 0) & (row != 0)
    dist = np.count_nonzero(both & (mat != row), axis=1)
    positive = dist[dist > 0]
    ids = np.flatnonzero(dist == (positive.min() if positive.size else mat.shape[1]))
    for j in columns:
        if row[j] == 0:
            continue
        if (
            ids.size == 0
            or (ids.size == 1 and ids[0] == i)
            or np.any((mat[ids, j] != row[j]) & (mat[ids, j] != 0))
        ):
            mat[i, j] = 0
            return
