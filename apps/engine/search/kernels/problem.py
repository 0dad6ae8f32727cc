"""A search problem's marginals and inter-level maps, in one compiled pass per array.

:func:`problem_arrays` takes the distinct tuples (codes and rows) and each QI's lookup
arrays (``maps[L][value]``: the value's code at level ``L``) and gives what the search
reads (``search/problem.py``): the rows per value at every level, whether every hierarchy
is consistent (each generalized value has one parent at the level above), and the maps
from every level to every higher one in one flat array, those above level 0 composed from
the maps between adjacent levels (a value's parents at the levels above are then unique).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def problem_arrays(
    codes: NDArray[Any],
    counts: NDArray[np.int64],
    maps: NDArray[np.uint32],
    maps_at: NDArray[np.int64],
    values: NDArray[np.int64],
    heights: NDArray[np.int64],
) -> tuple[
    NDArray[np.int64], NDArray[np.int64], NDArray[np.uint32], NDArray[np.int64], bool, int, int
]:
    """``codes`` ``[d x t]`` (QI ``j``'s codes of the tuples, ``counts`` rows each); QI
    ``j``'s map to level ``L`` is ``maps[maps_at[j, L] :][: values[j, 0]]``, and it has
    ``values[j, L]`` values at level ``L`` (``heights[j]`` levels above its leaves).

    Returns ``(frequencies, frequency_at, flat, offsets, consistent, bad_qi, bad_level)``:
    rows per value of QI ``j`` at level ``L`` from ``frequency_at[j, L]``; the map from
    level ``a`` to ``b > a`` of QI ``j`` at ``flat[offsets[j, a, b]:]`` (-2 where none:
    above level 0 when a hierarchy is inconsistent). ``bad_qi >= 0`` names a QI whose
    codes (``bad_level`` -1) or map to ``bad_level`` go past its values (nothing else is
    then computed)."""
    d, t = codes.shape
    width = values.shape[1]
    frequency_at = np.zeros((d, width), dtype=np.int64)
    total = 0
    for j in range(d):
        for level in range(heights[j] + 1):
            frequency_at[j, level] = total
            total += values[j, level]
    frequencies = np.zeros(total, dtype=np.int64)
    offsets = np.full((d, width, width), -2, dtype=np.int64)
    up_at = np.zeros((d, width), dtype=np.int64)
    size = 0
    for j in range(d):
        for level in range(heights[j]):
            up_at[j, level] = size
            size += values[j, level]
    up = np.full(max(size, 1), -1, dtype=np.int64)
    consistent = True
    for j in range(d):
        # Rows per value at level 0 (one pass over the tuples, codes checked on the way),
        # then, level by level in one pass over the values: the map checked, the rows per
        # value at that level, and each value's parent at the level above.
        n = values[j, 0]
        base = frequency_at[j, 0]
        column = codes[j]
        top = np.uint64(0)
        for i in range(t):
            top = max(top, np.uint64(column[i]))
        if t and top >= np.uint64(n):
            return frequencies, frequency_at, maps[:0].copy(), offsets, False, j, -1
        # (four partial sums, the tuples taken in turn: a value's consecutive tuples
        # no longer wait for each other's addition; twice as fast on adult)
        f0 = np.zeros(n, dtype=np.int64)
        f1 = np.zeros(n, dtype=np.int64)
        f2 = np.zeros(n, dtype=np.int64)
        f3 = np.zeros(n, dtype=np.int64)
        whole = t - (t & 3)
        for i in range(0, whole, 4):
            f0[column[i]] += counts[i]
            f1[column[i + 1]] += counts[i + 1]
            f2[column[i + 2]] += counts[i + 2]
            f3[column[i + 3]] += counts[i + 3]
        for i in range(whole, t):
            f0[column[i]] += counts[i]
        for v in range(n):
            frequencies[base + v] = f0[v] + f1[v] + f2[v] + f3[v]
        for level in range(heights[j] + 1):
            at, out, top = maps_at[j, level], frequency_at[j, level], values[j, level]
            above = maps_at[j, level + 1] if level < heights[j] else -1
            parent_at = up_at[j, level]
            for v in range(n):
                g = np.int64(maps[at + v])
                if g >= top:
                    return frequencies, frequency_at, maps[:0].copy(), offsets, False, j, level
                if level:
                    frequencies[out + g] += frequencies[base + v]
                if above >= 0:
                    parent = np.int64(maps[above + v])
                    if up[parent_at + g] < 0:
                        up[parent_at + g] = parent
                    elif up[parent_at + g] != parent:
                        consistent = False
    # The flat maps: from level 0 the lookups' own maps; from higher levels (consistent
    # hierarchies only) the adjacent parents composed.
    length = 0
    for j in range(d):
        h = heights[j]
        length += h * values[j, 0]
        if consistent:
            for a in range(1, h + 1):
                length += (h - a) * values[j, a]
    flat = np.empty(length, dtype=np.uint32)
    cursor = 0
    for j in range(d):
        h = heights[j]
        for b in range(1, h + 1):
            offsets[j, 0, b] = cursor
            src = maps_at[j, b]
            for v in range(values[j, 0]):
                flat[cursor + v] = maps[src + v]
            cursor += values[j, 0]
        if not consistent:
            continue
        for a in range(1, h + 1):
            for b in range(a + 1, h + 1):
                offsets[j, a, b] = cursor
                for code in range(values[j, a]):
                    x = np.int64(code)
                    for s in range(a, b):
                        x = up[up_at[j, s] + x]
                        if x < 0:  # a code no value has (maps by hand): any code
                            x = np.int64(0)
                            break
                    flat[cursor + code] = np.uint32(x)
                cursor += values[j, a]
    return frequencies, frequency_at, flat, offsets, consistent, -1, 0
