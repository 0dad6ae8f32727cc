"""Compiled judging of equivalence classes by the sensitive-attribute models (numba).

Input is a node's table of *cells*: one row per distinct (quasi-identifier codes at the
node's levels, sensitive codes) with its rows, as the search's roll-up produces it when
the sensitive columns ride along as columns that never generalize. :func:`judge_cells`
groups the cells into classes (equal quasi-identifier codes), builds each class's
histogram of every sensitive column it needs, and applies the models: each is the
compiled form of one function of ``sensitive/formulas.py`` (checked against them in
``tests/engine/test_sensitive.py``).

Layout of the per-column arrays (:class:`apps.engine.search.sensitive.SensitiveTable`
builds them): column ``s`` has ``m = col_m[s]`` values; its per-value arrays (``shares``,
``rank``, ``order``, ``base_sum``, ``base_distance``) start at ``col_off[s]``;
hierarchy level ``L``'s
map at ``h_off[s] + L m`` and its node totals at ``h_off[s] + L m`` of ``h_tot``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

#: Model kernel codes (models.KIND_CODES).
DISTINCT, ENTROPY, RECURSIVE, EQUAL, HIERARCHICAL, ORDERED = range(6)
#: Class status: released, too small, failing a model.
RELEASED, TOO_SMALL, FAILS_MODEL = 0, 1, 2
#: Summary slots: actual suppression, then the part due to classes smaller than k.
(
    SUPPRESSED_ROWS,
    RELEASED_CLASSES,
    RELEASED_SQUARES,
    MIN_RELEASED,
    SMALL_ROWS,
    LARGE_CLASSES,
    LARGE_SQUARES,
) = range(7)
SUMMARY = 7
_LIMIT = np.int64(1) << np.int64(62)


@njit(cache=True, nogil=True)
def _dense(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], np.int64]:
    """Keys replaced by their rank among the distinct keys (same grouping, small span)."""
    order = np.argsort(keys, kind="mergesort")
    out = np.empty(len(keys), dtype=np.int64)
    rank = np.int64(-1)
    previous = np.int64(0)
    for i in range(len(order)):
        key = keys[order[i]]
        if i == 0 or key != previous:
            rank += 1
            previous = key
        out[order[i]] = rank
    return out, rank + 1


@njit(cache=True, nogil=True)
def class_order(codes: NDArray[Any], d: int, radix: NDArray[np.int64]) -> NDArray[np.int64]:
    """Cells sorted so that each class's cells are adjacent: on the mixed-radix key of
    the first ``d`` code rows (re-ranked whenever it would pass 2**62), by a counting
    sort when the key's span is small, else a stable sort."""
    m = codes.shape[1]
    keys = np.zeros(m, dtype=np.int64)
    span = np.int64(1)
    for j in range(d):
        r = radix[j]
        if r <= 1:
            continue
        if span > _LIMIT // r:
            keys, span = _dense(keys)
        for i in range(m):
            keys[i] = keys[i] * r + np.int64(codes[j, i])
        span *= r
    if span <= max(np.int64(1024), np.int64(4) * m):
        start = np.zeros(span + 1, dtype=np.int64)
        for i in range(m):
            start[keys[i] + 1] += 1
        for v in range(span):
            start[v + 1] += start[v]
        order = np.empty(m, dtype=np.int64)
        for i in range(m):
            order[start[keys[i]]] = i
            start[keys[i]] += 1
        return order
    return np.argsort(keys, kind="mergesort").astype(np.int64)


@njit(cache=True, nogil=True)
def _entropy_passes(counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int,
                    size: np.int64, l_value: float, need: int) -> bool:  # fmt: skip
    if nt < need:
        return False
    bound = size * (np.log(size) - np.log(l_value))
    total = 0.0
    for i in range(nt):
        f = counts[touched[i]]
        total += f * np.log(f)
    return not bound < total


@njit(cache=True, nogil=True)
def _recursive_passes(counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int,
                      c: float, need: int) -> bool:  # fmt: skip
    if nt < need:
        return False
    freqs = np.empty(nt, dtype=np.int64)
    for i in range(nt):
        freqs[i] = counts[touched[i]]
    freqs.sort()
    tail = 0.0
    for i in range(nt - need + 1):
        tail += freqs[i]
    return bool(freqs[nt - 1] < c * tail)


@njit(cache=True, nogil=True)
def _equal_distance(counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int,
                    size: np.int64, shares: NDArray[np.float64], off: np.int64) -> float:  # fmt: skip
    # 1/2 sum_i |p_i - q_i| = 1/2 (1 + sum over present values (|q - p| - q)) (ARX)
    total = 1.0
    for i in range(nt):
        v = touched[i]
        q = shares[off + v]
        total += abs(q - counts[v] / size) - q
    return total / 2.0


@njit(cache=True, nogil=True)
def _node_sum(
    counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int, size: np.int64,
    rows: np.int64, h_map: NDArray[np.int64], h_tot: NDArray[np.int64], at: np.int64,
    acc: NDArray[np.int64], nodes: NDArray[np.int64],
) -> np.int64:  # fmt: skip
    """``sum over the level's nodes touched by the class of |net| - G Q`` with
    ``net = G Q - C P`` (``G`` overall rows under the node, ``C`` class rows under it,
    ``P`` input rows, ``Q`` class rows); untouched nodes add 0 to it."""
    nn = 0
    for i in range(nt):
        a = h_map[at + touched[i]]
        if acc[a] == 0:
            nodes[nn] = a
            nn += 1
        acc[a] += counts[touched[i]]
    total = np.int64(0)
    for i in range(nn):
        a = nodes[i]
        g = h_tot[at + a] * size
        total += abs(g - acc[a] * rows) - g
        acc[a] = 0
    return total


@njit(cache=True, nogil=True)
def _hierarchical_distance(
    counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int, size: np.int64,
    rows: np.int64, height: int, m: int, h_map: NDArray[np.int64], h_tot: NDArray[np.int64],
    h_off: np.int64, acc: NDArray[np.int64], nodes: NDArray[np.int64],
) -> float:  # fmt: skip
    # sum over nodes at level L of min(pos, neg) = (A_(L-1) - A_L) / 2 with A_L the sum
    # of |net| over the nodes of level L (children's nets add up to the parent's).
    if height == 0:
        return 0.0
    previous = _node_sum(counts, touched, nt, size, rows, h_map, h_tot, h_off, acc, nodes)
    cost = 0.0
    for level in range(1, height + 1):
        at = h_off + np.int64(level) * m
        current = _node_sum(counts, touched, nt, size, rows, h_map, h_tot, at, acc, nodes)
        cost += (level / height) * ((previous - current) // 2)
        previous = current
    return cost / (float(rows) * float(size))


@njit(cache=True, nogil=True)
def _ordered_distance(
    counts: NDArray[np.int64], touched: NDArray[np.int64], nt: int, size: np.int64,
    m: int, rank: NDArray[np.int64], order: NDArray[np.int64], shares: NDArray[np.float64],
    base_sum: NDArray[np.float64], base_distance: NDArray[np.float64], off: np.int64,
) -> float:  # fmt: skip
    # sum_i |sum_(j<=i) (p_j - q_j)| with ARX's operations in ARX's order, so that a
    # class exactly at the threshold is judged as ARX judges it: up to the class's first
    # value the running sums are the input's alone (precomputed, base_*), then one step
    # per value in increasing order.
    start = m
    for i in range(nt):
        start = min(start, rank[off + touched[i]])
    running = base_sum[off + start - 1] if start > 0 else 0.0
    distance = base_distance[off + start - 1] if start > 0 else 0.0
    for i in range(start, m):
        v = order[off + i]
        running += counts[v] / size - shares[off + v]
        distance += abs(running)
    return float(distance)


@njit(cache=True, nogil=True)
def judge_cells(
    codes: NDArray[Any],
    sizes: NDArray[np.int64],
    d: int,
    radix: NDArray[np.int64],
    k: int,
    kinds: NDArray[np.int64],
    model_col: NDArray[np.int64],
    param: NDArray[np.float64],
    param_c: NDArray[np.float64],
    need: NDArray[np.int64],
    col_m: NDArray[np.int64],
    col_off: NDArray[np.int64],
    col_rows: NDArray[np.int64],
    shares: NDArray[np.float64],
    rank: NDArray[np.int64],
    order: NDArray[np.int64],
    base_sum: NDArray[np.float64],
    base_distance: NDArray[np.float64],
    h_height: NDArray[np.int64],
    h_off: NDArray[np.int64],
    h_map: NDArray[np.int64],
    h_tot: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int8], NDArray[np.int64]]:
    """Classes of a cell table (module docstring) and their status under ``k`` and the
    models ``kinds[i]`` on sensitive column ``model_col[i]`` (row ``d + model_col[i]`` of
    ``codes``) with parameter ``param[i]`` (l or t), ``param_c[i]`` (c) and least
    distinct values ``need[i]``.

    Returns ``(first cell of each class, class sizes, status, summary)``: status
    :data:`RELEASED`, :data:`TOO_SMALL` (fewer than ``k`` rows) or :data:`FAILS_MODEL`;
    summary slots :data:`SUPPRESSED_ROWS` ... :data:`LARGE_SQUARES`.
    """
    m = codes.shape[1]
    cells = class_order(codes, d, radix)
    first = np.empty(m, dtype=np.int64)
    class_sizes = np.empty(m, dtype=np.int64)
    status = np.zeros(m, dtype=np.int8)
    widest = 1
    for s in range(len(col_m)):
        widest = max(widest, col_m[s])
    counts = np.zeros(widest, dtype=np.int64)
    touched = np.empty(widest, dtype=np.int64)
    acc = np.zeros(widest, dtype=np.int64)
    nodes = np.empty(widest, dtype=np.int64)
    used = np.zeros(len(col_m), dtype=np.bool_)
    for i in range(len(kinds)):
        used[model_col[i]] = True
    summary = np.zeros(SUMMARY, dtype=np.int64)
    none = np.int64(1) << np.int64(62)
    least = none
    classes = 0
    begin = 0
    while begin < m:
        end = begin + 1
        while end < m:
            a, b = cells[begin], cells[end]
            same = True
            for j in range(d):
                if codes[j, a] != codes[j, b]:
                    same = False
                    break
            if not same:
                break
            end += 1
        size = np.int64(0)
        for i in range(begin, end):
            size += sizes[cells[i]]
        verdict = RELEASED
        if size < k:
            verdict = TOO_SMALL
        else:
            for s in range(len(col_m)):
                if not used[s] or verdict != RELEASED:
                    continue
                nt = 0
                for i in range(begin, end):
                    v = np.int64(codes[d + s, cells[i]])
                    if counts[v] == 0:
                        touched[nt] = v
                        nt += 1
                    counts[v] += sizes[cells[i]]
                for x in range(len(kinds)):
                    if model_col[x] != s:
                        continue
                    kind = kinds[x]
                    if kind == DISTINCT:
                        ok = nt >= need[x]
                    elif kind == ENTROPY:
                        ok = _entropy_passes(counts, touched, nt, size, param[x], need[x])
                    elif kind == RECURSIVE:
                        ok = _recursive_passes(counts, touched, nt, param_c[x], need[x])
                    elif kind == EQUAL:
                        distance = _equal_distance(counts, touched, nt, size, shares, col_off[s])
                        ok = distance <= param[x]
                    elif kind == HIERARCHICAL:
                        distance = _hierarchical_distance(
                            counts, touched, nt, size, col_rows[s], h_height[s], col_m[s],
                            h_map, h_tot, h_off[s], acc, nodes,
                        )  # fmt: skip
                        ok = distance <= param[x]
                    else:
                        distance = _ordered_distance(
                            counts, touched, nt, size, col_m[s], rank, order, shares,
                            base_sum, base_distance, col_off[s],
                        )  # fmt: skip
                        ok = distance <= param[x] * (col_m[s] - 1.0)
                    if not ok:
                        verdict = FAILS_MODEL
                        break
                for i in range(nt):
                    counts[touched[i]] = 0
        first[classes] = cells[begin]
        class_sizes[classes] = size
        status[classes] = verdict
        if verdict == RELEASED:
            summary[RELEASED_CLASSES] += 1
            summary[RELEASED_SQUARES] += size * size
            least = min(least, size)
        else:
            summary[SUPPRESSED_ROWS] += size
        if verdict == TOO_SMALL:
            summary[SMALL_ROWS] += size
        else:
            summary[LARGE_CLASSES] += 1
            summary[LARGE_SQUARES] += size * size
        classes += 1
        begin = end
    summary[MIN_RELEASED] = 0 if least == none else least
    return first[:classes].copy(), class_sizes[:classes].copy(), status[:classes].copy(), summary
