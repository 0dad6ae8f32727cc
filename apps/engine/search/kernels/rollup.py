"""A node's classes, found in the table store or rolled up into it (:func:`fetch`).

A node met for the first time is grouped from a cached node below it with the fewest
classes, or from the bottom node, into the store's ``stage`` / ``grouped`` arrays
(:func:`_roll_into_stage`; from the bottom to a "hub" on the level-1 codes,
:func:`_bottom_into_stage`), and copied into the store's ring
(:func:`~apps.engine.search.kernels.arena._store`). The grouping's scratch memory is
zeroed only as far as a grouping uses it (:func:`_ready`) and told apart from earlier
groupings by an epoch stamp (:func:`_next_epoch`). The store itself (its arrays, slots
and ring) is :mod:`~apps.engine.search.kernels.arena`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.arena import (
    BIG_HUB,
    COUNT,
    EPOCH,
    HIGH,
    LEVEL_ONE,
    READY_DIRECT,
    READY_HASH,
    START,
    Arena,
    _refresh,
    _store,
    find_slot,
)
from apps.engine.search.kernels.grouping import (
    LevelMaps,
    _addressed,
    _groups_by_key,
    _span,
    _table_size,
    gather,
    group,
    level_offsets,
    summarize_into,
)


@njit(cache=True, nogil=True)
def _ready(arena: Arena, radix: NDArray[np.int64], m: int) -> None:
    """Zero the part of ``scratch`` that grouping ``m`` rows on values ``radix`` will use
    (``grouping.group``: row 0 up to the key range for direct addressing or up to the
    hash table of code tuples, row 1 up to the hash table of keys) beyond what is
    ready already."""
    span = _span(radix)
    if _addressed(span, m):
        row, need = 0, int(span)
    elif span >= 0:
        row, need = 1, 2 * _table_size(m)
    else:
        row, need = 0, _table_size(m)
    slot = READY_HASH if row == 1 else READY_DIRECT
    need = min(need, arena.scratch.shape[1])
    ready = arena.state[slot]
    if need > ready:
        arena.scratch[row, ready:need] = 0
        arena.state[slot] = need


@njit(cache=True, nogil=True)
def _from_level_one(target: NDArray[Any], maps: LevelMaps) -> bool:
    """Whether every QI of ``target`` is at level 0 or 1 or has a single value there (a
    hub, :func:`fetch`): its roll-up from the bottom reads the level-1 codes."""
    for j in range(len(target)):  # noqa: SIM110 (compiled: a loop, not all() of a generator)
        if target[j] > 1 and maps.values[j, target[j]] != 1:
            return False
    return True


@njit(cache=True, nogil=True)
def _level_one(arena: Arena, base: int, maps: LevelMaps) -> None:
    """The bottom node's codes at level 1 into ``level_one`` (QIs of one level: none)."""
    d = arena.level_one.shape[0]
    for j in range(d):
        off = maps.offsets[j, 0, 1] if maps.offsets.shape[1] > 1 else np.int64(-2)
        if off < 0:
            continue
        row = arena.codes[j * base : (j + 1) * base]
        out = arena.level_one[j]
        for i in range(base):
            out[i] = maps.flat[off + np.int64(row[i])]
    arena.state[LEVEL_ONE] = 1


@njit(cache=True, nogil=True)
def _next_epoch(arena: Arena) -> None:
    """A new epoch for the grouping scratch (its slots of older epochs read as empty);
    before the counter would overflow, the scratch is zeroed and every slot made ready
    again."""
    state = arena.state
    state[EPOCH] += 1
    if state[EPOCH] >= np.int64(1) << np.int64(31):
        arena.scratch[:] = 0
        state[EPOCH] = 1
        state[READY_DIRECT] = state[READY_HASH] = arena.scratch.shape[1]


@njit(cache=True, nogil=True)
def _bottom_into_stage(
    arena: Arena,
    base: int,
    target: NDArray[Any],
    maps: LevelMaps,
    k: int,
    summary: NDArray[np.int64],
) -> int:
    """:func:`_roll_into_stage` from the bottom node to a node every QI of which is at
    level 0 or 1 or has a single value (:func:`_from_level_one`): the same keys, classes
    and codes, each QI's column read at its level (``level_one``) instead of mapped code
    by code (a QI of one value plays no part in the key; its code, 0, is mapped)."""
    d = len(target)
    zero = np.zeros(d, dtype=np.int64)
    offsets, radix = level_offsets(zero, target, maps)
    span = _span(radix)
    if span < 0:
        return _roll_into_stage(arena, 0, base, zero, target, maps, k, summary)
    if arena.state[LEVEL_ONE] == 0:
        _level_one(arena, base, maps)
    state = arena.state
    _next_epoch(arena)
    _ready(arena, radix, base)
    bottom = arena.codes[: d * base].reshape((d, base))
    keys = np.zeros(base, dtype=np.int64)
    for j in range(d):
        r = radix[j]
        if r > 1:
            row = bottom[j] if target[j] == 0 else arena.level_one[j]
            for i in range(base):
                keys[i] = keys[i] * r + np.int64(row[i])
    count = _groups_by_key(
        keys, arena.sizes[:base], span, arena.first, arena.grouped, arena.scratch, state[EPOCH]
    )
    first, stage = arena.first, arena.stage
    for j in range(d):
        if target[j] == 0 or (target[j] == 1 and radix[j] > 1):
            row = bottom[j] if target[j] == 0 else arena.level_one[j]
            for g in range(count):
                stage[j, g] = row[first[g]]
        else:  # (one value at its level)
            off = offsets[j]
            for g in range(count):
                stage[j, g] = maps.flat[off + np.int64(bottom[j, first[g]])]
    summarize_into(arena.grouped, count, k, summary)
    return count


@njit(cache=True, nogil=True)
def _roll_into_stage(
    arena: Arena,
    start: int,
    m: int,
    source: NDArray[np.int64],
    target: NDArray[Any],
    maps: LevelMaps,
    k: int,
    summary: NDArray[np.int64],
) -> int:
    """Group columns [start, start + m) of the arena (node ``source``) into node
    ``target``: codes into ``stage``, sizes into ``grouped``, ``summary`` filled; returns
    the number of classes."""
    d = len(target)
    offsets, radix = level_offsets(source, target, maps)
    state = arena.state
    _next_epoch(arena)
    _ready(arena, radix, m)
    src = arena.codes[d * start : d * (start + m)].reshape((d, m))
    src_sizes = arena.sizes[start : start + m]
    count = group(
        src, src_sizes, maps.flat, offsets, radix, arena.first, arena.grouped, arena.scratch,
        state[EPOCH],
    )  # fmt: skip
    gather(src, arena.first, maps.flat, offsets, count, arena.stage)
    summarize_into(arena.grouped, count, k, summary)
    return count


@njit(cache=True, nogil=True)
def _hashed(levels: NDArray[Any], maps: LevelMaps, m: int) -> bool:
    """Whether grouping ``m`` rows on a node of these levels takes the hash table
    (``grouping.group``: its keys span more than direct addressing covers), so that the
    node may have as many classes as rows, whatever its values."""
    radix = np.empty(len(levels), dtype=np.int64)
    for j in range(len(levels)):
        radix[j] = maps.values[j, levels[j]]
    return not _addressed(_span(radix), m)


@njit(cache=True, nogil=True)
def _one_class(target: NDArray[Any], maps: LevelMaps) -> bool:
    """Whether every QI has a single value at the node's levels (the top node, and nodes
    whose other levels are at the top of QIs of one value): all rows in one class."""
    for j in range(len(target)):  # noqa: SIM110 (compiled: a loop, not all() of a generator)
        if maps.values[j, target[j]] != 1:
            return False
    return True


@njit(cache=True, nogil=True)
def _all_in_one(arena: Arena, base: int, d: int, k: int, summary: NDArray[np.int64]) -> int:
    """Stage the one class of every row (code 0 of each QI: its single value) without
    grouping the bottom node's classes; returns 1 (the classes)."""
    rows = np.int64(0)
    for g in range(base):
        rows += arena.sizes[g]
    for j in range(d):
        arena.stage[j, 0] = 0
    arena.grouped[0] = rows
    summarize_into(arena.grouped, 1, k, summary)
    return 1


@njit(cache=True, nogil=True)
def fetch(
    target: NDArray[np.int16],
    arena: Arena,
    base: int,
    base_summary: NDArray[np.int64],
    cache: bool,
    maps: LevelMaps,
    k: int,
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
    this function over ARX's grid). A hub keeps every row's level-1 value, and a QI like
    a ZIP code keeps nearly every row distinct there: such a hub has about as many
    classes as the bottom, and going through it costs a hashed pass over the bottom, its
    copy into the store and a pass over it, where the node itself is one pass from the
    bottom by direct addressing. So once a hub has had more than half the bottom's
    classes (``state[BIG_HUB]``), a node whose hub's key would be hashed (:func:`_hashed`)
    and whose own would not is rolled straight from the bottom (on cup-like, ARX's grid
    without suppression: about 45 % less time in the search). ``cache`` False
    (inconsistent hierarchies): nothing is cached, every node comes from the bottom.
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
        count = _roll_into_stage(arena, 0, base, zero, target, maps, k, summary)
        return -1, count
    meta, state = arena.meta, arena.state
    exact, best = find_slot(meta, state[HIGH], target)
    if exact >= 0:
        summary[:] = arena.summaries[exact]
        return meta[exact, d + START], meta[exact, d + COUNT]
    if base > 0 and _one_class(target, maps):
        count = _all_in_one(arena, base, d, k, summary)
        slot = _store(arena, base, target, count, summary)
        return (-1, count) if slot < 0 else (meta[slot, d + START], count)
    if best >= 0 and meta[best, d + COUNT] >= base:
        best = -1
    if best < 0:
        hub = np.minimum(target, 1)
        single = 0
        for j in range(d):
            if maps.values[j, target[j]] == 1:
                single += 1
        if 2 * single >= d:
            for j in range(d):
                if maps.values[j, target[j]] == 1:  # one value: the QI plays no part
                    hub[j] = target[j]
        if not np.array_equal(hub, target):
            h_exact, h_best = find_slot(meta, state[HIGH], hub)
            if h_exact >= 0:
                best = _refresh(arena, base, h_exact)
            elif state[BIG_HUB] and _hashed(hub, maps, base) and not _hashed(target, maps, base):
                pass  # (a hub may be as large as the bottom: the node from the bottom, below)
            else:
                if h_best >= 0 and meta[h_best, d + COUNT] < base:
                    src = meta[h_best, :d].copy()
                    start, m = meta[h_best, d + START], meta[h_best, d + COUNT]
                    count = _roll_into_stage(arena, start, m, src, hub, maps, k, summary)
                elif _from_level_one(hub, maps):
                    count = _bottom_into_stage(arena, base, hub, maps, k, summary)
                else:
                    count = _roll_into_stage(arena, 0, base, zero, hub, maps, k, summary)
                if 2 * count > base:
                    state[BIG_HUB] = 1
                best = _store(arena, base, hub, count, summary)
    if best >= 0:
        best = _refresh(arena, base, best)
    if best >= 0:
        src = meta[best, :d].copy()
        start, m = meta[best, d + START], meta[best, d + COUNT]
        count = _roll_into_stage(arena, start, m, src, target, maps, k, summary)
    elif _from_level_one(target, maps):
        count = _bottom_into_stage(arena, base, target, maps, k, summary)
    else:
        count = _roll_into_stage(arena, 0, base, zero, target, maps, k, summary)
    slot = _store(arena, base, target, count, summary)
    if slot < 0:
        return -1, count
    return meta[slot, d + START], count
