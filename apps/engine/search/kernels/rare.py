"""Rows every node certainly suppresses, from single QIs and pairs of QIs (``bounds.py``).

For a QI ``j`` at level ``L`` (a *single*) or a pair ``(i, j)`` at levels ``(a, b)``, the
*rare rows* are the rows in cells of fewer than ``k`` rows. :func:`rare_rows` computes
them for one ``k``, in segments: single ``j`` covers one segment per level, pair ``(i, j)``
one per level pair, ``a * (heights[j] + 1) + b`` from its base. :func:`lattice.raise_by_rare`
then gives every node the most rare rows of its singles and pairs.

Only what can matter is grouped. A pair's rare rows are at least its singles' (a cell of
the pair lies in a cell of each QI), so where a single already has more than ``cap``
rare rows (the most rows any solve allows to suppress), the pair's segment gets the
larger single, which fails the node all the same; with consistent hierarchies rare rows
never grow going up (cells only merge), so a level pair with none has none above it
either. The other level pairs are grouped each from the one below it, as a chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.grouping import (
    LevelMaps,
    _log2,
    _span,
    _table_size,
    gather,
    group,
    scratch_size,
)


@njit(cache=True, nogil=True)
def _rare(sizes: NDArray[np.int64], count: int, k: int) -> np.int64:
    total = np.int64(0)
    for g in range(count):
        s = sizes[g]
        total += s if s < k else 0
    return total


@njit(cache=True, nogil=True)
def _singles(
    heights: NDArray[np.int64], frequencies: NDArray[np.int64], values: NDArray[np.int64], k: int
) -> NDArray[np.int64]:
    """Rare rows of every QI at every level (QI by QI, level by level), from the rows per
    value at each level (``frequencies``, in that order, ``values[j, L]`` per level)."""
    out = np.zeros(int(heights.sum()) + len(heights), dtype=np.int64)
    at = 0
    s = 0
    for j in range(len(heights)):
        for level in range(heights[j] + 1):
            total = np.int64(0)
            for v in range(values[j, level]):
                f = frequencies[at + v]
                if 0 < f < k:
                    total += f
            at += values[j, level]
            out[s] = total
            s += 1
    return out


@njit(cache=True, nogil=True)
def _fewer_tuples(
    codes: NDArray[Any], counts: NDArray[np.int64], radix: NDArray[np.int64]
) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The distinct rows of ``codes`` (``[d x n]``, QI ``j`` with ``radix[j]`` values)
    with their summed ``counts``, in order of first appearance: the tuples mapped to
    the levels the pairs start from, whose cells they count in fewer passes (the same
    cells, the same rows). Unchanged when the key would not fit in 62 bits."""
    d, n = codes.shape
    span = _span(radix)
    if span < 0 or n == 0:
        return codes, counts
    keys = np.zeros(n, dtype=np.int64)
    for j in range(d):
        r = radix[j]
        if r > 1:
            row = codes[j]
            for i in range(n):
                keys[i] = keys[i] * r + np.int64(row[i])
    size = _table_size(n)
    mask = np.uint64(size - 1)
    shift = np.uint64(64 - _log2(size))
    table = np.full(size, -1, dtype=np.int32)
    first = np.empty(n, dtype=np.int64)
    found = np.empty(n, dtype=np.int64)
    sums = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        key = keys[i]
        slot = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift
        while True:
            g = table[slot]
            if g < 0:
                table[slot] = count
                first[count] = i
                found[count] = key
                sums[count] = counts[i]
                count += 1
                break
            if found[g] == key:
                sums[g] += counts[i]
                break
            slot = (slot + np.uint64(1)) & mask
    out = np.empty((d, count), dtype=codes.dtype)
    for j in range(d):
        for g in range(count):
            out[j, g] = codes[j, first[g]]
    return out, sums[:count].copy()


#: :func:`_fewer_tuples` runs when the tuples' key range at the pairs' first levels is at
#: most this many times the tuples (measured on ARX's benchmark at 0 %: adult k = 10-100,
#: range 0.03-181 times its tuples, merges 52-98 % of them and saves up to 0.2 ms per
#: search; adult k = 5 (844 times, 35 % merged) gains nothing, fars_subset k = 5 and 11
#: (1,150-51,500 times, 20 % merged) lose 60-70 us to the merging pass).
FEWER_RANGE = 500


@njit(cache=True, nogil=True)
def _merges_enough(radix: NDArray[np.int64], n: int) -> bool:
    """Whether :func:`_fewer_tuples` is worth its pass (:data:`FEWER_RANGE`)."""
    span = _span(radix)
    return bool(0 <= span <= np.int64(FEWER_RANGE) * np.int64(n))


@njit(cache=True, nogil=True)
def _pair_cells(
    codes_i: NDArray[Any],
    codes_j: NDArray[Any],
    counts: NDArray[np.int64],
    radix_i: np.int64,
    radix_j: np.int64,
    maps: LevelMaps,
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The non-empty cells of a pair (``codes_i``, ``codes_j`` of the tuples, at the
    levels of ``radix_i``, ``radix_j`` values) and their rows: counted on the dense key
    when its range is small, else grouped."""
    n = len(counts)
    span = radix_i * radix_j
    if span <= max(np.int64(1 << 16), np.int64(4) * n):
        dense = np.zeros(span, dtype=np.int64)
        for t in range(n):
            dense[np.int64(codes_i[t]) * radix_j + np.int64(codes_j[t])] += counts[t]
        cells = 0
        for key in range(span):
            if dense[key]:
                cells += 1
        pair = np.empty((2, cells), dtype=codes_i.dtype)
        sizes = np.empty(cells, dtype=np.int64)
        c = 0
        for key in range(span):
            if dense[key]:
                pair[0, c] = key // radix_j
                pair[1, c] = key % radix_j
                sizes[c] = dense[key]
                c += 1
        return pair, sizes
    src = np.empty((2, n), dtype=codes_i.dtype)
    src[0] = codes_i
    src[1] = codes_j
    offsets = np.full(2, -1, dtype=np.int64)
    radix = np.empty(2, dtype=np.int64)
    radix[0], radix[1] = radix_i, radix_j
    first = np.empty(n, dtype=np.int64)
    grouped = np.empty(n, dtype=np.int64)
    cells = group(src, counts, maps.flat, offsets, radix, first, grouped, scratch, epoch)
    pair = np.empty((2, cells), dtype=codes_i.dtype)
    gather(src, first, maps.flat, offsets, cells, pair)
    return pair, grouped[:cells].copy()


@njit(cache=True, nogil=True)
def _pair(
    codes_i: NDArray[Any],
    codes_j: NDArray[Any],
    start_i: int,
    start_j: int,
    counts: NDArray[np.int64],
    i: int,
    j: int,
    heights: NDArray[np.int64],
    maps: LevelMaps,
    chain: bool,
    k: int,
    cap: int,
    single_i: NDArray[np.int64],
    single_j: NDArray[np.int64],
    max_cells: int,
    max_work: int,
    scratch: NDArray[np.int64],
    stamp: NDArray[np.int64],
    out: NDArray[np.int64],
) -> int:
    """Rare rows of pair ``(i, j)`` at every level pair into ``out`` (module docstring);
    returns the cells grouped (work done). ``codes_i``, ``codes_j``: the tuples' codes at
    levels ``start_i``, ``start_j`` (the singles' first levels within ``cap``, or 0).
    Segments left at the larger single (a valid bound): those past ``cap`` through a
    single, and all of them when the pair has more than ``max_cells`` cells or more than
    ``max_work`` would be grouped."""
    hi, hj = heights[i], heights[j]
    width = hj + 1
    for a in range(hi + 1):
        for b in range(width):
            out[a * width + b] = max(single_i[a], single_j[b])
    values = maps.values
    # Levels from which each single is within the cap (with consistent hierarchies the
    # singles never grow going up, so the rest of the levels are within it too).
    a0, b0 = start_i, start_j
    # Levels where a QI has one value: the pair's cells are the other QI's (exact already;
    # with consistent hierarchies so are the levels above).
    a1 = a0
    while a1 <= hi and (values[i, a1] > 1 or not chain):
        a1 += 1
    b1 = b0
    while b1 < width and (values[j, b1] > 1 or not chain):
        b1 += 1
    if a0 >= a1 or b0 >= b1:
        return 0
    if stamp[0] >= (np.int64(1) << np.int64(31)) - 4096:
        scratch[:] = 0
        stamp[0] = 1
    pair, sizes = _pair_cells(
        codes_i, codes_j, counts, values[i, a0], values[j, b0], maps, scratch, stamp[0]
    )
    stamp[0] += 1
    cells = len(sizes)
    if cells > max_cells or cells * (a1 - a0) * (b1 - b0) > max_work:
        return 0
    work = 0
    qis = np.empty(2, dtype=np.int64)
    qis[0], qis[1] = i, j
    offsets = np.empty(2, dtype=np.int64)
    radix = np.empty(2, dtype=np.int64)
    first = np.empty(max(cells, 1), dtype=np.int64)
    grouped = np.empty(max(cells, 1), dtype=np.int64)
    row = np.empty((2, max(cells, 1)), dtype=pair.dtype)  # cells of (a, b0)
    row_sizes = np.empty(max(cells, 1), dtype=np.int64)
    row_count = 0
    last = np.empty((2, max(cells, 1)), dtype=pair.dtype)  # cells of the last level pair
    last_sizes = np.empty(max(cells, 1), dtype=np.int64)
    last_count = 0
    zero_from = b1  # (consistent: from this b on, the previous row had no rare rows)
    for a in range(a0, a1):
        for b in range(b0, b1):
            if chain and b >= zero_from:
                out[a * width + b] = 0
                continue
            if not chain and (
                (cap >= 0 and (single_i[a] > cap or single_j[b] > cap))
                or values[i, a] == 1
                or values[j, b] == 1
            ):
                continue  # (the larger single fails the node already, or is exact)
            if chain and a > a0 and b == b0:
                src, src_sizes, m, sa, sb = row, row_sizes, row_count, a - 1, b0
            elif chain and b > b0:
                src, src_sizes, m, sa, sb = last, last_sizes, last_count, a, b - 1
            else:
                src, src_sizes, m, sa, sb = pair, sizes, cells, a0, b0
            for c in range(2):
                source, target = (sa, a) if c == 0 else (sb, b)
                offsets[c] = -1 if source == target else maps.offsets[qis[c], source, target]
                radix[c] = values[qis[c], target]
            view = src[:, :m]
            count = group(
                view, src_sizes[:m], maps.flat, offsets, radix, first, grouped, scratch, stamp[0]
            )
            stamp[0] += 1
            work += m
            rare = _rare(grouped, count, k)
            out[a * width + b] = rare
            if chain:
                gather(view, first, maps.flat, offsets, count, last)
                last_sizes[:count] = grouped[:count]
                last_count = count
                if b == b0:
                    row[:, :count] = last[:, :count]
                    row_sizes[:count] = grouped[:count]
                    row_count = count
                if rare == 0:
                    zero_from = b
    return work


@njit(cache=True, nogil=True)
def rare_rows(
    codes: NDArray[Any],
    counts: NDArray[np.int64],
    heights: NDArray[np.int64],
    frequencies: NDArray[np.int64],
    maps: LevelMaps,
    chain: bool,
    k: int,
    cap: int,
    max_cells: int,
    max_work: int,
) -> tuple[
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
]:
    """Rare rows under ``k`` of every single QI, then of every pair (module docstring),
    as ``(rare, first_qi, second_qi, base, width)``: profile ``p`` covers QI
    ``first_qi[p]`` (and ``second_qi[p]``, or none when negative); its segment at levels
    ``(a, b)`` is ``base[p] + a * width[p] + b``. ``cap`` < 0: no cap. ``max_work``
    bounds the cells grouped over all pairs (the pairs after it keep their singles)."""
    d = len(heights)
    n = len(counts)
    values = maps.values
    singles = _singles(heights, frequencies, values, k)
    profiles = d + d * (d - 1) // 2
    first_qi = np.empty(profiles, dtype=np.int64)
    second_qi = np.empty(profiles, dtype=np.int64)
    base = np.empty(profiles, dtype=np.int64)
    width = np.empty(profiles, dtype=np.int64)
    segments = len(singles)
    for i in range(d):
        for j in range(i + 1, d):
            segments += (heights[i] + 1) * (heights[j] + 1)
    rare = np.empty(segments, dtype=np.int64)
    rare[: len(singles)] = singles
    single_at = np.empty(d, dtype=np.int64)
    s = 0
    for j in range(d):
        first_qi[j], second_qi[j], base[j], width[j] = j, -1, s, 1
        single_at[j] = s
        s += heights[j] + 1
    p = d
    # Each QI's first level within the cap (consistent hierarchies: rare rows never grow
    # going up, so every level from it is within the cap too), and the tuples' codes at
    # that level: pairs are grouped from there.
    start = np.zeros(d, dtype=np.int64)
    mapped = codes.copy()
    if chain and cap >= 0:
        raised = False
        for j in range(d):
            while start[j] < heights[j] and singles[single_at[j] + start[j]] > cap:
                start[j] += 1
            if start[j] > 0:
                raised = True
                off = maps.offsets[j, 0, start[j]]
                for t in range(n):
                    mapped[j, t] = maps.flat[off + np.int64(codes[j, t])]
        if raised and k > 1:
            # (tuples that agree at those levels are one: on adult 0 %, a third to
            # two thirds fewer tuples for every pair to count; merged only when the
            # levels' key range is small for the tuples, else few merge: the pass
            # costs more than it saves, _merges_enough)
            radix = np.empty(d, dtype=np.int64)
            for j in range(d):
                radix[j] = values[j, start[j]]
            if _merges_enough(radix, n):
                mapped, counts = _fewer_tuples(mapped, counts, radix)
                n = len(counts)
    # Scratch for the largest grouping of any pair: its tuples when its cells are hashed,
    # else at most its key range (the dense count of _pair_cells).
    need = 1
    for i in range(d):
        for j in range(i + 1, d):
            span = values[i, start[i]] * values[j, start[j]]
            dense = span <= max(np.int64(1 << 16), np.int64(4) * n)
            need = max(need, scratch_size(min(span, n) if dense else n))
    scratch = np.zeros((2, need), dtype=np.int64)
    stamp = np.ones(1, dtype=np.int64)
    work = 0
    if k > 1 and n > 0:
        for i in range(d):
            for j in range(i + 1, d):
                first_qi[p], second_qi[p], base[p], width[p] = i, j, s, heights[j] + 1
                size = (heights[i] + 1) * (heights[j] + 1)
                si = singles[single_at[i] : single_at[i] + heights[i] + 1]
                sj = singles[single_at[j] : single_at[j] + heights[j] + 1]
                work += _pair(
                    mapped[i], mapped[j], start[i], start[j], counts, i, j, heights, maps,
                    chain, k, cap, si, sj, max_cells, max(max_work - work, 0), scratch,
                    stamp, rare[s : s + size],
                )  # fmt: skip
                s += size
                p += 1
    return (
        rare[:s].copy(),
        first_qi[:p].copy(),
        second_qi[:p].copy(),
        base[:p].copy(),
        width[:p].copy(),
    )
