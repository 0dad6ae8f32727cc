"""The entry points for a node: the working arrays sized for its largest class, the strict
per-person counts (:func:`person_counts`) and the evaluation with suppression
(:func:`evaluate`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from apps.engine.longitudinal.kernels.classes import _close_class, _open_class
from apps.engine.longitudinal.kernels.common import (
    DECIDED_EARLY,
    EVENTS_SUPPRESSED,
    I32,
    I64,
    PASSES,
    PERSONS_SUPPRESSED,
    STATS,
    STEPS,
    TRUNCATED,
    Data,
    Flags,
    Posting,
    Scratch,
    State,
    Table,
    _bound,
)
from apps.engine.longitudinal.kernels.rare import cannot_fit
from apps.engine.longitudinal.kernels.suppression import _event_phase, _merge, _person_phase

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
                # at least one event of its own, except under complete knowledge (p = 0),
                # where others losing features can make their sets equal to its own
                costs[failing] = rare if p == 0 else max(rare, np.int64(1))
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
