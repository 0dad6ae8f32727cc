"""A fast heuristic for large problems: pool small classes, then place the rest cheaply.

Phase 1 (pooling): blank patterns are tried cheapest first; under a pattern, small
classes (fewer than k records) that become identical are pooled into one group when
together (with records already there) they reach k, largest pools first.  sdcMicro's
heuristic reaches much the same pools one record at a time; pooling whole classes at
once avoids its repeated blanks.

Phase 2: the classes still smaller than k are taken smallest first.  For each, every blank pattern is
tried, cheapest first: the group it lands in is usable when the records already there,
the class itself and what donors can add reach k.  Donors are other small classes that
land in the same group (they must move anyway) and the surplus of classes of ≥ k (the
records beyond their k-th, which can move without breaking their own class).  The
estimated cost is (records moved) × (pattern cost); the cheapest usable pattern wins.
The last resort is the all-blank pattern, which every record can join.

The heuristic does not prove anything: its cost is reported with the gap to the linear
relaxation's bound (exact.py), so a person sees how far from optimal it can be.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from apps.engine.techniques._common import IntArray
from apps.engine.techniques.local_suppression.model import SuppressionModel


def solve_greedy(model: SuppressionModel) -> IntArray:
    """Amounts per candidate (see model.py) forming a k-anonymous release."""
    k = model.k
    counts = model.counts
    amounts = np.zeros(model.cand_tuple.size, dtype=np.int64)
    if counts.size == 0:
        return amounts
    by_tuple: dict[int, list[int]] = defaultdict(list)
    by_group: dict[int, list[int]] = defaultdict(list)
    for i in np.lexsort((model.cand_pattern, model.cand_cost)):
        by_tuple[int(model.cand_tuple[i])].append(int(i))
        by_group[int(model.cand_group[i])].append(int(i))
    home = {t: cands[0] for t, cands in by_tuple.items() if model.cand_pattern[cands[0]] == 0}
    size = np.zeros(model.groups, dtype=np.int64)
    surplus = np.zeros(counts.size, dtype=np.int64)
    placed = np.zeros(counts.size, dtype=np.bool_)
    for t in np.flatnonzero(counts >= k):
        i = home[int(t)]
        amounts[i] = counts[t]
        size[model.cand_group[i]] += counts[t]
        surplus[t] = counts[t] - k
        placed[t] = True
    top_of = _all_blank_candidates(model)
    top_group = int(model.cand_group[next(iter(top_of.values()))])

    def supply(i: int, t: int) -> int:
        total = 0
        for j in by_group[int(model.cand_group[i])]:
            u = int(model.cand_tuple[j])
            if u != t:
                total += int(counts[u]) if not placed[u] else int(surplus[u])
        return total

    def fill(group: int, need: int, whole: bool) -> None:
        donors = sorted(
            by_group[group],
            key=lambda j: (placed[model.cand_tuple[j]], -counts[model.cand_tuple[j]], j),
        )
        for j in donors:
            if need <= 0:
                return
            u = int(model.cand_tuple[j])
            if not placed[u]:
                take = int(counts[u])
                placed[u] = True
            else:
                take = min(int(surplus[u]), need)
                if whole and take < need and u in home:
                    take = int(amounts[home[u]])
                take = min(take, int(amounts[home[u]])) if u in home else 0
                if take <= 0:
                    continue
                surplus[u] = max(0, int(surplus[u]) - take)
                amounts[home[u]] -= take
                size[model.cand_group[home[u]]] -= take
            amounts[j] += take
            size[group] += take
            need -= take

    _pool(model, amounts, size, placed)
    for t in sorted(np.flatnonzero(counts < k), key=lambda t: (counts[t], t)):
        if placed[t]:
            continue
        best: tuple[float, int] | None = None
        for i in by_tuple[int(t)]:
            group = int(model.cand_group[i])
            need = max(0, k - int(size[group]) - int(counts[t]))
            if need and supply(i, int(t)) < need:
                continue
            estimate = float(model.cand_cost[i]) * (int(counts[t]) + need)
            if best is None or estimate < best[0]:
                best = (estimate, i)
        i = best[1] if best is not None else top_of[int(t)]
        group = int(model.cand_group[i])
        amounts[i] += counts[t]
        size[group] += counts[t]
        placed[t] = True
        fill(group, k - int(size[group]), whole=best is None)
    _repair(model, amounts, size, top_group)
    return amounts


def _pool(
    model: SuppressionModel,
    amounts: IntArray,
    size: IntArray,
    placed: np.ndarray,
) -> None:
    """Phase 1: pool small classes into groups that reach k, cheapest patterns first.

    Among the patterns of one cost, the largest pool is formed first, then the counts
    are refreshed (a class pooled once is not available to another pool).
    """
    blanking = model.cand_pattern > 0
    for cost in np.unique(model.cand_cost[blanking]):
        level = blanking & (model.cand_cost == cost)
        while True:
            cands = np.flatnonzero(level & ~placed[model.cand_tuple])
            if cands.size == 0:
                break
            groups = model.cand_group[cands]
            pooled = np.bincount(
                groups, weights=model.counts[model.cand_tuple[cands]], minlength=model.groups
            )
            usable = (pooled > 0) & (pooled + size >= model.k)
            if not np.any(usable):
                break
            g = int(np.argmax(np.where(usable, pooled, -1.0)))
            for i in cands[groups == g]:
                t = model.cand_tuple[i]
                amounts[i] += model.counts[t]
                size[g] += model.counts[t]
                placed[t] = True


def _all_blank_candidates(model: SuppressionModel) -> dict[int, int]:
    """Each tuple's candidate that blanks every column (the group every record can join)."""
    m = model.tuples.shape[1]
    missing = ((model.tuples == 0).astype(np.int64) << np.arange(m, dtype=np.int64)).sum(axis=1)
    full = (1 << m) - 1
    top = (model.cand_pattern | missing[model.cand_tuple]) == full
    return {int(model.cand_tuple[i]): int(i) for i in np.flatnonzero(top)}


def _repair(model: SuppressionModel, amounts: IntArray, size: IntArray, top_group: int) -> None:
    """Make every group hold 0 or ≥ k records, using the all-blank group as the sink.

    A group left with 1..k-1 records (a donor emptied it) moves whole to the all-blank
    group; an all-blank group short of k takes surplus records (beyond a group's k-th)
    first, else a whole group.  Each step empties a group or uses up surplus, so it ends.
    """
    top_of = _all_blank_candidates(model)

    def move(i: int, take: int) -> None:
        t = int(model.cand_tuple[i])
        g = int(model.cand_group[i])
        amounts[i] -= take
        amounts[top_of[t]] += take
        size[g] -= take
        size[top_group] += take

    while True:
        short = np.flatnonzero((size > 0) & (size < model.k))
        short = short[short != top_group]
        if short.size:
            for i in np.flatnonzero(np.isin(model.cand_group, short) & (amounts > 0)):
                move(int(i), int(amounts[i]))
            continue
        need = model.k - int(size[top_group])
        if size[top_group] == 0 or need <= 0:
            return
        used = np.flatnonzero((amounts > 0) & (model.cand_group != top_group))
        spare = size[model.cand_group[used]] - model.k
        if np.any(spare > 0):
            donor = int(used[np.argmax(spare)])
            move(donor, min(int(spare.max()), int(amounts[donor]), need))
        else:  # no surplus anywhere: the smallest group joins whole
            g = int(model.cand_group[used[np.argmin(size[model.cand_group[used]])]])
            for member in used[model.cand_group[used] == g]:
                move(int(member), int(amounts[member]))
