"""Compiled exact counting of per-person counts, with event and person suppression (numba).

Per person-level class, independently (LONGITUDINAL.md §4 "Equivalence": the strict
check is k^m-anonymity with m = p inside each class):

* **power p**: every person ``j`` with ``|F_j| >= p`` adds each of its p-subsets to a hash
  table (open addressing over the exact item tuples: equal hashes are compared item by
  item), counting how many persons hold it; that count is ``m(S)`` for every p-subset
  (superset rule). A person with ``0 < |F_i| < p`` asks for its whole set, whose support
  is counted on the class's posting lists (persons holding each feature) from its rarest
  feature. ``k_i`` = the least count over its ``s_i``-subsets; ``|F_i| = 0`` gives the
  class size.
* **complete knowledge** ("all", ``p = 0`` here): ``k_i`` = persons of the class whose set
  equals ``F_i``: sets are hashed and equal hashes compared item by item.

Suppression (LONGITUDINAL.md §3.2 steps 4-5, :func:`evaluate`): persons failing ``k`` in
id order lose, one step at a time, the feature with the smallest support in their class
(ties: the smallest feature id = smallest value) and every event carrying it; the counts
of the class are updated incrementally (a removed feature lowers only the subsets that
contain it, held by the persons of its posting list). The steps follow global id order
(the first failing person of the whole data set next) and stop at the first step that
would exceed the event budget: classes are run on their own and their steps merged by
person id afterwards (:func:`_merge`), which gives the same order, and a class cut short
is replayed up to its share. Then every still failing person is removed whole and the
class recounted, until none fails; the node passes when the removed persons are within
the person budget. A class smaller than ``k`` is removed whole at once (no event
suppression can help it).

The arrays travel in tuples: ``data`` = (order, position, offsets, feats, events,
slot_person) describes the node (persons class by class; person ``i``'s features
``feats[offsets[i]:offsets[i+1]]`` ascending, with their events; the person of each slot);
``state`` = (removed slots, alive persons, counts); ``table`` = (rec, tslot, index,
meta): entry ``e`` is the record ``rec[e*w:(e+1)*w]`` = (size t, count, t items), ``tslot[e]``
its index slot, ``index[s]`` = (hash's high bits << 32 | entry + 1), 0 when empty, and
``meta`` = [entries, mask, index capacity, w = p + 2]; ``posting`` =
(post, pstart, plen, support1, qsize) for the open class; ``scratch`` = (cur, rest, idx,
buf).

Every function here is checked against the plain-Python definitions of ``formulas.py``
and of LONGITUDINAL.md §3.2 on random data (tests/engine/longitudinal/test_properties.py).
Compiled code is cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

# Slots of the statistics array returned by :func:`evaluate`.
EVENTS_SUPPRESSED, PERSONS_SUPPRESSED, PASSES, DECIDED_EARLY, STEPS, TRUNCATED = range(6)
STATS = 6
_SATURATE = np.int64(1) << np.int64(62)
_LARGE = np.int64(1) << np.int64(40)

I64 = NDArray[np.int64]
I32 = NDArray[np.int32]
Flags = NDArray[np.bool_]
Data = tuple[I64, I64, I64, I32, I64, I64]
State = tuple[Flags, Flags, I64]
Table = tuple[I32, I32, I64, I64]
Posting = tuple[I64, I64, I64, I64, Flags]
Scratch = tuple[I32, I32, I64, I32]


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
def subset_total(offsets: I64, power: int) -> np.int64:
    """``Σ_i binom(|F_i|, s_i)`` (formulas.subset_total): the work of an exact count."""
    total = np.int64(0)
    for i in range(len(offsets) - 1):
        n = offsets[i + 1] - offsets[i]
        total += np.int64(1) if power == 0 else _binom(n, min(power, n))
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
def _hash(buf: I32, t: int) -> np.uint64:
    h = np.uint64(t) * np.uint64(0x9E3779B97F4A7C15)
    for a in range(t):
        h = _mix(h ^ (np.uint64(buf[a]) + np.uint64(0x632BE59BD9B4E019)))
    return h


@njit(cache=True, nogil=True)
def _next_combination(idx: I64, t: int, n: int) -> bool:
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
def regroup(offsets: I64, base: I64, events: I64, of_base: I64) -> tuple[I64, I32, I64]:
    """Map each person's base features to node features; merge equal ones (summing
    their events) and sort them, person by person (insertion sort: lists are short)."""
    n = len(offsets) - 1
    out_off = np.zeros(n + 1, dtype=np.int64)
    out_feat = np.empty(len(base), dtype=np.int32)
    out_ev = np.empty(len(base), dtype=np.int64)
    w = 0
    for i in range(n):
        start = w
        for q in range(offsets[i], offsets[i + 1]):
            f = of_base[base[q]]
            ev = events[q]
            # insert f into out_feat[start:w], ascending, merging an equal feature
            x = w
            while x > start and out_feat[x - 1] > f:
                x -= 1
            if x > start and out_feat[x - 1] == f:
                out_ev[x - 1] += ev
                continue
            for y in range(w, x, -1):
                out_feat[y] = out_feat[y - 1]
                out_ev[y] = out_ev[y - 1]
            out_feat[x] = f
            out_ev[x] = ev
            w += 1
        out_off[i + 1] = w
    return out_off, out_feat[:w].copy(), out_ev[:w].copy()


# --------------------------------------------------------------------------- the hash table


_INITIAL_MASK = 1023  # a class's table starts at 1,024 slots and doubles as it fills
_LOW = np.int64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _find(buf: I32, t: int, table: Table) -> tuple[int, int]:
    """(entry of the t-subset buf[:t] or -1, its index slot). An index slot holds the
    hash's high 32 bits and entry + 1, so most probes need not read the record."""
    rec, _, index, meta = table
    mask, w = meta[1], meta[3]
    h = _hash(buf, t)
    mark = np.int64(h >> np.uint64(32))
    s = np.int64(h & np.uint64(mask))
    while True:
        v = index[s]
        if v == 0:
            return -1, int(s)
        if ((v >> 32) & _LOW) == mark:
            e = (v & _LOW) - 1
            base = e * w
            if rec[base] == t:
                same = True
                for a in range(t):
                    if rec[base + 2 + a] != buf[a]:
                        same = False
                        break
                if same:
                    return int(e), int(s)
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def _place(e: int, table: Table) -> None:
    """Put entry e into the index (after a growth)."""
    rec, tslot, index, meta = table
    w = meta[3]
    t = rec[e * w]
    h = np.uint64(t) * np.uint64(0x9E3779B97F4A7C15)
    for a in range(t):
        h = _mix(h ^ (np.uint64(rec[e * w + 2 + a]) + np.uint64(0x632BE59BD9B4E019)))
    s = np.int64(h & np.uint64(meta[1]))
    while index[s] != 0:
        s = (s + 1) & meta[1]
    index[s] = (np.int64(h >> np.uint64(32)) << 32) | np.int64(e + 1)
    tslot[e] = s


@njit(cache=True, nogil=True)
def _insert(buf: I32, t: int, table: Table) -> int:
    """Entry of the t-subset buf[:t], added with count 0 when new."""
    rec, tslot, index, meta = table
    e, s = _find(buf, t, table)
    if e >= 0:
        return e
    if 2 * (meta[0] + 1) > meta[1] + 1 and meta[1] + 1 < meta[2]:
        for old in range(meta[0]):  # grow: twice the slots, every entry placed again
            index[tslot[old]] = 0
        meta[1] = 2 * (meta[1] + 1) - 1
        for old in range(meta[0]):
            _place(old, table)
        e, s = _find(buf, t, table)
    e = int(meta[0])
    meta[0] += 1
    w = meta[3]
    base = e * w
    rec[base] = t
    rec[base + 1] = 0
    for a in range(t):
        rec[base + 2 + a] = buf[a]
    h = _hash(buf, t)
    index[s] = (np.int64(h >> np.uint64(32)) << 32) | np.int64(e + 1)
    tslot[e] = s
    return e


@njit(cache=True, nogil=True)
def _count(table: Table, e: int) -> int:
    return int(table[0][e * table[3][3] + 1])


@njit(cache=True, nogil=True)
def _add(table: Table, e: int, delta: int) -> None:
    table[0][e * table[3][3] + 1] += delta


@njit(cache=True, nogil=True)
def _bound(c0: int, c1: int, order: I64, offsets: I64, p: int) -> np.int64:
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


# --------------------------------------------------------------------------- persons' sets


@njit(cache=True, nogil=True)
def _gather(i: int, offsets: I64, feats: I32, removed: Flags, cur: I32) -> int:
    n = 0
    for s in range(offsets[i], offsets[i + 1]):
        if not removed[s]:
            cur[n] = feats[s]
            n += 1
    return n


@njit(cache=True, nogil=True)
def _has_feature(i: int, offsets: I64, removed: Flags) -> bool:
    # a loop, not any(): numba compiles no generator expression there
    for s in range(offsets[i], offsets[i + 1]):  # noqa: SIM110
        if not removed[s]:
            return True
    return False


@njit(cache=True, nogil=True)
def _slot_of(i: int, f: int, offsets: I64, feats: I32) -> int:
    lo, hi = offsets[i], offsets[i + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if feats[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    if lo < offsets[i + 1] and feats[lo] == f:
        return int(lo)
    return -1


@njit(cache=True, nogil=True)
def _query_support(cur: I32, n: int, data: Data, state: State, posting: Posting) -> int:
    """Live persons of the open class holding every feature of cur[:n] (n >= 1), scanned
    from the posting list of the rarest one."""
    _, _, offsets, feats, _, slot_person = data
    removed, alive, _ = state
    post, pstart, plen, support1, _ = posting
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
            if f != rare:
                slot = _slot_of(j, f, offsets, feats)
                if slot < 0 or removed[slot]:
                    ok = False
                    break
        if ok:
            count += 1
    return count


@njit(cache=True, nogil=True)
def _person_k(
    i: int, members: int, p: int, data: Data, state: State, table: Table, scratch: Scratch
) -> int:
    """k_i from the open class's table: the least count over i's p-subsets, its whole
    set's count when it has fewer than p features, the class size when none."""
    _, _, offsets, feats, _, _ = data
    removed = state[0]
    cur, _, idx, buf = scratch
    n = _gather(i, offsets, feats, removed, cur)
    if n == 0:
        return members
    if n < p:
        for a in range(n):
            buf[a] = cur[a]
        e, _ = _find(buf, n, table)
        return _count(table, e)
    best = int(_LARGE)
    for a in range(p):
        idx[a] = a
    while True:
        for a in range(p):
            buf[a] = cur[idx[a]]
        e, _ = _find(buf, p, table)
        best = min(best, _count(table, e))
        if not _next_combination(idx, p, n):
            break
    return int(best)


# --------------------------------------------------------------------------- one class


@njit(cache=True, nogil=True)
def _open_class(
    c0: int,
    c1: int,
    p: int,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
    capacity: int,
) -> int:
    """Count the class from scratch (live persons, unremoved slots); returns its members."""
    order, _, offsets, feats, _, _ = data
    removed, alive, kk = state
    meta = table[3]
    post, pstart, plen, support1, qsize = posting
    cur, _, idx, buf = scratch
    # posting lists, counted then filled in position order (no sort): the live slots of
    # feature f are post[pstart[f]:pstart[f] + plen[f]]
    members = 0
    m = 0
    for pos in range(c0, c1):
        i = order[pos]
        if not alive[i]:
            continue
        members += 1
        for s in range(offsets[i], offsets[i + 1]):
            if not removed[s]:
                plen[feats[s]] += 1
                m += 1
    for pos in range(c0, c1):  # starts: features in order of first appearance
        i = order[pos]
        if not alive[i]:
            continue
        for s in range(offsets[i], offsets[i + 1]):
            f = feats[s]
            if not removed[s] and support1[f] == 0 and plen[f] > 0:
                support1[f] = plen[f]  # marks f as placed
                pstart[f] = m - plen[f]
                m -= plen[f]
    for pos in range(c1 - 1, c0 - 1, -1):  # fill backwards: ascending positions in a list
        i = order[pos]
        if not alive[i]:
            continue
        for s in range(offsets[i + 1] - 1, offsets[i] - 1, -1):
            if not removed[s]:
                f = feats[s]
                plen[f] -= 1
                post[pstart[f] + plen[f]] = s
    for pos in range(c0, c1):
        i = order[pos]
        for s in range(offsets[i], offsets[i + 1]):
            plen[feats[s]] = support1[feats[s]]
    qsize[:] = False
    if p == 0:
        _count_all(c0, c1, data, state, scratch)
        return members
    meta[0] = 0
    meta[1] = min(_INITIAL_MASK, capacity - 1)
    # persons with equal sets are counted once, with their number as weight
    persons, group, sizes, rep, groups = _group_sets(c0, c1, data, state, scratch)
    for g in range(groups):  # p-subsets of every set of at least p features
        n = _gather(rep[g], offsets, feats, removed, cur)
        if n < p:
            continue
        for a in range(p):
            idx[a] = a
        while True:
            for a in range(p):
                buf[a] = cur[idx[a]]
            _add(table, _insert(buf, p, table), sizes[g])
            if not _next_combination(idx, p, n):
                break
    for g in range(groups):  # whole sets of fewer than p features
        n = _gather(rep[g], offsets, feats, removed, cur)
        if 0 < n < p:
            _query(cur, n, p, data, state, table, posting, scratch)
    count = np.empty(groups, dtype=np.int64)
    for g in range(groups):
        count[g] = _person_k(rep[g], members, p, data, state, table, scratch)
    for x in range(len(persons)):
        kk[persons[x]] = count[group[x]]
    return members


@njit(cache=True, nogil=True)
def _query(
    cur: I32,
    n: int,
    p: int,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
) -> None:
    """Store the support of the set cur[:n] (n < p) unless it is stored already."""
    buf = scratch[3]
    for a in range(n):
        buf[a] = cur[a]
    e, _ = _find(buf, n, table)
    if e >= 0:
        return
    support = _query_support(cur, n, data, state, posting)
    for a in range(n):
        buf[a] = cur[a]
    _add(table, _insert(buf, n, table), support)
    posting[4][n] = True


@njit(cache=True, nogil=True)
def _close_class(c0: int, c1: int, data: Data, table: Table, posting: Posting) -> None:
    order, _, offsets, feats, _, _ = data
    _, tslot, index, meta = table
    _, pstart, plen, support1, _ = posting
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
def _same_set(i: int, j: int, offsets: I64, feats: I32, removed: Flags, cur: I32) -> bool:
    n = _gather(i, offsets, feats, removed, cur)
    m = 0
    for s in range(offsets[j], offsets[j + 1]):
        if not removed[s]:
            if m >= n or feats[s] != cur[m]:
                return False
            m += 1
    return m == n


@njit(cache=True, nogil=True)
def _group_sets(
    c0: int, c1: int, data: Data, state: State, scratch: Scratch
) -> tuple[I64, I64, I64, I64, int]:
    """Live persons of the class grouped on their exact feature sets: (persons, group of
    each, group sizes, a person of each group, groups). Sets are hashed, and persons with
    equal hashes compared item by item."""
    order, _, offsets, feats, _, _ = data
    removed, alive, _ = state
    cur = scratch[0]
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
    rep = np.empty(live, dtype=np.int64)
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
                if _same_set(i, rep[g], offsets, feats, removed, cur):
                    found = g
                    break
            if found < 0:
                found = groups
                rep[groups] = i
                groups += 1
            group[perm[x]] = found
            sizes[found] += 1
        a = b
    return persons[:live], group, sizes, rep, groups


@njit(cache=True, nogil=True)
def _count_all(c0: int, c1: int, data: Data, state: State, scratch: Scratch) -> None:
    """Complete knowledge: k_i = live persons of the class with exactly F_i."""
    kk = state[2]
    persons, group, sizes, _, _ = _group_sets(c0, c1, data, state, scratch)
    for x in range(len(persons)):
        kk[persons[x]] = sizes[group[x]]


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


# --------------------------------------------------------------------------- entry points


@njit(cache=True, nogil=True)
def _capacity(order: I64, starts: I64, offsets: I64, p: int) -> np.int64:
    most = np.int64(1)
    for c in range(len(starts) - 1):
        most = max(most, _bound(starts[c], starts[c + 1], order, offsets, p))
    return most


def _workspace(
    order: I64, starts: I64, offsets: I64, features: int, p: int
) -> tuple[Table, Posting, Scratch, int]:
    """Working arrays sized for the largest class (their pages are touched only as used)."""
    sizes = np.diff(offsets)
    degree = max(int(sizes.max()) if len(sizes) else 0, 1)
    bound = int(_capacity(order, starts, offsets, p)) if p > 0 else 1
    capacity = 8
    while capacity < 2 * bound:
        capacity *= 2
    width = max(p, 1)
    table: Table = (
        np.zeros(bound * (width + 2), dtype=np.int32),
        np.zeros(bound, dtype=np.int32),
        np.zeros(capacity, dtype=np.int64),
        np.array([0, min(1023, capacity - 1), capacity, width + 2], dtype=np.int64),
    )
    posting: Posting = (
        np.zeros(max(int(offsets[-1]), 1), dtype=np.int64),
        np.zeros(max(features, 1), dtype=np.int64),
        np.zeros(max(features, 1), dtype=np.int64),
        np.zeros(max(features, 1), dtype=np.int64),
        np.zeros(width + 1, dtype=np.bool_),
    )
    scratch: Scratch = (
        np.zeros(degree, dtype=np.int32),
        np.zeros(degree, dtype=np.int32),
        np.zeros(width, dtype=np.int64),
        np.zeros(max(degree, width), dtype=np.int32),
    )
    return table, posting, scratch, capacity


def _node(order: I64, position: I64, offsets: I64, feats: I32, events: I64) -> tuple[Data, State]:
    persons = len(offsets) - 1
    slot_person = np.repeat(np.arange(persons, dtype=np.int64), np.diff(offsets))
    data: Data = (order, position, offsets, feats, events, slot_person)
    state: State = (
        np.zeros(len(feats), dtype=np.bool_),
        np.ones(persons, dtype=np.bool_),
        np.zeros(persons, dtype=np.int64),
    )
    return data, state


def person_counts(
    order: I64, starts: I64, offsets: I64, feats: I32, features: int, power: int
) -> I64:
    """Strict per-person counts ``k_i`` (power 0 = complete knowledge), no suppression."""
    position = np.zeros(len(order), dtype=np.int64)  # unused without suppression
    events = np.zeros(len(feats), dtype=np.int64)
    data, state = _node(order, position, offsets, feats, events)
    table, posting, scratch, capacity = _workspace(order, starts, offsets, features, power)
    _count_classes(starts, power, data, state, table, posting, scratch, capacity)
    return state[2]


@njit(cache=True, nogil=True)
def _count_classes(
    starts: I64,
    p: int,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
    capacity: int,
) -> None:
    order = data[0]
    kk = state[2]
    for c in range(len(starts) - 1):
        c0, c1 = starts[c], starts[c + 1]
        if c1 - c0 == 1:
            kk[order[c0]] = 1
            continue
        _open_class(c0, c1, p, data, state, table, posting, scratch, capacity)
        _close_class(c0, c1, data, table, posting)


def evaluate(
    order: I64,
    starts: I64,
    position: I64,
    offsets: I64,
    feats: I32,
    events: I64,
    features: int,
    power: int,
    k: int,
    event_budget: int,
    person_budget: int,
) -> tuple[I64, Flags, Flags, I64]:
    """Suppress events then persons until every live person has ``k_i >= k`` (§3.2).

    Returns (counts after suppression, live persons, removed feature slots, stats); with
    ``stats[DECIDED_EARLY] = 1`` the node was found failing before finishing (more
    failing persons than the two budgets can fix), and the other outputs are partial.
    """
    data, state = _node(order, position, offsets, feats, events)
    table, posting, scratch, capacity = _workspace(order, starts, offsets, features, power)
    stats = np.zeros(STATS, dtype=np.int64)
    budgets = np.array([k, event_budget, person_budget], dtype=np.int64)
    _evaluate(starts, power, budgets, data, state, table, posting, scratch, capacity, stats)
    removed, alive, kk = state
    return kk, alive, removed, stats


@njit(cache=True, nogil=True)
def _evaluate(
    starts: I64,
    p: int,
    budgets: I64,
    data: Data,
    state: State,
    table: Table,
    posting: Posting,
    scratch: Scratch,
    capacity: int,
    stats: I64,
) -> None:
    k, event_budget, person_budget = budgets[0], budgets[1], budgets[2]
    order = data[0]
    removed, alive, kk = state
    classes = len(starts) - 1
    slots = len(removed)
    # pass A records at most one step per slot, the replays as many again
    steps_out = (
        np.empty(2 * max(slots, 1), dtype=np.int64),
        np.empty(2 * max(slots, 1), dtype=np.int64),
        np.zeros(1, dtype=np.int64),
    )
    class_first = np.zeros(classes, dtype=np.int64)
    class_steps = np.zeros(classes, dtype=np.int64)
    class_removed = np.zeros(classes, dtype=np.int64)
    # pass 0: count every class once; a certain failure is decided before any suppression
    small = 0  # persons of classes smaller than k: removed whole
    costs = np.empty(len(order), dtype=np.int64)  # least events each failing person needs
    failing = 0
    _, _, offsets, feats, events, _ = data
    support1 = posting[3]
    for c in range(classes):
        c0, c1 = starts[c], starts[c + 1]
        members = c1 - c0
        if members < k:
            small += members
            continue
        if members == 1:
            kk[order[c0]] = 1
            continue
        _open_class(c0, c1, p, data, state, table, posting, scratch, capacity)
        for pos in range(c0, c1):
            i = order[pos]
            if kk[i] < k:
                # its features held by fewer than k persons must all go (rare_costs)
                rare = np.int64(0)
                for s in range(offsets[i], offsets[i + 1]):
                    if support1[feats[s]] < k:
                        rare += events[s]
                costs[failing] = max(rare, np.int64(1))
                failing += 1
        _close_class(c0, c1, data, table, posting)
    if cannot_fit(costs[:failing], small, event_budget, person_budget):
        stats[DECIDED_EARLY] = 1
        stats[PERSONS_SUPPRESSED] = small
        return
    # pass A: suppression in the classes with failing persons, each to its end
    for c in range(classes):
        c0, c1 = starts[c], starts[c + 1]
        members = c1 - c0
        if members < k:
            for pos in range(c0, c1):
                alive[order[pos]] = False
                kk[order[pos]] = members
            continue
        fails = False
        for pos in range(c0, c1):
            if kk[order[pos]] < k:
                fails = True
                break
        if not fails:
            continue
        _open_class(c0, c1, p, data, state, table, posting, scratch, capacity)
        class_first[c] = steps_out[2][0]
        class_steps[c] = _event_phase(
            c0, c1, members, k, p, -1, data, state, table, posting, scratch, steps_out
        )
        class_removed[c] = _person_phase(
            c0, c1, k, p, data, state, table, posting, scratch, capacity
        )
        _close_class(c0, c1, data, table, posting)
    total = np.int64(0)
    for w in range(steps_out[2][0]):
        total += steps_out[1][w]
    if total <= event_budget:
        stats[EVENTS_SUPPRESSED] = total
    else:
        stats[TRUNCATED] = 1
        allowed = np.zeros(classes, dtype=np.int64)
        stats[EVENTS_SUPPRESSED] = _merge(
            class_first, class_steps, steps_out[0], steps_out[1], event_budget, allowed
        )
        for c in range(classes):
            if allowed[c] >= class_steps[c]:
                continue
            # replay the class up to its share of the budget (global id order)
            c0, c1 = starts[c], starts[c + 1]
            for pos in range(c0, c1):
                i = order[pos]
                alive[i] = True
                for s in range(offsets[i], offsets[i + 1]):
                    removed[s] = False
            members = _open_class(c0, c1, p, data, state, table, posting, scratch, capacity)
            _event_phase(
                c0, c1, members, k, p, allowed[c], data, state, table, posting, scratch, steps_out
            )
            class_removed[c] = _person_phase(
                c0, c1, k, p, data, state, table, posting, scratch, capacity
            )
            _close_class(c0, c1, data, table, posting)
    removed_persons = small + class_removed.sum()
    stats[PERSONS_SUPPRESSED] = removed_persons
    stats[STEPS] = steps_out[2][0]
    stats[PASSES] = 1 if removed_persons <= person_budget else 0


# --------------------------------------------------------------------------- certain failures


@njit(cache=True, nogil=True)
def rare_costs(
    order: I64, starts: I64, offsets: I64, feats: I32, events: I64, features: int, k: int
) -> tuple[I64, int]:
    """Events each person must lose before it can meet ``k``, known without counting.

    A feature held by fewer than ``k`` persons of a class bounds the count of every
    person holding it (any subset containing it, or an equal set, is held by at most as
    many), and supports only fall while suppressing: so each such feature must lose all
    its events from that person, or the person goes. Returns, for the persons holding at
    least one such feature, the events of those features, and the persons of classes
    smaller than ``k`` (who can only go).
    """
    support = np.zeros(max(features, 1), dtype=np.int64)
    costs = np.empty(len(order), dtype=np.int64)
    found = 0
    small = 0
    for c in range(len(starts) - 1):
        c0, c1 = starts[c], starts[c + 1]
        if c1 - c0 < k:
            small += c1 - c0
            continue
        for pos in range(c0, c1):
            i = order[pos]
            for s in range(offsets[i], offsets[i + 1]):
                support[feats[s]] += 1
        for pos in range(c0, c1):
            i = order[pos]
            rare = np.int64(0)
            for s in range(offsets[i], offsets[i + 1]):
                if support[feats[s]] < k:
                    rare += events[s]
            if rare > 0:
                costs[found] = rare
                found += 1
        for pos in range(c0, c1):
            i = order[pos]
            for s in range(offsets[i], offsets[i + 1]):
                support[feats[s]] = 0
    return costs[:found].copy(), small


@njit(cache=True, nogil=True)
def cannot_fit(costs: I64, small: int, event_budget: int, person_budget: int) -> bool:
    """True when the persons that must lose ``costs`` events (or go) cannot all be served:
    the person budget left after the ``small`` persons goes to the most expensive ones,
    and the others' events exceed the event budget (the best any suppression can do)."""
    if small > person_budget:
        return True
    ordered = np.sort(costs)
    left = person_budget - small
    total = np.int64(0)
    for x in range(len(ordered) - left):  # all but the `left` most expensive
        total += ordered[x]
        if total > event_budget:
            return True
    return False
