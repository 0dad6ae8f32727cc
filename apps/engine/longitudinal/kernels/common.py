"""The kernels' shared parts: the statistics slots, the array tuples (the package's docstring
says what each holds), subset counting and hashing, the regrouping of a node's features, and
the open-addressing hash table of a class's subsets.
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
