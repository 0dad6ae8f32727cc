"""Suppression inside a class (LONGITUDINAL.md §3.2 steps 4-5): the event phase (a failing
person loses its rarest feature, counts updated incrementally), the person phase, and the
merge of the classes' steps in global person-id order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from apps.engine.longitudinal.kernels.classes import (
    _close_class,
    _count_all,
    _gather,
    _has_feature,
    _open_class,
    _person_k,
    _query,
    _slot_of,
)
from apps.engine.longitudinal.kernels.common import (
    _LARGE,
    I64,
    Data,
    Posting,
    Scratch,
    State,
    Table,
    _add,
    _find,
    _next_combination,
)

# --------------------------------------------------------------------------- suppression


@njit(cache=True, nogil=True)
def _decrement(n: int, t: int, f: int, table: Table, scratch: Scratch) -> None:
    """Lower by one every stored t-subset of cur[:n] that contains f."""
    cur, rest, idx, buf = scratch
    if t > n:
        return
    r = 0
    for a in range(n):
        if cur[a] != f:
            rest[r] = cur[a]
            r += 1
    if t == 1:
        buf[0] = f
        e, _ = _find(buf, 1, table)
        if e >= 0:
            _add(table, e, -1)
        return
    u = t - 1
    for a in range(u):
        idx[a] = a
    while True:
        w = 0
        placed = False
        for a in range(u):
            x = rest[idx[a]]
            if not placed and f < x:
                buf[w] = f
                w += 1
                placed = True
            buf[w] = x
            w += 1
        if not placed:
            buf[w] = f
        e, _ = _find(buf, t, table)
        if e >= 0:
            _add(table, e, -1)
        if not _next_combination(idx, u, r):
            break


@njit(cache=True, nogil=True)
def _event_phase(
    c0: int,
    c1: int,
    members: int,
    k: int,
    p: int,
    max_steps: int,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
    steps_out: tuple[I64, I64, I64],
) -> int:
    """Event suppression inside one open class (§3.2 step 4); returns the steps taken
    (recorded as (person, events) in ``steps_out`` = (persons, events, [count]))."""
    order, position, offsets, feats, events, slot_person = data
    removed, alive, kk = state
    post, pstart, plen, support1, qsize = posting
    cur = scratch[0]
    step_person, step_events, steps_meta = steps_out
    pos = c0
    steps = 0
    while True:
        # the first failing person that still has a feature to lose (with complete
        # knowledge a person without features can fail; person suppression takes it)
        while pos < c1:
            i = order[pos]
            if alive[i] and kk[i] < k and _has_feature(i, offsets, removed):
                break
            pos += 1
        if pos >= c1:
            break
        if max_steps >= 0 and steps >= max_steps:
            break
        i = order[pos]
        n = _gather(i, offsets, feats, removed, cur)
        best = -1
        best_support = _LARGE
        for a in range(n):  # cur is ascending: a strict < keeps the smallest feature on ties
            if support1[cur[a]] < best_support:
                best_support = support1[cur[a]]
                best = cur[a]
        slot = _slot_of(i, best, offsets, feats)
        w = steps_meta[0]
        step_person[w] = i
        step_events[w] = events[slot]
        steps_meta[0] = w + 1
        if p > 0:
            if n >= p:
                _decrement(n, p, best, table, scratch)
            for t in range(1, min(p - 1, n) + 1):
                if qsize[t]:
                    _decrement(n, t, best, table, scratch)
        removed[slot] = True
        support1[best] -= 1
        steps += 1
        if p == 0:
            _count_all(c0, c1, data, state, scratch)
            pos = c0
            continue
        n2 = _gather(i, offsets, feats, removed, cur)
        if 0 < n2 < p:
            _query(cur, n2, p, data, state, table, posting, scratch)
        kk[i] = _person_k(i, members, p, data, state, table, scratch)
        for q in range(pstart[best], pstart[best] + plen[best]):
            s = post[q]
            if removed[s]:
                continue
            j = slot_person[s]
            if not alive[j]:
                continue
            kk[j] = _person_k(j, members, p, data, state, table, scratch)
            if kk[j] < k and position[j] < pos:
                pos = position[j]
    return steps


@njit(cache=True, nogil=True)
def _person_phase(
    c0: int,
    c1: int,
    k: int,
    p: int,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
    capacity: int,
) -> int:
    """Person suppression in one open class (§3.2 step 5): remove every failing person,
    recount (removing persons lowers the others' counts), until none fails."""
    order = data[0]
    _, alive, kk = state
    total = 0
    while True:
        gone = 0
        for pos in range(c0, c1):
            i = order[pos]
            if alive[i] and kk[i] < k:
                alive[i] = False
                gone += 1
        if gone == 0:
            return total
        total += gone
        _close_class(c0, c1, data, table, posting)
        _open_class(c0, c1, p, data, state, table, posting, scratch, capacity)


@njit(cache=True, nogil=True)
def _heap_push(heap: I64, owner: I64, size: int, key: int, who: int) -> int:
    x = size
    heap[x], owner[x] = key, who
    while x > 0:
        parent = (x - 1) // 2
        if heap[parent] <= heap[x]:
            break
        heap[parent], heap[x] = heap[x], heap[parent]
        owner[parent], owner[x] = owner[x], owner[parent]
        x = parent
    return size + 1


@njit(cache=True, nogil=True)
def _heap_sift(heap: I64, owner: I64, size: int) -> None:
    x = 0
    while True:
        left = 2 * x + 1
        if left >= size:
            return
        small = left
        if left + 1 < size and heap[left + 1] < heap[left]:
            small = left + 1
        if heap[x] <= heap[small]:
            return
        heap[x], heap[small] = heap[small], heap[x]
        owner[x], owner[small] = owner[small], owner[x]
        x = small


@njit(cache=True, nogil=True)
def _merge(
    class_first: I64,
    class_steps: I64,
    step_person: I64,
    step_events: I64,
    budget: int,
    allowed: I64,
) -> int:
    """Take the classes' steps in global id order (each class's next step is its first
    failing person; the smallest id goes first) until one would exceed ``budget`` events;
    ``allowed[c]`` = steps of class c taken. Returns the events taken."""
    classes = len(class_first)
    heap = np.empty(classes, dtype=np.int64)
    owner = np.empty(classes, dtype=np.int64)
    size = 0
    for c in range(classes):
        allowed[c] = 0
        if class_steps[c] > 0:
            size = _heap_push(heap, owner, size, step_person[class_first[c]], c)
    taken = np.int64(0)
    while size > 0:
        c = owner[0]
        step = class_first[c] + allowed[c]
        if taken + step_events[step] > budget:
            break
        taken += step_events[step]
        allowed[c] += 1
        if allowed[c] < class_steps[c]:
            heap[0] = step_person[class_first[c] + allowed[c]]
        else:
            size -= 1
            heap[0], owner[0] = heap[size], owner[size]
        _heap_sift(heap, owner, size)
    return int(taken)
