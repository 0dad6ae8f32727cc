"""Compiled exact counting of per-person counts, with event and person suppression (numba).

Per person-level class, independently (LONGITUDINAL.md §4 "Equivalence": the strict
check is k^m-anonymity with m = p inside each class):

* **power p**: every person ``j`` with ``|F_j| >= p`` adds each of its p-subsets to a hash
  table (open addressing over the exact item tuples, no hashing shortcut), counting how
  many persons hold it; that count is ``m(S)`` for every p-subset (superset rule). A
  person with ``0 < |F_i| < p`` asks for its whole set, whose support is counted on the
  class's posting lists (persons holding each feature), from its rarest feature.
  ``k_i`` = the least count over its ``s_i``-subsets; ``|F_i| = 0`` gives the class size.
* **complete knowledge** ("all", ``p = 0`` here): ``k_i`` = persons of the class whose set
  equals ``F_i``: sets are hashed and equal hashes compared item by item.

Suppression (LONGITUDINAL.md §3.2 steps 4-5, :func:`evaluate`): persons failing ``k`` in
id order lose, one step at a time, the feature with the smallest support in their class
(ties: the smallest feature id = smallest value) and every event carrying it; the
counts of the class are updated incrementally (a removed feature lowers only the subsets
that contain it, held by the persons of its posting list). The phase takes steps in
global id order (the first failing person of the whole data set next) and stops at the
first step that would exceed the event budget: classes are run on their own and their
steps merged by person id afterwards (:func:`_merge`), which gives the same order, and a
class cut short is replayed up to its share. Then every still failing person is removed
whole, the class recounted, until none fails; the node passes when the removed persons
are within the person budget. A class smaller than ``k`` is removed whole at once (no
event suppression can help it).

Every function here is checked against the plain-Python definitions of ``formulas.py``
on random data (tests/engine/longitudinal/test_properties.py). Compiled code is cached
on disk (``cache=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

# Slots of the statistics array returned by :func:`evaluate`.
EVENTS_SUPPRESSED, PERSONS_SUPPRESSED, PASSES, DECIDED_EARLY, STEPS, TRUNCATED = range(6)
STATS = 6
_SATURATE = np.int64(1) << np.int64(62)


# --------------------------------------------------------------------------- small helpers


@njit(cache=True, nogil=True)
def _binom(n: int, k: int) -> np.int64:
    """binom(n, k), saturating at 2**62."""
    if k < 0 or k > n:
        return np.int64(0)
    k = min(k, n - k)
    out = np.int64(1)
    for i in range(1, k + 1):
        # out * (n - k + i) / i stays an integer at every step
        if out > _SATURATE // (n - k + i):
            return _SATURATE
        out = out * (n - k + i) // i
    return out


@njit(cache=True, nogil=True)
def subset_total(offsets: NDArray[np.int64], power: int) -> np.int64:
    """``Σ_i binom(|F_i|, s_i)`` (formulas.subset_total): the work of an exact count."""
    total = np.int64(0)
    for i in range(len(offsets) - 1):
        n = offsets[i + 1] - offsets[i]
        c = np.int64(1) if power == 0 else _binom(n, min(power, n))
        total += c
        if total >= _SATURATE:
            return _SATURATE
    return total


@njit(cache=True, nogil=True)
def _mix(x: np.uint64) -> np.uint64:
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True)
def _hash(buf: NDArray[np.int32], t: int) -> np.uint64:
    h = np.uint64(t) * np.uint64(0x9E3779B97F4A7C15)
    for a in range(t):
        h = _mix(h ^ (np.uint64(buf[a]) + np.uint64(0x632BE59BD9B4E019)))
    return h


@njit(cache=True, nogil=True)
def _next_combination(idx: NDArray[np.int64], t: int, n: int) -> bool:
    i = t - 1
    while i >= 0 and idx[i] == n - t + i:
        i -= 1
    if i < 0:
        return False
    idx[i] += 1
    for j in range(i + 1, t):
        idx[j] = idx[j - 1] + 1
    return True


@njit(cache=True, nogil=True)
def regroup(
    offsets: NDArray[np.int64],
    base: NDArray[np.int64],
    events: NDArray[np.int64],
    of_base: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64]]:
    """Map each person's base features to node features; merge equal ones (summing
    their events) and sort them, person by person."""
    n = len(offsets) - 1
    out_off = np.zeros(n + 1, dtype=np.int64)
    out_feat = np.empty(len(base), dtype=np.int32)
    out_ev = np.empty(len(base), dtype=np.int64)
    w = 0
    for i in range(n):
        lo, hi = offsets[i], offsets[i + 1]
        m = hi - lo
        if m == 1:
            out_feat[w] = of_base[base[lo]]
            out_ev[w] = events[lo]
            w += 1
        elif m > 1:
            mapped = np.empty(m, dtype=np.int64)
            for a in range(m):
                mapped[a] = of_base[base[lo + a]]
            perm = np.argsort(mapped)
            last = np.int64(-1)
            for a in range(m):
                f = mapped[perm[a]]
                if f != last:
                    out_feat[w] = f
                    out_ev[w] = events[lo + perm[a]]
                    w += 1
                    last = f
                else:
                    out_ev[w - 1] += events[lo + perm[a]]
        out_off[i + 1] = w
    return out_off, out_feat[:w].copy(), out_ev[:w].copy()


# --------------------------------------------------------------------------- the state


class _State:  # documentation only: the arrays that travel together through the kernels
    """items[e*p:(e+1)*p] (subset e), tlen[e], tcount[e], tslot[e] (its index slot),
    index[s] (entry + 1, 0 = empty), meta = [entries, mask];
    pstart/plen/support1 over features (valid for the current class only), post (slots),
    kk (count per person), alive (person not suppressed), removed (slot suppressed)."""


@njit(cache=True, nogil=True)
def _find(
    buf: NDArray[np.int32],
    t: int,
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    p: int,
) -> tuple[int, int]:
    mask = meta[1]
    s = np.int64(_hash(buf, t) & np.uint64(mask))
    while True:
        e = index[s]
        if e == 0:
            return -1, s
        e -= 1
        if tlen[e] == t:
            base = e * p
            same = True
            for a in range(t):
                if items[base + a] != buf[a]:
                    same = False
                    break
            if same:
                return e, s
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def _insert(
    buf: NDArray[np.int32],
    t: int,
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    p: int,
) -> int:
    e, s = _find(buf, t, items, tlen, index, meta, p)
    if e >= 0:
        return e
    e = meta[0]
    meta[0] += 1
    base = e * p
    for a in range(t):
        items[base + a] = buf[a]
    tlen[e] = t
    tcount[e] = 0
    tslot[e] = s
    index[s] = e + 1
    return e


@njit(cache=True, nogil=True)
def _gather(
    i: int,
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    cur: NDArray[np.int32],
) -> int:
    n = 0
    for s in range(offsets[i], offsets[i + 1]):
        if not removed[s]:
            cur[n] = feats[s]
            n += 1
    return n


@njit(cache=True, nogil=True)
def _slot_of(
    i: int, f: int, offsets: NDArray[np.int64], feats: NDArray[np.int32]
) -> int:
    lo, hi = offsets[i], offsets[i + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if feats[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    if lo < offsets[i + 1] and feats[lo] == f:
        return lo
    return -1


@njit(cache=True, nogil=True)
def _holds(
    j: int,
    f: int,
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
) -> bool:
    s = _slot_of(j, f, offsets, feats)
    return s >= 0 and not removed[s]


@njit(cache=True, nogil=True)
def _query_support(
    cur: NDArray[np.int32],
    n: int,
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
) -> int:
    """Persons of the class holding every feature of cur[:n] (n >= 1), scanned from the
    posting list of the rarest one."""
    rare = cur[0]
    for a in range(1, n):
        if support1[cur[a]] < support1[rare]:
            rare = cur[a]
    count = 0
    for q in range(pstart[rare], pstart[rare] + plen[rare]):
        s = post[q]
        if removed[s]:
            continue
        j = slot_person[s]
        if not alive[j]:
            continue
        ok = True
        for a in range(n):
            f = cur[a]
            if f != rare and not _holds(j, f, offsets, feats, removed):
                ok = False
                break
        if ok:
            count += 1
    return count


@njit(cache=True, nogil=True)
def _min_support(
    cur: NDArray[np.int32],
    n: int,
    p: int,
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
) -> int:
    best = np.int64(1) << np.int64(40)
    for a in range(p):
        idx[a] = a
    while True:
        for a in range(p):
            buf[a] = cur[idx[a]]
        e, _ = _find(buf, p, items, tlen, index, meta, p)
        c = tcount[e]
        if c < best:
            best = c
        if not _next_combination(idx, p, n):
            break
    return int(best)


@njit(cache=True, nogil=True)
def _person_k(
    i: int,
    members: int,
    p: int,
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    cur: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
) -> int:
    n = _gather(i, offsets, feats, removed, cur)
    if n == 0:
        return members
    if n >= p:
        return _min_support(cur, n, p, idx, buf, items, tlen, tcount, index, meta)
    for a in range(n):
        buf[a] = cur[a]
    e, _ = _find(buf, n, items, tlen, index, meta, p)
    return int(tcount[e])


@njit(cache=True, nogil=True)
def _bound(
    c0: int,
    c1: int,
    order: NDArray[np.int64],
    offsets: NDArray[np.int64],
    p: int,
) -> np.int64:
    """Most table entries a class can need: its p-subsets, one query per person, and one
    new query per suppression step (at most one per feature slot)."""
    total = np.int64(0)
    for pos in range(c0, c1):
        i = order[pos]
        n = offsets[i + 1] - offsets[i]
        total += _binom(n, p) + 1 + n
        if total >= _SATURATE:
            return _SATURATE
    return total


@njit(cache=True, nogil=True)
def _table_mask(bound: np.int64, capacity: int) -> np.int64:
    size = np.int64(8)
    while size < 2 * bound and size < capacity:
        size *= 2
    return size - 1


# --------------------------------------------------------------------------- one class


@njit(cache=True, nogil=True)
def _open_class(
    c0: int,
    c1: int,
    p: int,
    order: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    kk: NDArray[np.int64],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
    qsize: NDArray[np.bool_],
    cur: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    capacity: int,
) -> int:
    """Count the class from scratch (live persons, unremoved slots); returns its members."""
    members = 0
    m = 0
    for pos in range(c0, c1):
        i = order[pos]
        if not alive[i]:
            continue
        members += 1
        for s in range(offsets[i], offsets[i + 1]):
            if not removed[s]:
                post[m] = s
                m += 1
    # posting lists: slots sorted by feature (then slot, i.e. position order)
    keys = np.empty(m, dtype=np.int64)
    for q in range(m):
        keys[q] = np.int64(feats[post[q]])
    perm = np.argsort(keys, kind="mergesort")
    sorted_slots = post[:m][perm].copy()
    for q in range(m):
        post[q] = sorted_slots[q]
    q = 0
    while q < m:
        f = feats[post[q]]
        r = q
        while r < m and feats[post[r]] == f:
            r += 1
        pstart[f] = q
        plen[f] = r - q
        support1[f] = r - q
        q = r
    for t in range(p + 1):
        qsize[t] = False
    if p == 0:
        _count_all(c0, c1, order, offsets, feats, removed, alive, kk, cur, buf)
        return members
    meta[0] = 0
    meta[1] = _table_mask(_bound(c0, c1, order, offsets, p), capacity)
    # p-subsets of every person with at least p features
    for pos in range(c0, c1):
        i = order[pos]
        if not alive[i]:
            continue
        n = _gather(i, offsets, feats, removed, cur)
        if n < p:
            continue
        for a in range(p):
            idx[a] = a
        while True:
            for a in range(p):
                buf[a] = cur[idx[a]]
            e = _insert(buf, p, items, tlen, tcount, tslot, index, meta, p)
            tcount[e] += 1
            if not _next_combination(idx, p, n):
                break
    # whole sets of persons with fewer than p features
    for pos in range(c0, c1):
        i = order[pos]
        if not alive[i]:
            continue
        n = _gather(i, offsets, feats, removed, cur)
        if n == 0 or n >= p:
            continue
        for a in range(n):
            buf[a] = cur[a]
        e, _ = _find(buf, n, items, tlen, index, meta, p)
        if e < 0:
            support = _query_support(
                cur, n, offsets, feats, removed, alive, slot_person, post, pstart, plen, support1
            )
            for a in range(n):
                buf[a] = cur[a]
            e = _insert(buf, n, items, tlen, tcount, tslot, index, meta, p)
            tcount[e] = support
            qsize[n] = True
    for pos in range(c0, c1):
        i = order[pos]
        if alive[i]:
            kk[i] = _person_k(
                i, members, p, offsets, feats, removed, cur, idx, buf, items, tlen, tcount, index, meta
            )
    return members


@njit(cache=True, nogil=True)
def _close_class(
    c0: int,
    c1: int,
    order: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
) -> None:
    for e in range(meta[0]):
        index[tslot[e]] = 0
    meta[0] = 0
    for pos in range(c0, c1):
        i = order[pos]
        for s in range(offsets[i], offsets[i + 1]):
            f = feats[s]
            pstart[f] = 0
            plen[f] = 0
            support1[f] = 0


@njit(cache=True, nogil=True)
def _same_set(
    i: int,
    j: int,
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    cur: NDArray[np.int32],
    buf: NDArray[np.int32],
) -> bool:
    n = _gather(i, offsets, feats, removed, cur)
    m = 0
    for s in range(offsets[j], offsets[j + 1]):
        if not removed[s]:
            if m >= n or feats[s] != cur[m]:
                return False
            m += 1
    return m == n


@njit(cache=True, nogil=True)
def _count_all(
    c0: int,
    c1: int,
    order: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    kk: NDArray[np.int64],
    cur: NDArray[np.int32],
    buf: NDArray[np.int32],
) -> None:
    """Complete knowledge: k_i = live persons of the class with exactly F_i."""
    m = c1 - c0
    hashes = np.zeros(m, dtype=np.int64)
    persons = np.empty(m, dtype=np.int64)
    live = 0
    for pos in range(c0, c1):
        i = order[pos]
        if not alive[i]:
            continue
        h = np.uint64(0x51ED270B27A1F3C5)
        n = 0
        for s in range(offsets[i], offsets[i + 1]):
            if not removed[s]:
                h = _mix(h ^ (np.uint64(feats[s]) + np.uint64(0x9E3779B97F4A7C15)))
                n += 1
        h = _mix(h ^ np.uint64(n))
        hashes[live] = np.int64(h >> np.uint64(1))
        persons[live] = i
        live += 1
    perm = np.argsort(hashes[:live], kind="mergesort")
    group = np.empty(live, dtype=np.int64)
    sizes = np.zeros(live, dtype=np.int64)
    rep = np.empty(live, dtype=np.int64)  # a person of each group
    a = 0
    groups = 0
    while a < live:
        b = a
        while b < live and hashes[perm[b]] == hashes[perm[a]]:
            b += 1
        first_group = groups
        for x in range(a, b):
            i = persons[perm[x]]
            found = -1
            for g in range(first_group, groups):  # several groups only on a hash collision
                if _same_set(i, rep[g], offsets, feats, removed, cur, buf):
                    found = g
                    break
            if found < 0:
                found = groups
                rep[groups] = i
                groups += 1
            group[perm[x]] = found
            sizes[found] += 1
        a = b
    for x in range(live):
        kk[persons[x]] = sizes[group[x]]


# --------------------------------------------------------------------------- suppression


@njit(cache=True, nogil=True)
def _decrement(
    cur: NDArray[np.int32],
    n: int,
    t: int,
    f: int,
    rest: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    p: int,
) -> None:
    """Lower by one every stored t-subset of cur[:n] that contains f."""
    if t > n:
        return
    r = 0
    for a in range(n):
        if cur[a] != f:
            rest[r] = cur[a]
            r += 1
    if t == 1:
        buf[0] = f
        e, _ = _find(buf, 1, items, tlen, index, meta, p)
        if e >= 0:
            tcount[e] -= 1
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
        e, _ = _find(buf, t, items, tlen, index, meta, p)
        if e >= 0:
            tcount[e] -= 1
        if not _next_combination(idx, u, r):
            break


@njit(cache=True, nogil=True)
def _has_feature(i: int, offsets: NDArray[np.int64], removed: NDArray[np.bool_]) -> bool:
    for s in range(offsets[i], offsets[i + 1]):
        if not removed[s]:
            return True
    return False


@njit(cache=True, nogil=True)
def _event_phase(
    c0: int,
    c1: int,
    members: int,
    k: int,
    p: int,
    max_steps: int,
    order: NDArray[np.int64],
    position: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    events: NDArray[np.int64],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    kk: NDArray[np.int64],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
    qsize: NDArray[np.bool_],
    cur: NDArray[np.int32],
    rest: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    step_person: NDArray[np.int64],
    step_events: NDArray[np.int64],
    steps_meta: NDArray[np.int64],
) -> int:
    """Event suppression inside one open class (§3.2 step 4); returns the steps taken."""
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
        best_support = np.int64(1) << np.int64(40)
        for a in range(n):  # cur is ascending: a strict < keeps the smallest feature on ties
            f = cur[a]
            if support1[f] < best_support:
                best_support = support1[f]
                best = f
        slot = _slot_of(i, best, offsets, feats)
        w = steps_meta[0]
        step_person[w] = i
        step_events[w] = events[slot]
        steps_meta[0] = w + 1
        if p > 0:
            if n >= p:
                _decrement(cur, n, p, best, rest, idx, buf, items, tlen, tcount, index, meta, p)
            for t in range(1, min(p - 1, n) + 1):
                if qsize[t]:
                    _decrement(cur, n, t, best, rest, idx, buf, items, tlen, tcount, index, meta, p)
        removed[slot] = True
        support1[best] -= 1
        steps += 1
        if p == 0:
            _count_all(c0, c1, order, offsets, feats, removed, alive, kk, cur, buf)
            pos = c0
            continue
        n2 = n - 1
        if 0 < n2 < p:
            _gather(i, offsets, feats, removed, cur)
            for a in range(n2):
                buf[a] = cur[a]
            e, _ = _find(buf, n2, items, tlen, index, meta, p)
            if e < 0:
                support = _query_support(
                    cur, n2, offsets, feats, removed, alive, slot_person, post, pstart, plen, support1
                )
                for a in range(n2):
                    buf[a] = cur[a]
                e = _insert(buf, n2, items, tlen, tcount, tslot, index, meta, p)
                tcount[e] = support
                qsize[n2] = True
        kk[i] = _person_k(
            i, members, p, offsets, feats, removed, cur, idx, buf, items, tlen, tcount, index, meta
        )
        for q in range(pstart[best], pstart[best] + plen[best]):
            s = post[q]
            if removed[s]:
                continue
            j = slot_person[s]
            if not alive[j]:
                continue
            kk[j] = _person_k(
                j, members, p, offsets, feats, removed, cur, idx, buf, items, tlen, tcount, index, meta
            )
            if kk[j] < k and position[j] < pos:
                pos = position[j]
    return steps


@njit(cache=True, nogil=True)
def _merge(
    class_first: NDArray[np.int64],
    class_steps: NDArray[np.int64],
    step_person: NDArray[np.int64],
    step_events: NDArray[np.int64],
    budget: int,
    allowed: NDArray[np.int64],
) -> int:
    """Take the classes' steps in global id order (the next step of every class is that
    class's first failing person; the smallest id goes first) until one would exceed
    ``budget`` events; ``allowed[c]`` = steps of class c taken. Returns events taken."""
    classes = len(class_first)
    heap = np.empty(classes, dtype=np.int64)
    heap_class = np.empty(classes, dtype=np.int64)
    size = 0
    for c in range(classes):
        allowed[c] = 0
        if class_steps[c] > 0:
            # push (person of the class's first step, c)
            heap[size] = step_person[class_first[c]]
            heap_class[size] = c
            x = size
            size += 1
            while x > 0:
                parent = (x - 1) // 2
                if heap[parent] <= heap[x]:
                    break
                heap[parent], heap[x] = heap[x], heap[parent]
                heap_class[parent], heap_class[x] = heap_class[x], heap_class[parent]
                x = parent
    taken = np.int64(0)
    while size > 0:
        c = heap_class[0]
        step = class_first[c] + allowed[c]
        if taken + step_events[step] > budget:
            break
        taken += step_events[step]
        allowed[c] += 1
        if allowed[c] < class_steps[c]:
            heap[0] = step_person[class_first[c] + allowed[c]]
        else:
            size -= 1
            heap[0] = heap[size]
            heap_class[0] = heap_class[size]
        x = 0
        while True:
            left = 2 * x + 1
            if left >= size:
                break
            small = left
            if left + 1 < size and heap[left + 1] < heap[left]:
                small = left + 1
            if heap[x] <= heap[small]:
                break
            heap[x], heap[small] = heap[small], heap[x]
            heap_class[x], heap_class[small] = heap_class[small], heap_class[x]
            x = small
    return int(taken)


@njit(cache=True, nogil=True)
def _capacity(
    order: NDArray[np.int64], starts: NDArray[np.int64], offsets: NDArray[np.int64], p: int
) -> np.int64:
    most = np.int64(1)
    for c in range(len(starts) - 1):
        b = _bound(starts[c], starts[c + 1], order, offsets, p)
        if b > most:
            most = b
    return most


def _buffers(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    offsets: NDArray[np.int64],
    features: int,
    p: int,
) -> tuple[Any, ...]:
    """Working arrays sized for the largest class (allocated lazily by the OS)."""
    sizes = np.diff(offsets)
    degree = int(sizes.max()) if len(sizes) else 0
    bound = int(_capacity(order, starts, offsets, p)) if p > 0 else 1
    capacity = 8
    while capacity < 2 * bound:
        capacity *= 2
    width = max(p, 1)
    slots = int(offsets[-1])
    return (
        np.zeros(bound * width, dtype=np.int32),  # items
        np.zeros(bound, dtype=np.int8),  # tlen
        np.zeros(bound, dtype=np.int32),  # tcount
        np.zeros(bound, dtype=np.int32),  # tslot
        np.zeros(capacity, dtype=np.int32),  # index
        np.zeros(2, dtype=np.int64),  # meta
        np.zeros(max(slots, 1), dtype=np.int64),  # post
        np.zeros(max(features, 1), dtype=np.int64),  # pstart
        np.zeros(max(features, 1), dtype=np.int64),  # plen
        np.zeros(max(features, 1), dtype=np.int64),  # support1
        np.zeros(width + 1, dtype=np.bool_),  # qsize
        np.zeros(max(degree, 1), dtype=np.int32),  # cur
        np.zeros(max(degree, 1), dtype=np.int32),  # rest
        np.zeros(width, dtype=np.int64),  # idx
        np.zeros(max(degree, width, 1), dtype=np.int32),  # buf
        capacity,
    )


def person_counts(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    features: int,
    power: int,
) -> NDArray[np.int64]:
    """Strict per-person counts ``k_i`` (power 0 = complete knowledge), no suppression."""
    persons = len(offsets) - 1
    kk = np.zeros(persons, dtype=np.int64)
    removed = np.zeros(len(feats), dtype=np.bool_)
    alive = np.ones(persons, dtype=np.bool_)
    slot_person = np.repeat(np.arange(persons, dtype=np.int64), np.diff(offsets))
    buffers = _buffers(order, starts, offsets, features, power)
    _count_classes(order, starts, offsets, feats, removed, alive, slot_person, kk, power, *buffers)
    return kk


@njit(cache=True, nogil=True)
def _count_classes(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    kk: NDArray[np.int64],
    p: int,
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
    qsize: NDArray[np.bool_],
    cur: NDArray[np.int32],
    rest: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    capacity: int,
) -> None:
    for c in range(len(starts) - 1):
        c0, c1 = starts[c], starts[c + 1]
        if c1 - c0 == 1:
            kk[order[c0]] = 1
            continue
        _open_class(
            c0, c1, p, order, offsets, feats, removed, alive, slot_person, kk,
            items, tlen, tcount, tslot, index, meta, post, pstart, plen, support1, qsize,
            cur, idx, buf, capacity,
        )
        _close_class(c0, c1, order, offsets, feats, tslot, index, meta, pstart, plen, support1)


def evaluate(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    position: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    events: NDArray[np.int64],
    features: int,
    power: int,
    k: int,
    event_budget: int,
    person_budget: int,
) -> tuple[NDArray[np.int64], NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    """Suppress events then persons until every live person has ``k_i >= k`` (§3.2).

    Returns (counts after suppression, live persons, removed feature slots, stats); with
    ``stats[DECIDED_EARLY] = 1`` the node was found failing before finishing (more
    failing persons than the two budgets can fix), and the other outputs are partial.
    """
    persons = len(offsets) - 1
    kk = np.zeros(persons, dtype=np.int64)
    removed = np.zeros(len(feats), dtype=np.bool_)
    alive = np.ones(persons, dtype=np.bool_)
    slot_person = np.repeat(np.arange(persons, dtype=np.int64), np.diff(offsets))
    buffers = _buffers(order, starts, offsets, features, power)
    stats = np.zeros(STATS, dtype=np.int64)
    _evaluate(
        order, starts, position, offsets, feats, events, removed, alive, slot_person, kk,
        power, k, event_budget, person_budget, stats, *buffers,
    )
    return kk, alive, removed, stats


@njit(cache=True, nogil=True)
def _evaluate(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    position: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    events: NDArray[np.int64],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    kk: NDArray[np.int64],
    p: int,
    k: int,
    event_budget: int,
    person_budget: int,
    stats: NDArray[np.int64],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
    qsize: NDArray[np.bool_],
    cur: NDArray[np.int32],
    rest: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    capacity: int,
) -> None:
    classes = len(starts) - 1
    slots = len(feats)
    # pass A records at most one step per slot, the replays as many again
    step_person = np.empty(2 * max(slots, 1), dtype=np.int64)
    step_events = np.empty(2 * max(slots, 1), dtype=np.int64)
    steps_meta = np.zeros(1, dtype=np.int64)
    class_first = np.zeros(classes, dtype=np.int64)
    class_steps = np.zeros(classes, dtype=np.int64)
    class_removed = np.zeros(classes, dtype=np.int64)
    small = 0  # persons of classes smaller than k: removed whole
    failing = 0  # persons failing before suppression in classes of at least k
    for c in range(classes):
        c0, c1 = starts[c], starts[c + 1]
        members = c1 - c0
        if members < k:
            for pos in range(c0, c1):
                alive[order[pos]] = False
                kk[order[pos]] = members
            small += members
            if small > person_budget:
                stats[DECIDED_EARLY] = 1
                stats[PERSONS_SUPPRESSED] = small
                return
            continue
        if members == 1:
            kk[order[c0]] = 1
            continue
        _open_class(
            c0, c1, p, order, offsets, feats, removed, alive, slot_person, kk,
            items, tlen, tcount, tslot, index, meta, post, pstart, plen, support1, qsize,
            cur, idx, buf, capacity,
        )
        for pos in range(c0, c1):
            if kk[order[pos]] < k:
                failing += 1
        # every failing person needs an event suppressed or its removal
        if failing > event_budget + person_budget - small:
            stats[DECIDED_EARLY] = 1
            _close_class(c0, c1, order, offsets, feats, tslot, index, meta, pstart, plen, support1)
            return
        class_first[c] = steps_meta[0]
        class_steps[c] = _event_phase(
            c0, c1, members, k, p, -1, order, position, offsets, feats, events, removed,
            alive, slot_person, kk, items, tlen, tcount, tslot, index, meta, post, pstart,
            plen, support1, qsize, cur, rest, idx, buf, step_person, step_events, steps_meta,
        )
        class_removed[c] = _person_phase(
            c0, c1, k, p, order, offsets, feats, removed, alive, slot_person, kk, items, tlen,
            tcount, tslot, index, meta, post, pstart, plen, support1, qsize, cur, idx, buf,
            capacity,
        )
        _close_class(c0, c1, order, offsets, feats, tslot, index, meta, pstart, plen, support1)
    total = np.int64(0)
    for w in range(steps_meta[0]):
        total += step_events[w]
    if total <= event_budget:
        stats[EVENTS_SUPPRESSED] = total
    else:
        stats[TRUNCATED] = 1
        allowed = np.zeros(classes, dtype=np.int64)
        stats[EVENTS_SUPPRESSED] = _merge(
            class_first, class_steps, step_person, step_events, event_budget, allowed
        )
        for c in range(classes):
            if allowed[c] >= class_steps[c]:
                continue
            # replay the class up to its share of the budget (§3.2 step 4, global id order)
            c0, c1 = starts[c], starts[c + 1]
            for pos in range(c0, c1):
                i = order[pos]
                alive[i] = True
                for s in range(offsets[i], offsets[i + 1]):
                    removed[s] = False
            members = _open_class(
                c0, c1, p, order, offsets, feats, removed, alive, slot_person, kk,
                items, tlen, tcount, tslot, index, meta, post, pstart, plen, support1, qsize,
                cur, idx, buf, capacity,
            )
            _event_phase(
                c0, c1, members, k, p, allowed[c], order, position, offsets, feats, events,
                removed, alive, slot_person, kk, items, tlen, tcount, tslot, index, meta, post,
                pstart, plen, support1, qsize, cur, rest, idx, buf, step_person, step_events,
                steps_meta,
            )
            class_removed[c] = _person_phase(
                c0, c1, k, p, order, offsets, feats, removed, alive, slot_person, kk, items,
                tlen, tcount, tslot, index, meta, post, pstart, plen, support1, qsize, cur, idx,
                buf, capacity,
            )
            _close_class(c0, c1, order, offsets, feats, tslot, index, meta, pstart, plen, support1)
    removed_persons = small + int(class_removed.sum())
    stats[PERSONS_SUPPRESSED] = removed_persons
    stats[STEPS] = steps_meta[0]
    stats[PASSES] = 1 if removed_persons <= person_budget else 0


@njit(cache=True, nogil=True)
def _person_phase(
    c0: int,
    c1: int,
    k: int,
    p: int,
    order: NDArray[np.int64],
    offsets: NDArray[np.int64],
    feats: NDArray[np.int32],
    removed: NDArray[np.bool_],
    alive: NDArray[np.bool_],
    slot_person: NDArray[np.int64],
    kk: NDArray[np.int64],
    items: NDArray[np.int32],
    tlen: NDArray[np.int8],
    tcount: NDArray[np.int32],
    tslot: NDArray[np.int32],
    index: NDArray[np.int32],
    meta: NDArray[np.int64],
    post: NDArray[np.int64],
    pstart: NDArray[np.int64],
    plen: NDArray[np.int64],
    support1: NDArray[np.int64],
    qsize: NDArray[np.bool_],
    cur: NDArray[np.int32],
    idx: NDArray[np.int64],
    buf: NDArray[np.int32],
    capacity: int,
) -> int:
    """Person suppression in one open class (§3.2 step 5): remove every failing person,
    recount (removing persons lowers the others' counts), until none fails."""
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
        _close_class(c0, c1, order, offsets, feats, tslot, index, meta, pstart, plen, support1)
        _open_class(
            c0, c1, p, order, offsets, feats, removed, alive, slot_person, kk,
            items, tlen, tcount, tslot, index, meta, post, pstart, plen, support1, qsize,
            cur, idx, buf, capacity,
        )
