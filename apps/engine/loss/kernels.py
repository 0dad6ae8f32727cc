"""Compiled scalar bounds of the metrics (numba), called once per node the search
takes from its queue when the node is known to suppress more rows than its static
bound assumed. Each mirrors, operation for operation, the Python method it stands for
(:meth:`LossMetric.suppression_bound`, :meth:`EntropyMetric.suppression_bound`), which
``tests/engine/test_kernels.py`` checks on random nodes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def loss_suppression_bound(
    levels: NDArray[np.int16],
    suppressed: int,
    weighted: NDArray[np.int64],
    penalty: NDArray[np.int64],
    rows: int,
    domain: NDArray[np.int64],
) -> float:
    """Geometric mean of ``loss_of_dimension(weighted[j, l_j] + S penalty[j, l_j])``."""
    d = len(levels)
    if d == 0:
        return 0.0
    prod = 1.0
    for j in range(d):
        lv = levels[j]
        w = weighted[j, lv] + suppressed * penalty[j, lv]
        denominator = rows * domain[j] - rows
        share = 0.0
        if denominator > 0:
            share = max(0.0, (w - rows) / denominator)
            share = math.floor(share * 1e10) / 1e10  # formulas.truncate_like_arx
        prod *= 1.0 + share
    return float(prod ** (1.0 / d) - 1.0)


@njit(cache=True, nogil=True, inline="always")
def _least_suppression_term(
    s: float,
    s_log: float,
    cum: NDArray[np.float64],
    cum_flogf: NDArray[np.float64],
    at: int,
    n: int,
) -> float:
    """One QI's least suppression entropy of ``s`` rows (``s_log`` = ``s log2 s``) at a
    level whose running sums start at ``at`` (``n`` of them)."""
    full = np.searchsorted(cum[at : at + n], s, side="right")
    filled = cum[at + full - 1] if full else 0.0
    flogf = cum_flogf[at + full - 1] if full else 0.0
    rest = s - filled
    rest_log = rest * math.log2(rest) if rest > 0 else 0.0
    return max(0.0, s_log - flogf - rest_log) * (1.0 - 1e-12)


@njit(cache=True, nogil=True)
def entropy_suppression_bound(
    levels: NDArray[np.int16],
    suppressed: int,
    by_level: NDArray[np.float64],
    cum: NDArray[np.float64],
    cum_flogf: NDArray[np.float64],
    start: NDArray[np.int64],
    length: NDArray[np.int64],
) -> float:
    """Generalization entropy plus, per QI, the least suppression entropy of
    ``suppressed`` rows (greedy fill of the most frequent values first)."""
    total = 0.0
    s = float(suppressed)
    s_log = s * math.log2(s) if s > 0 else 0.0
    for j in range(len(levels)):
        lv = levels[j]
        total += by_level[j, lv]
        total += _least_suppression_term(s, s_log, cum, cum_flogf, start[j, lv], length[j, lv])
    return total


@njit(cache=True, nogil=True)
def entropy_suppression_bounds(
    levels: NDArray[np.int16],
    suppressed: NDArray[np.int64],
    by_level: NDArray[np.float64],
    cum: NDArray[np.float64],
    cum_flogf: NDArray[np.float64],
    start: NDArray[np.int64],
    length: NDArray[np.int64],
) -> NDArray[np.float64]:
    """:func:`entropy_suppression_bound` for every node (rows of ``levels``), the same
    additions in the same order. A QI's term depends on its level and the suppressed
    rows alone, and a search's nodes share few numbers of suppressed rows (at most its
    limit): each term is computed once, when first met (on fars_subset at 5 %, 15,700
    nodes x 8 QIs took 5,000 terms), unless the numbers are too large to index."""
    n = len(levels)
    out = np.empty(n, dtype=np.float64)
    if n == 0:
        return out
    d = levels.shape[1]
    width = by_level.shape[1]
    # Each number of suppressed rows numbered in order of first appearance (a dense
    # index: the numbers are at most the search's limit).
    most = 0
    for i in range(n):
        most = max(most, suppressed[i])
    if most >= 4 * n:
        for i in range(n):
            out[i] = entropy_suppression_bound(
                levels[i], suppressed[i], by_level, cum, cum_flogf, start, length
            )
        return out
    number = np.full(most + 1, -1, dtype=np.int64)
    distinct = 0
    for i in range(n):
        if number[suppressed[i]] < 0:
            number[suppressed[i]] = distinct
            distinct += 1
    terms = np.full((distinct, d * width), np.nan, dtype=np.float64)
    for i in range(n):
        u = number[suppressed[i]]
        s = float(suppressed[i])
        s_log = s * math.log2(s) if s > 0 else 0.0
        total = 0.0
        for j in range(d):
            lv = levels[i, j]
            total += by_level[j, lv]
            term = terms[u, j * width + lv]
            if term != term:  # (not computed yet: NaN)
                term = _least_suppression_term(
                    s, s_log, cum, cum_flogf, start[j, lv], length[j, lv]
                )
                terms[u, j * width + lv] = term
            total += term
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def suppressed_leaves(
    columns: NDArray[Any],
    sizes: NDArray[np.int64],
    suppressed: NDArray[np.bool_],
    levels: NDArray[np.int64],
    leaves: NDArray[np.int64],
    offsets: NDArray[np.int64],
) -> NDArray[np.int64]:
    """For the suppressed classes (``suppressed``) of a node at ``levels``: ``out[j]`` =
    the sum of class size x leaves covered by the class's value of QI ``j``
    (``leaves[offsets[j, levels[j]] + code]``), ``out[d]`` = the suppressed rows."""
    d, c = columns.shape
    out = np.zeros(d + 1, dtype=np.int64)
    for g in range(c):
        if suppressed[g]:
            out[d] += sizes[g]
    for j in range(d):
        at = offsets[j, levels[j]]
        total = np.int64(0)
        for g in range(c):
            if suppressed[g]:
                total += sizes[g] * leaves[at + np.int64(columns[j, g])]
        out[j] = total
    return out


@njit(cache=True, nogil=True)
def suppressed_value_counts(
    columns: NDArray[Any],
    sizes: NDArray[np.int64],
    suppressed: NDArray[np.bool_],
    values: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per QI ``j``, the rows of the suppressed classes per generalized value (``values[j]``
    values), the values without any left out, in increasing code order (as floats):
    segment ``[starts[j], starts[j + 1])`` of the first array."""
    d, c = columns.shape
    starts = np.zeros(d + 1, dtype=np.int64)
    out = np.empty(max(values.sum(), 1), dtype=np.float64)
    at = 0
    for j in range(d):
        count = np.zeros(values[j], dtype=np.int64)
        for g in range(c):
            if suppressed[g]:
                count[np.int64(columns[j, g])] += sizes[g]
        for v in range(values[j]):
            if count[v]:
                out[at] = float(count[v])
                at += 1
        starts[j + 1] = at
    return out, starts


@njit(cache=True, nogil=True)
def _pairwise_sum(a: NDArray[np.float64], lo: int, n: int) -> float:
    """numpy's pairwise summation of ``a[lo : lo + n]`` (``DOUBLE_pairwise_sum``: under
    8 terms in order, up to 128 in 8 running sums, beyond split at a multiple of 8),
    the same additions in the same order."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        whole = n - n % 8
        while i < whole:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return float(res)
    half = n // 2
    half -= half % 8
    return _pairwise_sum(a, lo, half) + _pairwise_sum(a, lo + half, n - half)


@njit(cache=True, nogil=True)
def segment_sums(values: NDArray[np.float64], starts: NDArray[np.int64]) -> NDArray[np.float64]:
    """``values[starts[j] : starts[j + 1]].sum()`` for every segment ``j``, bit for bit as
    numpy sums a contiguous array (its reduction starts from 0.0, then adds the
    pairwise sum: the sign of a zero sum aside)."""
    out = np.empty(len(starts) - 1, dtype=np.float64)
    for j in range(len(starts) - 1):
        out[j] = 0.0 + _pairwise_sum(values, starts[j], starts[j + 1] - starts[j])
    return out


@njit(cache=True, nogil=True)
def loss_tables(
    frequencies: NDArray[np.int64],
    leaves: NDArray[np.int64],
    offsets: NDArray[np.int64],
    heights: NDArray[np.int64],
    rows: int,
    domain: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """:class:`LossMetric`'s tables, ``[d x (H+1)]``: per QI ``j`` and level ``L``
    (values from ``offsets[j, L]`` in ``frequencies`` and ``leaves`` alike, up to the next
    level's), the leaves covered by all rows (``weighted``), its Loss
    (``formulas.loss_of_dimension``, the same operations: ``by_level``) and the least
    increase of ``weighted`` per suppressed row (``penalty``)."""
    d, width = offsets.shape
    weighted = np.zeros((d, width), dtype=np.int64)
    by_level = np.zeros((d, width), dtype=np.float64)
    penalty = np.zeros((d, width), dtype=np.int64)
    for j in range(d):
        denominator = rows * domain[j] - rows
        for level in range(heights[j] + 1):
            at = offsets[j, level]
            if level < heights[j]:
                end = offsets[j, level + 1]
            elif j + 1 < d:
                end = offsets[j + 1, 0]
            else:
                end = len(leaves)
            total = np.int64(0)
            most = np.int64(-1)
            for g in range(at, end):
                f = frequencies[g]
                total += f * leaves[g]
                if f > 0 and leaves[g] > most:
                    most = leaves[g]
            weighted[j, level] = total
            if denominator > 0:
                share = max(0.0, (total - rows) / denominator)
                by_level[j, level] = math.floor(share * 1e10) / 1e10  # truncate_like_arx
            penalty[j, level] = domain[j] - (most if most >= 0 else domain[j])
    return weighted, by_level, penalty


@njit(cache=True, nogil=True)
def add_suppression_entropy(
    total: float,
    columns: NDArray[Any],
    sizes: NDArray[np.int64],
    suppressed: NDArray[np.bool_],
    values: NDArray[np.int64],
) -> float:
    """``total`` plus, per QI in order, the suppression entropy of the suppressed classes
    (``formulas.suppression_entropy``: ``-sum_u c_u log2(c_u / |S|)``, each QI's terms
    summed as numpy sums them, :func:`segment_sums`, and added as ``-term + 0.0``).

    The one expression of :meth:`EntropyMetric._value` and of the compiled search
    (``search/kernels/valuation.py``), so that both value a node bit for bit alike: the
    logarithm is ``math.log2`` (the C library's), which numpy's vectorized ``log2``
    differs from in the last bit on some processors (AVX-512: 1 term in 70 here)."""
    counts, starts = suppressed_value_counts(columns, sizes, suppressed, values)
    d = len(starts) - 1
    end = starts[d]
    if not end:
        return total
    rows = 0.0 + _pairwise_sum(counts, starts[0], starts[1] - starts[0])
    terms = np.empty(end, dtype=np.float64)
    for i in range(end):
        terms[i] = counts[i] * math.log2(counts[i] / rows)
    for j in range(d):
        term = 0.0 + _pairwise_sum(terms, starts[j], starts[j + 1] - starts[j])
        total += -term + 0.0
    return total


@njit(cache=True, nogil=True)
def loss_value(
    levels: NDArray[Any],
    sums: NDArray[np.int64],
    weighted: NDArray[np.int64],
    rows: int,
    domain: NDArray[np.int64],
) -> float:
    """:meth:`LossMetric._value` from :func:`suppressed_leaves`' sums (``sums``): per QI
    ``loss_of_dimension(weighted[j, l_j] - sums[j] + S |H_j|)``, their geometric mean
    (``formulas.geometric_mean_loss``), the same operations in the same order."""
    d = len(levels)
    if d == 0:
        return 0.0
    s = sums[d]
    prod = 1.0
    for j in range(d):
        w = weighted[j, levels[j]] - sums[j] + s * domain[j]
        denominator = rows * domain[j] - rows
        share = 0.0
        if denominator > 0:
            share = max(0.0, (w - rows) / denominator)
            share = math.floor(share * 1e10) / 1e10  # formulas.truncate_like_arx
        prod *= 1.0 + share
    return float(prod ** (1.0 / d) - 1.0)


@njit(cache=True, nogil=True)
def precision_value(
    levels: NDArray[Any], heights: NDArray[np.int64], rows: int, suppressed: int
) -> float:
    """``formulas.precision_value``, the same operations in the same order."""
    d = len(levels)
    if rows == 0 or d == 0:
        return 0.0
    total = 0.0
    for j in range(d):
        share = levels[j] / heights[j] if heights[j] else 0.0
        total += ((rows - suppressed) * share + suppressed) / rows
    return total / d
