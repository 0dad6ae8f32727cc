"""Compiled inner loops of the search (numba): roll-up with grouping, lattice tagging.

The search spends its time in two places per evaluated node: grouping the node's
classes from a cached less general node (``classes.py``) and writing what the node's
facts imply into per-node arrays over its up-set or down-set (``optimal.py``). With
numpy each is a few dozen whole-array calls on arrays of a few hundred to a few
thousand entries, so call overhead dominates (about 0.3 ms per node on adult). Here
each is one pass:

* :func:`roll_up_group` maps every class of the source through the inter-level lookup
  arrays and groups equal code tuples: a direct-address table when the mixed-radix key
  range is small, an open-addressing hash of the key otherwise, and a hash of the code
  tuple itself when the key would not fit in 62 bits. Classes come out in the order of
  their first source row. It also returns the node's summary under ``k`` (classes,
  released classes, suppressed rows, smallest released class, sum of squared released
  class sizes).
* :func:`raise_up` / :func:`raise_down` visit the up-set / down-set of a node as a box
  of the mixed-radix lattice numbering (no scan of the whole lattice).
* :func:`fetch` keeps the class tables of evaluated nodes in one arena (a ring) and
  hands a node's classes, rolled up from the cached node below it with the fewest
  classes.
* :func:`pair_profile` gives, for one pair of QIs, the sizes of its cells at every
  pair of levels (counted once, then grouped level pair by level pair with the same
  grouping as the roll-up), from which :func:`rare_by_segment` and
  :func:`raise_by_profiles` give the rows every node certainly suppresses for any ``k``
  (``bounds.py``).

Every function is checked against a plain-Python oracle in
``tests/engine/test_kernels.py``; compiled code is cached on disk (``cache=True``), so
only the first process after an install pays for compilation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.problem import Codes

#: Summary slots returned by :func:`roll_up_group`.
CLASSES, RELEASED, SUPPRESSED_ROWS, MIN_RELEASED, RELEASED_SQUARES = range(5)
#: Number of summary slots.
SUMMARY = 5
_KEY_LIMIT = np.int64(1) << np.int64(62)


@njit(cache=True, nogil=True)
def _code(src: Codes, flat: NDArray[np.uint32], off: np.int64, j: int, i: int) -> np.int64:
    if off < 0:
        return np.int64(src[j, i])
    return np.int64(flat[off + np.int64(src[j, i])])


@njit(cache=True, nogil=True)
def _hash(x: np.uint64) -> np.uint64:
    # splitmix64 finalizer: spreads consecutive keys over the table
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True)
def _span(radix: NDArray[np.int64]) -> np.int64:
    """Product of the radices, or -1 when it would exceed 2**62."""
    span = np.int64(1)
    for j in range(len(radix)):
        r = radix[j]
        if r > 1:
            if span > _KEY_LIMIT // r:
                return np.int64(-1)
            span *= r
    return span


@njit(cache=True, nogil=True)
def scratch_size(rows: int) -> int:
    """Columns of the ``[2 x n]`` scratch array :func:`roll_up_group` needs for
    ``rows`` rows (row 0: direct-address table; row 1: hash table of (entry, key)
    pairs, or the tuple hash table's entries)."""
    return max(8192, 8 * rows)


@njit(cache=True, nogil=True)
def _table_size(m: int) -> int:
    size = 1
    while size < 2 * m:
        size *= 2
    return size


@njit(cache=True, nogil=True)
def _groups_by_key(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    span: np.int64,
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their mixed-radix key (``span`` values): direct addressing when
    the span is small, else open addressing. A scratch entry ``epoch << 32 | group``
    is taken in this call only, so the scratch array is never cleared."""
    d, m = src.shape
    keys = np.zeros(m, dtype=np.int64)
    for j in range(d):
        r = radix[j]
        if r > 1:
            off = offsets[j]
            if off < 0:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(src[j, i])
            else:
                for i in range(m):
                    keys[i] = keys[i] * r + np.int64(flat[off + np.int64(src[j, i])])
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    count = 0
    if span <= max(np.int64(1024), np.int64(4) * m):
        for i in range(m):
            key = keys[i]
            entry = scratch[0, key]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                scratch[0, key] = stamp + g
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
            else:
                out_sizes[entry - stamp] += sizes[i]
        return count
    # Open addressing; entry and key side by side in row 1 (one cache line a probe).
    size = _table_size(m)
    shift = np.uint64(64 - _log2(size))
    table = scratch[1]
    for i in range(m):
        key = keys[i]
        h = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            entry = table[2 * h]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                table[2 * h] = stamp + g
                table[2 * h + 1] = key
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
                break
            if table[2 * h + 1] == key:
                out_sizes[entry - stamp] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def _log2(size: int) -> int:
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return bits


@njit(cache=True, nogil=True)
def _groups_by_tuple(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    first: NDArray[np.int64],
    out_sizes: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group rows on their code tuples when the key would not fit in 62 bits: hash
    the tuple, compare tuples on equal hashes."""
    d, m = src.shape
    hashes = np.full(m, np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    for j in range(d):
        off = offsets[j]
        for i in range(m):
            hashes[i] = _hash(hashes[i] ^ np.uint64(_code(src, flat, off, j, i)))
    stamp = epoch << np.int64(32)
    low = (np.int64(1) << np.int64(32)) - 1
    size = _table_size(m)
    mask = np.uint64(size - 1)
    count = 0
    for i in range(m):
        h = np.int64(hashes[i] & mask)
        while True:
            entry = scratch[0, h]
            if entry - stamp < 0 or entry - stamp > low:
                g = count
                scratch[0, h] = stamp + g
                first[g] = i
                out_sizes[g] = sizes[i]
                count += 1
                break
            g = entry - stamp
            other = first[g]
            same = hashes[other] == hashes[i]
            if same:
                for j in range(d):
                    off = offsets[j]
                    if _code(src, flat, off, j, other) != _code(src, flat, off, j, i):
                        same = False
                        break
            if same:
                out_sizes[g] += sizes[i]
                break
            h = (h + 1) & np.int64(size - 1)
    return count


@njit(cache=True, nogil=True)
def _level_maps(
    source: NDArray[Any],
    target: NDArray[Any],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per QI, the offset of the map from level ``source[j]`` to ``target[j]`` in the
    flat maps (-1: the level stays) and the number of values at ``target[j]``."""
    d = len(source)
    offsets = np.empty(d, dtype=np.int64)
    radix = np.empty(d, dtype=np.int64)
    for j in range(d):
        a, b = source[j], target[j]
        if a > b:
            raise ValueError("cannot roll up to a lower level")
        offsets[j] = -1 if a == b else map_offsets[j, a, b]
        if offsets[j] < -1:
            raise ValueError("roll-up above the bottom node needs consistent hierarchies")
        radix[j] = level_values[j, b]
    return offsets, radix


@njit(cache=True, nogil=True)
def _groups(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    first: NDArray[np.int64],
    grouped: NDArray[np.int64],
    scratch: NDArray[np.int64],
    epoch: np.int64,
) -> int:
    """Group the mapped rows: on the mixed-radix key when it fits in 62 bits, else on
    the code tuple. ``first[g]`` = first row of group ``g``, ``grouped[g]`` its size."""
    span = _span(radix)
    if span >= 0:
        return _groups_by_key(
            src, sizes, flat, offsets, radix, span, first, grouped, scratch, epoch
        )
    return _groups_by_tuple(src, sizes, flat, offsets, first, grouped, scratch, epoch)


@njit(cache=True, nogil=True)
def _gather(
    src: Codes,
    first: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    count: int,
    out: Codes,
) -> None:
    """Codes of each group (its first row's, mapped) into ``out[:, :count]``."""
    for j in range(src.shape[0]):
        off = offsets[j]
        if off < 0:
            for g in range(count):
                out[j, g] = src[j, first[g]]
        else:
            for g in range(count):
                out[j, g] = flat[off + np.int64(src[j, first[g]])]


@njit(cache=True, nogil=True)
def _summarize(sizes: NDArray[np.int64], count: int, k: int, summary: NDArray[np.int64]) -> None:
    """The summary slots of classes ``sizes[:count]`` under ``k``. Written without
    branches on ``size < k`` (selects): whether a class is released is unpredictable,
    and mispredicted branches made this loop cost as much as the gathering of codes."""
    none = np.int64(1) << np.int64(62)
    suppressed = np.int64(0)
    released = np.int64(0)
    squares = np.int64(0)
    least = none
    for g in range(count):
        s = sizes[g]
        small = s < k
        suppressed += s if small else 0
        released += 0 if small else 1
        squares += 0 if small else s * s
        least = min(least, none if small else s)
    summary[CLASSES] = count
    summary[RELEASED] = released
    summary[SUPPRESSED_ROWS] = suppressed
    summary[MIN_RELEASED] = 0 if least == none else least
    summary[RELEASED_SQUARES] = squares


@njit(cache=True, nogil=True)
def summarize(sizes: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """The summary slots of classes ``sizes`` under ``k`` (:func:`_summarize`)."""
    summary = np.zeros(SUMMARY, dtype=np.int64)
    _summarize(sizes, len(sizes), k, summary)
    return summary


@njit(cache=True, nogil=True)
def roll_up_group(
    src: Codes,
    sizes: NDArray[np.int64],
    flat: NDArray[np.uint32],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[Codes, NDArray[np.int64], NDArray[np.int64]]:
    """Classes of a node from the classes ``src`` (``[d x m]`` codes, ``sizes``) of a
    less general node: column ``j`` maps through ``flat[offsets[j] + code]`` (or stays
    when ``offsets[j] < 0``); ``radix[j]`` = values of QI ``j`` at the node's level.
    ``scratch`` (``[2 x scratch_size(m)]``, zeros at first) holds no entry stamped
    with ``epoch`` (``1 <= epoch < 2**31``): pass a new epoch per call.

    Returns ``(codes [d x c], sizes [c], summary)``; ``summary`` holds, under ``k``,
    the slots named by :data:`CLASSES` ... :data:`RELEASED_SQUARES`.
    """
    d, m = src.shape
    first = np.empty(m, dtype=np.int64)
    grouped = np.empty(m, dtype=np.int64)
    count = _groups(src, sizes, flat, offsets, radix, first, grouped, scratch, np.int64(epoch))
    out = np.empty((d, count), dtype=src.dtype)
    _gather(src, first, flat, offsets, count, out)
    summary = np.zeros(SUMMARY, dtype=np.int64)
    _summarize(grouped, count, k, summary)
    return out, grouped[:count].copy(), summary


@njit(cache=True, nogil=True)
def roll_up_levels(
    src: Codes,
    sizes: NDArray[np.int64],
    source: NDArray[np.int64],
    target: NDArray[np.int64],
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    epoch: int,
) -> tuple[Codes, NDArray[np.int64], NDArray[np.int64]]:
    """:func:`roll_up_group` from the classes of node ``source`` to node ``target``
    (levels), with the problem's ``flat`` maps, ``map_offsets`` and ``level_values``
    (:class:`SearchProblem`)."""
    offsets, radix = _level_maps(source, target, map_offsets, level_values)
    return roll_up_group(src, sizes, flat, offsets, radix, k, scratch, epoch)


@njit(cache=True, nogil=True)
def _level_pair_maps(
    qis: NDArray[np.int64],
    source: NDArray[np.int64],
    target: NDArray[np.int64],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    offsets: NDArray[np.int64],
    radix: NDArray[np.int64],
) -> None:
    """:func:`_level_maps` for the two QIs ``qis`` of a pair, into ``offsets``, ``radix``."""
    for c in range(2):
        a, b = source[c], target[c]
        offsets[c] = -1 if a == b else map_offsets[qis[c], a, b]
        radix[c] = level_values[qis[c], b]


#: Cell sizes below this are counted in a histogram by :func:`_append_profile` (the
#: larger ones, at most ``rows / HISTOGRAM`` of them, are sorted).
HISTOGRAM = 4096


@njit(cache=True, nogil=True)
def _emit(
    size: np.int64,
    total: np.int64,
    values: NDArray[np.int64],
    cums: NDArray[np.int64],
    used: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    if used == len(values):
        grown = np.empty(2 * len(values), dtype=np.int64)
        grown[:used] = values
        values = grown
        grown = np.empty(2 * len(cums), dtype=np.int64)
        grown[:used] = cums
        cums = grown
    values[used] = size
    cums[used] = total
    return values, cums, used + 1


@njit(cache=True, nogil=True)
def _append_profile(
    grouped: NDArray[np.int64],
    count: int,
    histogram: NDArray[np.int64],
    values: NDArray[np.int64],
    cums: NDArray[np.int64],
    used: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Append the distinct sizes of ``grouped[:count]`` (ascending) and, for each, the
    rows in cells of at most that size; the buffers double when full. Small sizes are
    counted in ``histogram`` (all zeros, left so), large ones sorted."""
    limit = len(histogram)
    most = 0
    large = 0
    for g in range(count):
        size = grouped[g]
        if size > most:
            most = size
    if 16 * count < min(most, limit):  # few cells: sorting beats scanning the histogram
        sizes = np.sort(grouped[:count])
        total = np.int64(0)
        for g in range(count):
            total += sizes[g]
            if g + 1 < count and sizes[g + 1] == sizes[g]:
                continue
            values, cums, used = _emit(sizes[g], total, values, cums, used)
        return values, cums, used
    most = 0
    for g in range(count):
        size = grouped[g]
        if size < limit:
            histogram[size] += 1
            if size > most:
                most = size
        else:
            large += 1
    total = np.int64(0)
    for size in range(1, most + 1):
        n = histogram[size]
        if n:
            histogram[size] = 0
            total += n * size
            values, cums, used = _emit(np.int64(size), total, values, cums, used)
    if large:
        big = np.empty(large, dtype=np.int64)
        b = 0
        for g in range(count):
            if grouped[g] >= limit:
                big[b] = grouped[g]
                b += 1
        big.sort()
        for b in range(large):
            total += big[b]
            if b + 1 < large and big[b + 1] == big[b]:
                continue
            values, cums, used = _emit(big[b], total, values, cums, used)
    return values, cums, used


@njit(cache=True, nogil=True)
def pair_profile(
    codes_i: Codes,
    codes_j: Codes,
    counts: NDArray[np.int64],
    qis: NDArray[np.int64],
    tops: NDArray[np.int64],
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    chain: bool,
    max_cells: int,
    max_work: int,
    scratch: NDArray[np.int64],
    stamp: NDArray[np.int64],
    histogram: NDArray[np.int64],
    singles: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]],
    single_base: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The sizes of the (i, j)-cells of a pair of QIs (``qis = (i, j)``) at every pair of
    levels ``(a, b)`` up to ``tops``, as a profile that gives the rows in cells of fewer
    than ``k`` rows for any ``k`` (:func:`rare_by_segment`; ``bounds.py``).

    Returns ``(values, cums, starts)``: segment ``a * (tops[1] + 1) + b`` is
    ``[starts[s], starts[s + 1])`` of ``values`` (the distinct cell sizes, ascending) and
    ``cums`` (rows in cells of at most that size). The distinct tuples (``codes_i``,
    ``codes_j`` at level 0, ``counts`` rows) are counted into the pair's cells once (on
    the dense key when its range is small, else grouped); each level pair is then grouped
    from the one before it (``chain``: consistent hierarchies; ``(a, b)`` from
    ``(a, b - 1)``, ``(a, 0)`` from ``(a - 1, 0)``) or from level ``(0, 0)``. With more than
    ``max_cells`` cells, or more than ``max_work`` cells times level pairs (a bound on
    the rows grouped), nothing is computed (``starts`` is empty).

    A level pair at which one of the two QIs has a single value has the cells of the
    other QI alone: its profile is copied from the single QIs' (``singles`` = values,
    cums, starts; the profile of QI ``qis[c]`` at level ``L`` is segment ``single_base[c]
    + L``), not grouped.

    Working memory, shared by the pairs of a problem: ``scratch`` (``[2 x
    scratch_size(len(counts))]``, its entries stamped with ``stamp[0]``, which each
    grouping advances), ``histogram`` (zeros, left so)."""
    n = len(counts)
    if stamp[0] >= (np.int64(1) << np.int64(31)) - 4096:
        scratch[:] = 0
        stamp[0] = 1
    offsets = np.full(2, -1, dtype=np.int64)
    radix = np.empty(2, dtype=np.int64)
    radix[0] = level_values[qis[0], 0]
    radix[1] = level_values[qis[1], 0]
    span = radix[0] * radix[1]
    if span <= max(np.int64(1 << 16), np.int64(4) * n):  # count on the dense key
        dense = np.zeros(span, dtype=np.int64)
        for t in range(n):
            dense[np.int64(codes_i[t]) * radix[1] + np.int64(codes_j[t])] += counts[t]
        cells = 0
        for key in range(span):
            if dense[key]:
                cells += 1
        pair = np.empty((2, cells), dtype=codes_i.dtype)
        sizes = np.empty(cells, dtype=np.int64)
        c = 0
        for key in range(span):
            if dense[key]:
                pair[0, c] = key // radix[1]
                pair[1, c] = key % radix[1]
                sizes[c] = dense[key]
                c += 1
    else:
        src = np.empty((2, n), dtype=codes_i.dtype)
        src[0] = codes_i
        src[1] = codes_j
        first = np.empty(n, dtype=np.int64)
        grouped = np.empty(n, dtype=np.int64)
        cells = _groups(src, counts, flat, offsets, radix, first, grouped, scratch, stamp[0])
        stamp[0] += 1
        pair = np.empty((2, cells), dtype=codes_i.dtype)
        _gather(src, first, flat, offsets, cells, pair)
        sizes = grouped[:cells].copy()
    width = tops[1] + 1
    segments = (tops[0] + 1) * width
    if cells > max_cells or cells * segments > max_work:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.zeros(segments + 1, dtype=np.int64)
    values = np.empty(max(16, cells), dtype=np.int64)
    cums = np.empty(max(16, cells), dtype=np.int64)
    used = 0
    first = np.empty(max(cells, 1), dtype=np.int64)
    grouped = np.empty(max(cells, 1), dtype=np.int64)
    # Cells of the row's first level pair (a, 0) and of the last one, and their levels.
    row = pair.copy()
    row_sizes = sizes.copy()
    row_count = cells
    last = np.empty((2, max(cells, 1)), dtype=codes_i.dtype)
    last_sizes = np.empty(max(cells, 1), dtype=np.int64)
    last_count = 0
    out = np.empty((2, max(cells, 1)), dtype=codes_i.dtype)
    source = np.zeros(2, dtype=np.int64)
    target = np.zeros(2, dtype=np.int64)
    single_values, single_cums, single_starts = singles
    for a in range(tops[0] + 1):
        for b in range(width):
            target[0], target[1] = a, b
            single_i = level_values[qis[0], a] == 1
            if single_i or level_values[qis[1], b] == 1:
                # (consistent hierarchies: the levels above stay single, so no later
                # level pair is grouped from this one)
                seg = single_base[1] + b if single_i else single_base[0] + a
                for at in range(single_starts[seg], single_starts[seg + 1]):
                    values, cums, used = _emit(
                        single_values[at], single_cums[at], values, cums, used
                    )
                starts[a * width + b + 1] = used
                continue
            if a == 0 and b == 0:
                count = cells
                grouped[:cells] = sizes
                if chain:
                    last[:, :cells] = pair
                    last_sizes[:cells] = sizes
                    last_count = cells
            else:
                if not chain:
                    src_codes, src_sizes, m = pair, sizes, cells
                    source[0], source[1] = 0, 0
                elif b == 0:
                    src_codes, src_sizes, m = row, row_sizes, row_count
                    source[0], source[1] = a - 1, 0
                else:
                    src_codes, src_sizes, m = last, last_sizes, last_count
                    source[0], source[1] = a, b - 1
                _level_pair_maps(qis, source, target, map_offsets, level_values, offsets, radix)
                view = src_codes[:, :m]
                count = _groups(
                    view, src_sizes[:m], flat, offsets, radix, first, grouped, scratch, stamp[0]
                )
                stamp[0] += 1
                if chain:
                    _gather(view, first, flat, offsets, count, out)
                    if b == 0:
                        row[:, :count] = out[:, :count]
                        row_sizes[:count] = grouped[:count]
                        row_count = count
                    last[:, :count] = out[:, :count]
                    last_sizes[:count] = grouped[:count]
                    last_count = count
            values, cums, used = _append_profile(grouped, count, histogram, values, cums, used)
            starts[a * width + b + 1] = used
    return values[:used].copy(), cums[:used].copy(), starts


@njit(cache=True, nogil=True)
def _append_all(
    part: NDArray[np.int64], values: NDArray[np.int64], used: int
) -> tuple[NDArray[np.int64], int]:
    if used + len(part) > len(values):
        grown = np.empty(max(2 * len(values), used + len(part)), dtype=np.int64)
        grown[:used] = values[:used]
        values = grown
    values[used : used + len(part)] = part
    return values, used + len(part)


@njit(cache=True, nogil=True)
def profiles_of(
    codes: Codes,
    counts: NDArray[np.int64],
    heights: NDArray[np.int64],
    frequencies: NDArray[np.int64],
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    chain: bool,
    max_cells: int,
    max_work: int,
) -> tuple[
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
]:
    """Every single QI's profile (from ``frequencies``: rows per value of QI ``j`` at
    level ``L``, QI by QI and level by level, ``level_values[j, L]`` of them), then every
    pair's (:func:`pair_profile`; pairs over its limits are left out), in one array each
    (``bounds.Profiles``): ``(values, cums, starts, first_qi, second_qi, base, width)``."""
    d = len(heights)
    n = len(counts)
    profiles = d + d * (d - 1) // 2
    first_qi = np.empty(profiles, dtype=np.int64)
    second_qi = np.empty(profiles, dtype=np.int64)
    base = np.empty(profiles, dtype=np.int64)
    width = np.empty(profiles, dtype=np.int64)
    values = np.empty(1024, dtype=np.int64)
    cums = np.empty(1024, dtype=np.int64)
    starts = np.zeros(1024, dtype=np.int64)
    used = 0
    segments = 0
    histogram = np.zeros(HISTOGRAM, dtype=np.int64)
    present = np.empty(max(1, len(frequencies)), dtype=np.int64)
    at = 0
    p = 0
    for j in range(d):
        first_qi[p], second_qi[p], base[p], width[p] = j, -1, segments, 1
        p += 1
        for level in range(heights[j] + 1):
            count = 0
            for v in range(level_values[j, level]):
                if frequencies[at + v] > 0:
                    present[count] = frequencies[at + v]
                    count += 1
            at += level_values[j, level]
            values, cums, used = _append_profile(present, count, histogram, values, cums, used)
            segments += 1
            if segments + 1 > len(starts):
                grown = np.zeros(2 * len(starts), dtype=np.int64)
                grown[:segments] = starts[:segments]
                starts = grown
            starts[segments] = used
    singles = (values[:used].copy(), cums[:used].copy(), starts[: segments + 1].copy())
    # Scratch for the largest grouping of any pair: its tuples when its cells are hashed,
    # else at most its key range (pair_profile's dense count).
    need = 1
    for i in range(d):
        for j in range(i + 1, d):
            span = level_values[i, 0] * level_values[j, 0]
            dense = span <= max(np.int64(1 << 16), np.int64(4) * n)
            need = max(need, scratch_size(min(span, n) if dense else n))
    scratch = np.zeros((2, need), dtype=np.int64)
    stamp = np.ones(1, dtype=np.int64)
    qis = np.empty(2, dtype=np.int64)
    tops = np.empty(2, dtype=np.int64)
    single_base = np.empty(2, dtype=np.int64)
    for i in range(d):
        for j in range(i + 1, d):
            qis[0], qis[1] = i, j
            tops[0], tops[1] = heights[i], heights[j]
            single_base[0], single_base[1] = base[i], base[j]
            pair_values, pair_cums, pair_starts = pair_profile(
                codes[i], codes[j], counts, qis, tops, flat, map_offsets, level_values,
                chain, max_cells, max_work, scratch, stamp, histogram, singles, single_base,
            )  # fmt: skip
            if len(pair_starts) == 0:
                continue  # the bound stays valid without this pair
            first_qi[p], second_qi[p], base[p], width[p] = i, j, segments, heights[j] + 1
            p += 1
            shifted = pair_starts[1:] + used
            starts, _ = _append_all(shifted, starts, segments + 1)
            segments += len(shifted)
            values, _ = _append_all(pair_values, values, used)
            cums, used = _append_all(pair_cums, cums, used)
    return (
        values[:used].copy(),
        cums[:used].copy(),
        starts[: segments + 1].copy(),
        first_qi[:p].copy(),
        second_qi[:p].copy(),
        base[:p].copy(),
        width[:p].copy(),
    )


@njit(cache=True, nogil=True)
def rare_by_segment(
    values: NDArray[np.int64], cums: NDArray[np.int64], starts: NDArray[np.int64], k: int
) -> NDArray[np.int64]:
    """Per segment of profiles (:func:`pair_profile`), the rows in cells of fewer than
    ``k`` rows (cells are never empty)."""
    segments = len(starts) - 1
    out = np.zeros(max(segments, 0), dtype=np.int64)
    for s in range(segments):
        lo, hi = starts[s], starts[s + 1]
        # number of distinct sizes below k
        while lo < hi:
            mid = (lo + hi) // 2
            if values[mid] < k:
                lo = mid + 1
            else:
                hi = mid
        if lo > starts[s]:
            out[s] = cums[lo - 1]
    return out


@njit(cache=True, nogil=True)
def raise_by_profiles(
    tops: NDArray[np.int64],
    first_qi: NDArray[np.int64],
    second_qi: NDArray[np.int64],
    base: NDArray[np.int64],
    width: NDArray[np.int64],
    rare: NDArray[np.int64],
    cap: int,
    bound: NDArray[np.int64],
) -> None:
    """Raise ``bound[node]`` over the lattice of ``tops`` (nodes in index order) to the
    rare rows of each profile ``p`` at the node's levels: segment ``base[p] + l_i
    width[p] + l_j`` (``i = first_qi[p] < j = second_qi[p]``; a single QI ``i`` when
    ``j < 0``).

    Nodes are visited in index order, as an odometer over the levels; the maximum over
    the profiles within the first ``t`` QIs is kept per prefix, so that a node costs
    only the profiles whose last QI is the digit that changed and those after it (on
    adult about 13 profiles per node instead of 45). Once a prefix's maximum exceeds
    ``cap`` (``cap >= 0``), every node under it gets that maximum (more than ``cap``,
    not necessarily the node's whole bound) and is skipped."""
    d = len(tops)
    profiles = len(base)
    # Profiles grouped by their last QI.
    by_last = np.zeros(d + 1, dtype=np.int64)
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        by_last[last + 1] += 1
    for t in range(d):
        by_last[t + 1] += by_last[t]
    order = np.empty(profiles, dtype=np.int64)
    filled = by_last[:d].copy()
    for p in range(profiles):
        last = second_qi[p] if second_qi[p] >= 0 else first_qi[p]
        order[filled[last]] = p
        filled[last] += 1
    # Nodes under a prefix of t QIs: a block of block[t] consecutive indices.
    block = np.ones(d + 1, dtype=np.int64)
    for t in range(d - 1, -1, -1):
        block[t] = block[t + 1] * (tops[t] + 1)
    counter = np.zeros(d, dtype=np.int64)
    partial = np.zeros(d + 1, dtype=np.int64)  # partial[t]: max within QIs < t
    changed = 0
    idx = 0
    size = block[0]
    while idx < size:
        t = changed
        while t < d:
            best = partial[t]
            for q in range(by_last[t], by_last[t + 1]):
                p = order[q]
                s = base[p] + counter[first_qi[p]] * width[p]
                if second_qi[p] >= 0:
                    s += counter[t]
                r = rare[s]
                if r > best:
                    best = r
            partial[t + 1] = best
            t += 1
            if cap >= 0 and best > cap:
                break
        # t QIs fixed: the block of nodes under that prefix gets partial[t].
        end = idx + block[t]
        for i in range(idx, end):
            if bound[i] < partial[t]:
                bound[i] = partial[t]
        idx = end
        # Next prefix of t QIs: carry from digit t - 1.
        j = t - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                break
            counter[j] = 0
            j -= 1
        if j < 0:
            return
        for u in range(j + 1, d):
            counter[u] = 0
        changed = j


@njit(cache=True, nogil=True)
def raise_up(
    node: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    from_status: int,
    to_status: int,
    lifted: NDArray[np.float64],
    lift: NDArray[np.float64],
) -> None:
    """Over the up-set of ``node``: status ``from_status`` becomes ``to_status`` (skip
    with ``to_status < 0``), and each ``lifted[c]`` rises to at least ``lift[c]``
    (``lifted`` is ``[w x size]``; ``w = 0`` for none)."""
    d = len(node)
    w = lifted.shape[0]
    counter = np.empty(d, dtype=np.int64)
    idx = np.int64(0)
    for j in range(d):
        counter[j] = node[j]
        idx += np.int64(node[j]) * strides[j]
    while True:
        if to_status >= 0 and status[idx] == from_status:
            status[idx] = to_status
        for c in range(w):
            if lifted[c, idx] < lift[c]:
                lifted[c, idx] = lift[c]
        j = d - 1
        while j >= 0:
            if counter[j] < tops[j]:
                counter[j] += 1
                idx += strides[j]
                break
            idx -= (counter[j] - node[j]) * strides[j]
            counter[j] = node[j]
            j -= 1
        if j < 0:
            return


@njit(cache=True, nogil=True)
def raise_down(
    node: NDArray[np.int16],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    to_status: int,
    at_least: NDArray[np.int64],
    value: int,
) -> None:
    """Over the down-set of ``node``: status becomes ``to_status`` (skip with
    ``to_status < 0``) and ``at_least`` rises to at least ``value``."""
    d = len(node)
    counter = np.zeros(d, dtype=np.int64)
    idx = np.int64(0)
    while True:
        if to_status >= 0:
            status[idx] = to_status
        if at_least[idx] < value:
            at_least[idx] = value
        j = d - 1
        while j >= 0:
            if counter[j] < node[j]:
                counter[j] += 1
                idx += strides[j]
                break
            idx -= counter[j] * strides[j]
            counter[j] = 0
            j -= 1
        if j < 0:
            return


@njit(cache=True, nogil=True)
def climb_chain(
    start: int,
    levels: NDArray[np.int16],
    tops: NDArray[np.int64],
    strides: NDArray[np.int64],
    status: NDArray[np.int8],
    unknown: int,
    at_least: NDArray[np.int64],
    keys: NDArray[np.float64],
) -> NDArray[np.int64]:
    """Chain of generalizations from ``start`` through nodes of status ``unknown``:
    each step to the successor with the most rows known suppressed (``at_least``),
    then the least key, then the first QI; ends where no successor is unknown."""
    d = len(tops)
    chain = np.empty(int(tops.sum()) + 1, dtype=np.int64)
    chain[0] = start
    n = 1
    cur = start
    while True:
        best = -1
        for j in range(d):
            if levels[cur, j] < tops[j]:
                s = cur + strides[j]
                if status[s] == unknown and (
                    best < 0
                    or at_least[s] > at_least[best]
                    or (at_least[s] == at_least[best] and keys[s] < keys[best])
                ):
                    best = s
        if best < 0:
            return chain[:n]
        chain[n] = best
        n += 1
        cur = best


# --- The table store: cached class tables in one arena (classes.TableCache) ----------
#
# ``sizes`` [capacity] holds the class sizes of the bottom node in [0, base) and of cached
# tables in a ring over [base, capacity); ``codes`` [d * capacity] their codes, a table
# at position ``p`` with ``c`` classes as a ``[d x c]`` block at ``d * p`` (contiguous,
# so the compiled loops see C-ordered arrays). A new table goes
# at the ring's head and evicts the tables it overlaps (oldest first out). ``meta`` has
# one row per slot: the node's levels (level -1 of QI 0: empty slot), then START, COUNT
# and SEQ (allocation order); ``summaries`` the slot's summary. ``state`` holds the ring's
# HEAD, the slots in use (HIGH: slots from HIGH on are free, whatever they hold), the
# next SEQ, the scratch EPOCH and the MOVES of used tables to the head. Nothing is allocated
# per call: classes are grouped into ``stage`` / ``grouped`` and copied into the ring.

#: Columns of ``meta`` after the levels, and slots of ``state``.
START, COUNT, SEQ = range(3)
HEAD, HIGH, NEXT_SEQ, EPOCH, MOVES = range(5)


@njit(cache=True, nogil=True)
def _lookup(meta: NDArray[np.int64], high: int, target: NDArray[Any]) -> tuple[int, int]:
    """(slot holding ``target`` or -1, slot of a node ``<= target`` with the fewest
    classes or -1)."""
    d = len(target)
    best = -1
    for s in range(high):
        if meta[s, 0] < 0:
            continue
        below = True
        equal = True
        for j in range(d):
            v = meta[s, j]
            if v > target[j]:
                below = False
                break
            if v != target[j]:
                equal = False
        if below:
            if equal:
                return s, s
            if best < 0 or meta[s, d + COUNT] < meta[best, d + COUNT]:
                best = s
    return -1, best


@njit(cache=True, nogil=True)
def _roll_into_stage(
    codes: Codes,
    sizes: NDArray[np.int64],
    start: int,
    m: int,
    source: NDArray[np.int64],
    target: NDArray[Any],
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    state: NDArray[np.int64],
    first: NDArray[np.int64],
    grouped: NDArray[np.int64],
    stage: Codes,
    summary: NDArray[np.int64],
) -> int:
    """Group columns [start, start + m) of the arena (node ``source``) into node
    ``target``: codes into ``stage``, sizes into ``grouped``, ``summary`` filled; returns
    the number of classes."""
    d = len(target)
    offsets, radix = _level_maps(source, target, map_offsets, level_values)
    state[EPOCH] += 1
    if state[EPOCH] >= np.int64(1) << np.int64(31):
        scratch[:] = 0
        state[EPOCH] = 1
    src = codes[d * start : d * (start + m)].reshape((d, m))
    src_sizes = sizes[start : start + m]
    count = _groups(src, src_sizes, flat, offsets, radix, first, grouped, scratch, state[EPOCH])
    _gather(src, first, flat, offsets, count, stage)
    _summarize(grouped, count, k, summary)
    return count


@njit(cache=True, nogil=True)
def _store(
    codes: Codes,
    sizes: NDArray[np.int64],
    meta: NDArray[np.int64],
    summaries: NDArray[np.int64],
    state: NDArray[np.int64],
    base: int,
    target: NDArray[Any],
    stage: Codes,
    grouped: NDArray[np.int64],
    count: int,
    summary: NDArray[np.int64],
) -> int:
    """Copy the staged table into the ring (evicting what it overlaps); its slot, or -1
    when it is empty or larger than a quarter of the ring (not cached)."""
    d = len(target)
    capacity = len(sizes)
    if count == 0 or count > (capacity - base) // 4:
        return -1
    lo = state[HEAD]
    if lo + count > capacity:
        lo = base
    hi = lo + count
    free = -1
    for s in range(state[HIGH]):
        if meta[s, 0] >= 0:
            a = meta[s, d + START]
            if a < hi and lo < a + meta[s, d + COUNT]:
                meta[s, 0] = -1  # evicted: the new table overwrites it
        if meta[s, 0] < 0 and free < 0:
            free = s
    if free < 0:
        if state[HIGH] < meta.shape[0]:
            free = state[HIGH]
            state[HIGH] += 1
        else:  # every slot in use: the oldest table goes
            free = 0
            for s in range(1, state[HIGH]):
                if meta[s, d + SEQ] < meta[free, d + SEQ]:
                    free = s
    block = codes[d * lo : d * hi].reshape((d, count))
    for j in range(d):
        for g in range(count):
            block[j, g] = stage[j, g]
    for g in range(count):
        sizes[lo + g] = grouped[g]
    for j in range(d):
        meta[free, j] = target[j]
    meta[free, d + START] = lo
    meta[free, d + COUNT] = count
    meta[free, d + SEQ] = state[NEXT_SEQ]
    state[NEXT_SEQ] += 1
    summaries[free] = summary
    state[HEAD] = hi
    return free


@njit(cache=True, nogil=True)
def _refresh(
    codes: Codes,
    sizes: NDArray[np.int64],
    meta: NDArray[np.int64],
    summaries: NDArray[np.int64],
    state: NDArray[np.int64],
    base: int,
    slot: int,
    stage: Codes,
    grouped: NDArray[np.int64],
) -> int:
    """A cached table about to be used as a source: when the ring's head will reach it
    within a quarter turn, move it to the head (a used table stays; the ring then
    evicts tables that are old *and* unused, close to least-recently-used)."""
    d = meta.shape[1] - 3
    capacity = len(sizes)
    head, start, count = state[HEAD], meta[slot, d + START], meta[slot, d + COUNT]
    ahead = start - head if start >= head else (capacity - head) + (start - base)
    if ahead >= (capacity - base) // 4:
        return slot
    block = codes[d * start : d * (start + count)].reshape((d, count))
    for j in range(d):
        for g in range(count):
            stage[j, g] = block[j, g]
    for g in range(count):
        grouped[g] = sizes[start + g]
    levels = meta[slot, :d].copy()
    summary = summaries[slot].copy()
    meta[slot, 0] = -1
    state[MOVES] += 1
    moved = _store(
        codes, sizes, meta, summaries, state, base, levels, stage, grouped, count, summary
    )
    return moved


@njit(cache=True, nogil=True)
def fetch(
    target: NDArray[np.int16],
    codes: Codes,
    sizes: NDArray[np.int64],
    meta: NDArray[np.int64],
    summaries: NDArray[np.int64],
    state: NDArray[np.int64],
    base: int,
    base_summary: NDArray[np.int64],
    cache: bool,
    flat: NDArray[np.uint32],
    map_offsets: NDArray[np.int64],
    level_values: NDArray[np.int64],
    k: int,
    scratch: NDArray[np.int64],
    first: NDArray[np.int64],
    grouped: NDArray[np.int64],
    stage: Codes,
    summary: NDArray[np.int64],
) -> tuple[int, int]:
    """Classes of node ``target`` (levels): from the store, or rolled up from the cached
    node below it with the fewest classes (or the bottom) and stored.

    Returns ``(where, count)``: ``where >= 0`` is the first arena column of the table,
    -1 means it is in ``stage`` / ``grouped`` (not cached); ``summary`` gets its
    summary. Nodes first met from the bottom roll up through their "hub" (each non-zero
    level capped at 1; cached), which has far fewer classes than the bottom's; when at
    least half the QIs of the node have a single value at its levels (high nodes, as
    searches without suppression visit), those stay at the node's level in the hub,
    whose classes are then fewer still (on adult, 0 % suppression: 35 % less time in
    this function over ARX's grid). ``cache`` False (inconsistent hierarchies): nothing
    is cached, every node comes from the bottom.
    """
    d = len(target)
    zero = np.zeros(d, dtype=np.int64)
    bottom = True
    for j in range(d):
        if target[j] != 0:
            bottom = False
    if bottom:
        summary[:] = base_summary
        return 0, base
    if not cache:
        count = _roll_into_stage(
            codes, sizes, 0, base, zero, target, flat, map_offsets, level_values, k,
            scratch, state, first, grouped, stage, summary,
        )  # fmt: skip
        return -1, count
    exact, best = _lookup(meta, state[HIGH], target)
    if exact >= 0:
        summary[:] = summaries[exact]
        return meta[exact, d + START], meta[exact, d + COUNT]
    if best >= 0 and meta[best, d + COUNT] >= base:
        best = -1
    if best < 0:
        hub = np.minimum(target, 1)
        single = 0
        for j in range(d):
            if level_values[j, target[j]] == 1:
                single += 1
        if 2 * single >= d:
            for j in range(d):
                if level_values[j, target[j]] == 1:  # one value: the QI plays no part
                    hub[j] = target[j]
        if not np.array_equal(hub, target):
            h_exact, h_best = _lookup(meta, state[HIGH], hub)
            if h_exact >= 0:
                best = _refresh(codes, sizes, meta, summaries, state, base, h_exact, stage, grouped)
            else:
                src, start, m = zero, 0, base
                if h_best >= 0 and meta[h_best, d + COUNT] < base:
                    src = meta[h_best, :d].copy()
                    start, m = meta[h_best, d + START], meta[h_best, d + COUNT]
                count = _roll_into_stage(
                    codes, sizes, start, m, src, hub, flat, map_offsets, level_values, k,
                    scratch, state, first, grouped, stage, summary,
                )  # fmt: skip
                best = _store(
                    codes, sizes, meta, summaries, state, base, hub, stage, grouped, count,
                    summary,
                )  # fmt: skip
    if best >= 0:
        best = _refresh(codes, sizes, meta, summaries, state, base, best, stage, grouped)
    if best >= 0:
        src = meta[best, :d].copy()
        start, m = meta[best, d + START], meta[best, d + COUNT]
    else:
        src, start, m = zero, 0, base
    count = _roll_into_stage(
        codes, sizes, start, m, src, target, flat, map_offsets, level_values, k,
        scratch, state, first, grouped, stage, summary,
    )  # fmt: skip
    slot = _store(
        codes, sizes, meta, summaries, state, base, target, stage, grouped, count, summary
    )
    if slot < 0:
        return -1, count
    return meta[slot, d + START], count
