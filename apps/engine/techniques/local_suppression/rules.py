"""How many released records an intruder cannot tell apart from a record with blanks.

After local suppression some cells are blank. Three rules count a record's "class":

* **own value** (the default, and what the product measures): a blank is a value of its
  own, so a class is the set of records identical on every quasi-identifier, blanks
  included.  This is METHOD step 4 ("a missing value is a value of its own"), ARX's
  treatment of a suppressed value ``*``, sdcMicro's ``alpha = 0``, and the k-anonymity
  by suppression of Meyerson & Williams (2004).  It can be measured from the released
  file alone, and it is *safe*: every record identical to r is also consistent with r's
  true values, so the intruder's candidate set (below) is never smaller.
* **wildcard** (sdcMicro's default ``alpha = 1``, `freqCalc` / `localSuppression`): a blank
  matches any value, on either side.  It counts more records per class, so it needs
  fewer blanks, but it can overstate protection: if the only very young married
  respondent has her marital status blanked among young never-married respondents, the
  wildcard count is large, yet an intruder who knows she is married sees exactly one
  record that could be hers (seed 004's example; see the tests).
* **intruder** (prosecutor view, needs the original data): the number of released
  records consistent with the record's *true* values, a blank matching anything.  This
  is what the intruder who knows the target's quasi-identifiers actually faces.

All three are computed on integer codes (0 = blank or missing, as `_common.row_codes`),
grouped by blank pattern: records with the same blanked columns are compared on the
other columns with one sort, so the cost is (patterns²) sorts, never a rows² loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import IntArray, pack_rows

BlankRule = Literal["own_value", "wildcard", "intruder"]
BLANK_RULES: tuple[BlankRule, ...] = ("own_value", "wildcard", "intruder")


def blank_patterns(codes: IntArray) -> IntArray:
    """Each row's blank pattern as a bit mask (bit j set when column j is blank)."""
    bits = (codes == 0).astype(np.int64) << np.arange(codes.shape[1], dtype=np.int64)
    patterns: IntArray = bits.sum(axis=1).astype(np.int64)
    return patterns


def _cards(*matrices: IntArray) -> list[int]:
    return [
        max(int(m[:, j].max()) if m.size else 0 for m in matrices)
        for j in range(matrices[0].shape[1])
    ]


def _project(codes: IntArray, mask: int, cards: list[int]) -> IntArray:
    """Keys of the rows with the columns of `mask` blanked (compared on the others only)."""
    projected = codes.copy()
    for j in range(codes.shape[1]):
        if mask >> j & 1:
            projected[:, j] = 0
    return pack_rows(projected, cards)


def own_value_class_sizes(released: IntArray) -> IntArray:
    """Per row: how many released rows are identical to it, blanks included."""
    if released.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    keys = pack_rows(released, _cards(released))
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    sizes: IntArray = counts[inverse.ravel()].astype(np.int64)
    return sizes


def compatible_counts(queries: IntArray, released: IntArray, *, query_wildcards: bool) -> IntArray:
    """Per query row: released rows that agree with it wherever neither is blank.

    With `query_wildcards` a 0 in the query matches anything (sdcMicro's wildcard rule);
    without, a query 0 (a truly missing value) only matches a released blank.
    """
    if queries.shape[1] != released.shape[1]:
        raise EngineInputError("queries and released rows must have the same columns")
    out = np.zeros(queries.shape[0], dtype=np.int64)
    if queries.shape[0] == 0 or released.shape[0] == 0:
        return out
    cards = _cards(queries, released)
    released_patterns = blank_patterns(released)
    query_patterns = (
        blank_patterns(queries) if query_wildcards else np.zeros(queries.shape[0], np.int64)
    )
    for q_pattern in np.unique(query_patterns):
        q_rows = np.flatnonzero(query_patterns == q_pattern)
        for r_pattern in np.unique(released_patterns):
            mask = int(q_pattern) | int(r_pattern)
            r_keys = _project(released[released_patterns == r_pattern], mask, cards)
            values, counts = np.unique(r_keys, return_counts=True)
            q_keys = _project(queries[q_rows], mask, cards)
            at = np.clip(np.searchsorted(values, q_keys), 0, values.size - 1)
            out[q_rows] += np.where(values[at] == q_keys, counts[at], 0)
    return out


def wildcard_class_sizes(released: IntArray) -> IntArray:
    """Per row: sdcMicro's f_k with alpha = 1 (a blank matches any value, either side)."""
    return compatible_counts(released, released, query_wildcards=True)


def intruder_candidates(original: IntArray, released: IntArray) -> IntArray:
    """Per row: released rows consistent with the row's true values (prosecutor view).

    `original` and `released` hold the same rows in the same order, coded alike.
    """
    if original.shape != released.shape:
        raise EngineInputError(
            f"original ({original.shape[0]} rows) and release ({released.shape[0]} rows) differ"
        )
    return compatible_counts(original, released, query_wildcards=False)


def class_sizes(released: IntArray, rule: BlankRule, original: IntArray | None = None) -> IntArray:
    """Per-row class size under `rule` (the intruder rule needs the original codes)."""
    if rule == "own_value":
        return own_value_class_sizes(released)
    if rule == "wildcard":
        return wildcard_class_sizes(released)
    if rule == "intruder":
        if original is None:
            raise EngineInputError("the intruder rule needs the original data")
        return intruder_candidates(original, released)
    raise EngineInputError(f"unknown blank rule {rule!r}: use one of {', '.join(BLANK_RULES)}")


@dataclass(frozen=True)
class BlankRuleRisk:
    """Risk figures of a release with blanks, under one rule."""

    rule: BlankRule
    smallest_class: int
    max_risk: float
    rows_below_k: int  # rows whose class is smaller than k
    k: int


def blank_rule_risk(sizes: IntArray, rule: BlankRule, k: int) -> BlankRuleRisk:
    """Smallest class, max risk = 1/smallest and rows under k (0 rows: risk 0)."""
    smallest = int(sizes.min()) if sizes.size else 0
    return BlankRuleRisk(
        rule=rule,
        smallest_class=smallest,
        max_risk=1.0 / smallest if smallest else 0.0,
        rows_below_k=int(np.count_nonzero(sizes < k)),
        k=k,
    )
