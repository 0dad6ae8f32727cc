"""One class at a time: the persons' current sets, the posting lists, and the per-person
counts ``k_i`` of an open class (power p from its p-subsets, complete knowledge from equal
sets).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from apps.engine.longitudinal.kernels.common import (
    _INITIAL_MASK,
    _LARGE,
    I32,
    I64,
    Data,
    Flags,
    Posting,
    Scratch,
    State,
    Table,
    _add,
    _count,
    _find,
    _insert,
    _mix,
    _next_combination,
)

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
