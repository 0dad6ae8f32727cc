"""The table store: cached class tables of evaluated nodes in one arena (``TableCache``).

``sizes`` [capacity] holds the class sizes of the bottom node in [0, base) and of cached
tables in a ring over [base, capacity); ``codes`` [d * capacity] their codes, a table at
position ``p`` with ``c`` classes as a ``[d x c]`` block at ``d * p`` (contiguous, so the
compiled loops see C-ordered arrays). A new table goes at the ring's head and evicts the
tables it overlaps (oldest first out). ``meta`` has one row per slot: the node's levels
(level -1 of QI 0: empty slot), then START, COUNT and SEQ (allocation order);
``summaries`` the slot's summary. ``state`` holds the ring's HEAD, the slots in use
(HIGH: slots from HIGH on are free, whatever they hold), the next SEQ, the scratch EPOCH,
the MOVES of used tables to the head and whether a hub has had more than half the bottom's
classes (BIG_HUB, ``rollup.fetch``). Nothing is allocated per call: classes are
grouped into ``stage`` / ``grouped`` and copied into the ring (the grouping, and the
entry point :func:`~apps.engine.search.kernels.rollup.fetch`, are in ``rollup.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from apps.engine.search.kernels.grouping import Codes

#: Columns of ``meta`` after the levels, and slots of ``state``.
START, COUNT, SEQ = range(3)
HEAD, HIGH, NEXT_SEQ, EPOCH, MOVES, READY_DIRECT, READY_HASH, LEVEL_ONE, BIG_HUB = range(9)
#: Slots of ``state``.
STATE = 9


class Arena(NamedTuple):
    """Every array of the store (module docstring), with the grouping's working memory:
    ``scratch`` (``[2 x scratch_size(base)]``), ``first``, ``grouped`` and ``stage``
    (room for the bottom node's classes).

    ``scratch`` need not be zeroed when made: ``state[READY_DIRECT]`` and
    ``state[READY_HASH]`` say how much of its rows 0 and 1 holds no garbage (zeros or
    stamps of past epochs), and each grouping zeroes what it will use beyond that first
    (:func:`~apps.engine.search.kernels.rollup._ready`); a search without suppression on adult uses a fraction of the
    rows, whose zeroing took as long as its first few roll-ups.

    ``level_one`` holds the bottom node's codes mapped to level 1 (``[d x base]``, made
    by the first roll-up from the bottom that reads it: ``state[LEVEL_ONE]``), so that
    the roll-ups from the bottom to a hub (:func:`~apps.engine.search.kernels.rollup.fetch`) read codes instead of looking
    each up in the maps."""

    codes: Codes
    sizes: NDArray[np.int64]
    meta: NDArray[np.int64]
    summaries: NDArray[np.int64]
    state: NDArray[np.int64]
    scratch: NDArray[np.int64]
    first: NDArray[np.int64]
    grouped: NDArray[np.int64]
    stage: Codes
    level_one: Codes


@njit(cache=True, nogil=True)
def find_slot(meta: NDArray[np.int64], high: int, target: NDArray[Any]) -> tuple[int, int]:
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
def _store(
    arena: Arena, base: int, target: NDArray[Any], count: int, summary: NDArray[np.int64]
) -> int:
    """Copy the staged table into the ring (evicting what it overlaps); its slot, or -1
    when it is empty or larger than a quarter of the ring (not cached)."""
    d = len(target)
    codes, sizes, meta, state = arena.codes, arena.sizes, arena.meta, arena.state
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
    stage = arena.stage
    for j in range(d):
        for g in range(count):
            block[j, g] = stage[j, g]
    grouped = arena.grouped
    for g in range(count):
        sizes[lo + g] = grouped[g]
    for j in range(d):
        meta[free, j] = target[j]
    meta[free, d + START] = lo
    meta[free, d + COUNT] = count
    meta[free, d + SEQ] = state[NEXT_SEQ]
    state[NEXT_SEQ] += 1
    arena.summaries[free] = summary
    state[HEAD] = hi
    return free


@njit(cache=True, nogil=True)
def _refresh(arena: Arena, base: int, slot: int) -> int:
    """A cached table about to be used as a source: when the ring's head will reach it
    within a quarter turn, move it to the head (a used table stays; the ring then
    evicts tables that are old *and* unused, close to least-recently-used)."""
    meta, state = arena.meta, arena.state
    d = meta.shape[1] - 3
    capacity = len(arena.sizes)
    head, start, count = state[HEAD], meta[slot, d + START], meta[slot, d + COUNT]
    ahead = start - head if start >= head else (capacity - head) + (start - base)
    if ahead >= (capacity - base) // 4:
        return slot
    block = arena.codes[d * start : d * (start + count)].reshape((d, count))
    stage, grouped = arena.stage, arena.grouped
    for j in range(d):
        for g in range(count):
            stage[j, g] = block[j, g]
    for g in range(count):
        grouped[g] = arena.sizes[start + g]
    levels = meta[slot, :d].copy()
    summary = arena.summaries[slot].copy()
    meta[slot, 0] = -1
    state[MOVES] += 1
    return _store(arena, base, levels, count, summary)
