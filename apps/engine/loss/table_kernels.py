"""Compiled passes that make a metric's tables for one problem and its static bound of
every node the search may take: what a search with suppression made per QI and level in
Python (issue #26), each equal bit for bit to the numpy computation it replaced
(``tests/engine/test_metric_tables.py``: numpy's ``log2`` and ``**`` stay numpy's, taken
by the caller on whole arrays, as they differ in the last bit from the C library's on
some processors; sums follow numpy's order)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.loss.kernels import _pairwise_sum


@njit(cache=True, nogil=True)
def entropy_ratios(
    frequencies: NDArray[np.int64],
    frequency_at: NDArray[np.int64],
    values: NDArray[np.int64],
    heights: NDArray[np.int64],
    flat_maps: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """The operands of ``formulas.generalization_entropies`` for every QI and level at
    once (a problem's ``flat_frequencies``, ``frequency_at``, ``level_values``, ``flat_maps``,
    ``map_offsets``): per QI ``j`` and level ``L``, the rows ``f`` of each leaf value present
    and ``f / g``, ``g`` the rows of its value at ``L``, from ``at[j, L]``, ``present[j]`` of
    them. The entropy is ``-sum f log2(f / g)``: the logarithm is numpy's, taken by the
    caller on all of them at once (:func:`entropy_by_level`)."""
    d = len(heights)
    present = np.zeros(d, dtype=np.int64)
    total = 0
    for j in range(d):
        base = frequency_at[j, 0]
        for v in range(values[j, 0]):
            if frequencies[base + v] > 0:
                present[j] += 1
        total += present[j] * (heights[j] + 1)
    f = np.empty(total, dtype=np.float64)
    ratio = np.empty(total, dtype=np.float64)
    at = np.zeros(values.shape, dtype=np.int64)
    c = 0
    for j in range(d):
        base = frequency_at[j, 0]
        for level in range(heights[j] + 1):
            at[j, level] = c
            above, off = frequency_at[j, level], map_offsets[j, 0, level]
            for v in range(values[j, 0]):
                rows = frequencies[base + v]
                if rows > 0:
                    code = np.int64(v) if level == 0 else np.int64(flat_maps[off + v])
                    f[c] = float(rows)
                    ratio[c] = float(rows) / float(frequencies[above + code])
                    c += 1
    return f, ratio, at, present


@njit(cache=True, nogil=True)
def entropy_by_level(
    terms: NDArray[np.float64],
    at: NDArray[np.int64],
    present: NDArray[np.int64],
    heights: NDArray[np.int64],
) -> NDArray[np.float64]:
    """``[d x (H+1)]``: per QI and level, ``-sum`` of its ``terms`` (``f log2(f / g)``,
    :func:`entropy_ratios`) as ``generalization_entropies`` sums them (numpy's sum of a
    row, :func:`_pairwise_sum`, then ``-v + 0.0``)."""
    out = np.zeros(at.shape, dtype=np.float64)
    for j in range(len(heights)):
        if present[j]:
            for level in range(heights[j] + 1):
                out[j, level] = -(0.0 + _pairwise_sum(terms, at[j, level], present[j])) + 0.0
    return out


@njit(cache=True, nogil=True)
def descending_frequencies(
    frequencies: NDArray[np.int64],
    frequency_at: NDArray[np.int64],
    values: NDArray[np.int64],
    heights: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Per QI ``j`` and level ``L``, the rows of its values present in decreasing order
    (from ``start[j, L]``, ``length[j, L]`` of them, all in one array) and their running
    sums (``EntropyMetric``'s running sums, as ``np.cumsum`` adds them)."""
    start = np.zeros(values.shape, dtype=np.int64)
    length = np.zeros(values.shape, dtype=np.int64)
    total = 0
    for j in range(len(heights)):
        for level in range(heights[j] + 1):
            base = frequency_at[j, level]
            start[j, level] = total
            for v in range(values[j, level]):
                if frequencies[base + v] > 0:
                    length[j, level] += 1
            total += length[j, level]
    desc = np.empty(total, dtype=np.float64)
    cum = np.empty(total, dtype=np.float64)
    for j in range(len(heights)):
        for level in range(heights[j] + 1):
            base, at, n = frequency_at[j, level], start[j, level], length[j, level]
            found = np.empty(n, dtype=np.int64)
            c = 0
            for v in range(values[j, level]):
                if frequencies[base + v] > 0:
                    found[c] = frequencies[base + v]
                    c += 1
            found.sort()
            running = 0.0
            for i in range(n):
                desc[at + i] = float(found[n - 1 - i])
                running = desc[at + i] if i == 0 else running + desc[at + i]
                cum[at + i] = running
    return desc, cum, start, length


@njit(cache=True, nogil=True)
def running_sums(
    terms: NDArray[np.float64], start: NDArray[np.int64], length: NDArray[np.int64]
) -> NDArray[np.float64]:
    """The running sums of ``terms`` within each segment (``start[j, L]``, ``length[j,
    L]``), as ``np.cumsum`` adds them."""
    out = np.empty(len(terms), dtype=np.float64)
    rows, cols = start.shape
    for j in range(rows):
        for level in range(cols):
            at = start[j, level]
            for i in range(length[j, level]):
                out[at + i] = terms[at + i] if i == 0 else out[at + i - 1] + terms[at + i]
    return out


@njit(cache=True, nogil=True)
def entropy_lower_bounds(
    levels: NDArray[np.int16], by_level: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Per node (rows of ``levels``), ``0.0 + by_level[0, l_0] + by_level[1, l_1] + ...``
    in QI order, the additions ``EntropyMetric.lower_bounds`` made with numpy."""
    n, d = levels.shape
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        total = 0.0
        for j in range(d):
            total += by_level[j, levels[i, j]]
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def loss_products(
    levels: NDArray[np.int16],
    suppressed: NDArray[np.int64],
    weighted: NDArray[np.int64],
    penalty: NDArray[np.int64],
    rows: int,
    domain: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Per node (rows of ``levels``, ``suppressed[i]`` rows known suppressed), the product
    over QIs of ``1 + truncated share`` that ``LossMetric.suppression_bounds`` takes the
    ``d``-th root of, the same operations in the same order (the root stays numpy's)."""
    n, d = levels.shape
    out = np.ones(n, dtype=np.float64)
    for j in range(d):
        denominator = rows * domain[j] - rows
        if denominator <= 0:
            continue
        for i in range(n):
            lv = levels[i, j]
            w = weighted[j, lv] + suppressed[i] * penalty[j, lv]
            share = max(0.0, (w - rows) / denominator)
            out[i] *= 1.0 + np.floor(share * 1e10) / 1e10  # formulas.truncate_like_arx
    return out


@njit(cache=True, nogil=True)
def loss_static_products(
    levels: NDArray[np.int16], by_level: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Per node, ``(1 + by_level[0, l_0]) (1 + by_level[1, l_1]) ...`` in QI order, the
    product ``LossMetric.lower_bounds`` takes the ``d``-th root of."""
    n, d = levels.shape
    out = np.ones(n, dtype=np.float64)
    for j in range(d):
        for i in range(n):
            out[i] *= 1.0 + by_level[j, levels[i, j]]
    return out


@njit(cache=True, nogil=True)
def precision_bounds(
    levels: NDArray[np.int16], suppressed: NDArray[np.int64], heights: NDArray[np.int64], rows: int
) -> NDArray[np.float64]:
    """``PrecisionMetric.suppression_bounds`` (with ``suppressed`` empty: its
    ``lower_bounds``), the same operations in the same order: per node the mean over QIs
    of ``share + (S / n)(1 - share)``, ``share = l_j / h_j`` (``l_j / h_j`` alone)."""
    n, d = levels.shape
    out = np.zeros(n, dtype=np.float64)
    static = len(suppressed) == 0
    # Every share l_j / h_j once (the same division per node: read, not redone).
    shares = np.zeros((d, max(heights.max(), 0) + 1 if d else 1), dtype=np.float64)
    for j in range(d):
        for level in range(heights[j] + 1):
            shares[j, level] = level / heights[j] if heights[j] else 0.0
    for i in range(n):
        total = 0.0
        frac = 0.0 if static else suppressed[i] / rows
        for j in range(d):
            share = shares[j, levels[i, j]]
            if static:
                if heights[j]:
                    total += share
            else:
                total += share + frac * (1.0 - share)
        out[i] = total / d
    return out
