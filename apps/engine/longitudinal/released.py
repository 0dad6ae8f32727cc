"""A node's figures as its release shows them (LONGITUDINAL.md §2.6, §2.7, §3.2 step 5).

Local event suppression (§3.2 step 4) works inside the person-level classes of the node,
counted on the input's events. A recipient reads three things off the released rows
themselves, so a suppressed event can change them: two derived person-level
quasi-identifiers, and whether the person is there at all.

* ``event_count``: a recipient counts a person's released rows; a person who lost events
  has a smaller count, whose code at the node's level (with the top-code) can differ and
  put the person in another class;
* the ``anchor`` of **shifted** dates: the release writes each date shifted, so the
  anchor a recipient sees is the first *released* date and every interval is counted
  from it; a person whose first dated event was suppressed shows another anchor and other
  intervals. Decision: such a person is removed whole (its events' intervals would all
  move; removing it is what the release can show consistently). Without a shift the
  release writes the anchor in a column of its own (the input's first date), which
  suppression does not change.
* the person itself: a person whose every event was suppressed has no row left, in the
  long table or in the linked tables written again from it (their person table holds the
  persons with a released row): a recipient does not receive it. Decision: it is
  suppressed, counted against the person budget like any removed person, in the search's
  figures as in the release. A person without any event in the input (a person table's
  row, LONGITUDINAL.md TC9) has nothing to lose and is released with the count 0.

:func:`settle` makes the node's outcome that of the released data: after the kernel's
event and person phases it recomputes each kept person's released event count (and its
code at the node's level), removes the persons left without events and those whose
anchor would move, regroups the kept persons on their released person-level values,
recounts the classes whose persons changed (a person moved in or out, or removed; the
kernel's counts hold in the others, whose kept persons all passed), and removes
still-failing persons whole, recounting the classes that lost one until none fails
(removing persons shrinks classes). Removing persons whole never changes another
person's derived values, so this reaches a fixed point. The removed persons count
against the person budget; the events spent by event suppression stay as the kernel
counted them (the event budget's count), and a removed person's other events are the
events of suppressed persons, so every suppressed event is counted once.

The search's pruning is unaffected: settling only removes persons, so a failure the
kernel decides early stays a failure, and a removed person costs at least what a
released one does, so the loss stays at least its lower bound. The event count's loss
keeps each kept person's input count (its suppressed events already cost in the
event-level dimensions), which keeps that bound.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from apps.engine.longitudinal import kernels
from apps.engine.longitudinal.features import BaseFeatures, NodeClasses, NodeFeatures, _group
from apps.engine.longitudinal.formulas import event_count_label
from apps.engine.longitudinal.problem import LongitudinalProblem

I64 = NDArray[np.int64]
Flags = NDArray[np.bool_]


def _built_in(problem: LongitudinalProblem, j: int) -> bool:
    """Whether the event count's levels are the built-in ranges (with the problem's
    top-code) rather than a given hierarchy's."""
    d = problem.dimensions[j]
    top = problem.event_count_top
    if d.height != 3:
        return False
    for code, label in enumerate(d.lookup.labels[0]):
        if label is None or not label.rstrip("+").isdigit():
            return False
        count = int(label.rstrip("+"))
        for level in range(d.height + 1):
            if d.lookup.labels[level][d.lookup.maps[level][code]] != event_count_label(
                count, level, top
            ):
                return False
    return True


def _count_codes(
    problem: LongitudinalProblem, j: int, level: int, counts: I64, persons: I64
) -> I64:
    """Code at ``level`` of each listed person's released event count: the built-in
    range's label at that level (top-coded), or a given hierarchy's code for the count;
    a new code (beyond the level's range, one per distinct label) where the level has no
    such label."""
    d = problem.dimensions[j]
    top = problem.event_count_top
    built_in = _built_in(problem, j)
    index = {label: c for c, label in enumerate(d.lookup.labels[level])}
    level0 = {label: c for c, label in enumerate(d.lookup.labels[0])}
    fresh: dict[str, int] = {}
    distinct, inverse = np.unique(counts[persons], return_inverse=True)
    codes = np.empty(len(distinct), dtype=np.int64)
    for n, count in enumerate(distinct.tolist()):
        code: int | None
        if built_in:
            label = event_count_label(int(count), level, top)
            code = index.get(label)
        else:  # a given hierarchy over the exact counts
            label = str(int(count))
            base = level0.get(label)
            code = None if base is None else int(d.lookup.maps[level][base])
        if code is None:
            code = d.lookup.size(level) + fresh.setdefault(label, len(fresh))
        codes[n] = code
    out: I64 = codes[inverse.reshape(-1)]
    return out


def _lost_anchor(
    problem: LongitudinalProblem,
    base: BaseFeatures,
    features: NodeFeatures,
    alive: Flags,
    removed: Flags,
) -> Flags:
    """Kept persons whose first dated event was suppressed (shifted dates only)."""
    lost = np.zeros(problem.persons, dtype=np.bool_)
    if problem.dates is None or problem.dates.shift_days is None:
        return lost
    first = np.zeros(base.count, dtype=np.bool_)  # base features dated on the anchor
    for j, d in enumerate(problem.dimensions):
        if d.kind == "interval":
            lo = int(base.first[d.table])
            zero = np.asarray([label == "0" for label in d.lookup.labels[0]], dtype=np.bool_)
            first[lo : lo + len(base.codes[j])] |= zero[base.codes[j]]
    pair_person = np.repeat(np.arange(problem.persons, dtype=np.int64), np.diff(base.offsets))
    on_anchor = first[base.features]
    if not on_anchor.any():
        return lost
    person = pair_person[on_anchor]
    feature = features.of_base[base.features[on_anchor]]
    width = max(features.count, 1)
    slot_keys = features.slot_person * width + features.features.astype(np.int64)
    slot = np.searchsorted(slot_keys, person * width + feature)
    had = np.zeros(problem.persons, dtype=np.bool_)
    had[person] = True
    keeps = np.zeros(problem.persons, dtype=np.bool_)
    keeps[person[~removed[slot]]] = True
    lost[:] = alive & had & ~keeps
    return lost


def _recount(
    features: NodeFeatures,
    offsets: I64,
    feats: NDArray[np.int32],
    power: int,
    class_of: I64,
    persons: I64,
    kk: I64,
) -> None:
    """Strict counts of the listed persons (every live person of their classes), on the
    kept features, into ``kk``."""
    order = persons[np.argsort(class_of[persons], kind="stable")].astype(np.int64)
    _, first = np.unique(class_of[order], return_index=True)
    starts = np.append(first, len(order)).astype(np.int64)
    counted = kernels.person_counts(order, starts, offsets, feats, features.count, power)
    kk[order] = counted[order]


def settle(
    problem: LongitudinalProblem,
    base: BaseFeatures,
    levels: tuple[int, ...],
    classes: NodeClasses,
    features: NodeFeatures,
    power: int,
    k: int,
    kk: I64,
    alive: Flags,
    removed: Flags,
    stats: I64,
    person_budget: int,
) -> None:
    """Bring the kernel's outcome (``kk``, ``alive``, ``stats``, changed in place) to the
    released data (module docstring)."""
    if stats[kernels.DECIDED_EARLY]:
        return
    kept_slot = ~removed & alive[features.slot_person]
    losing = np.unique(features.slot_person[removed & alive[features.slot_person]])
    if not len(losing):
        return  # no kept person lost an event: nothing derived changed
    counts = np.bincount(
        features.slot_person[kept_slot],
        weights=features.events[kept_slot],
        minlength=problem.persons,
    ).astype(np.int64)
    # a person who had events and has none left has no row in the release
    emptied = alive & (features.sizes > 0) & (counts == 0)
    gone = emptied | _lost_anchor(problem, base, features, alive, removed)
    moved = np.zeros(problem.persons, dtype=np.bool_)  # released count read another way
    columns: list[I64] = []
    radix: list[int] = []
    for j in problem.person_dimensions():
        d = problem.dimensions[j]
        codes = d.lookup.maps[levels[j]][d.codes].astype(np.int64)
        if d.kind == "event_count":
            released = codes.copy()
            # only a kept person who lost events has another count than the input's
            released[losing] = _count_codes(problem, j, levels[j], counts, losing)
            moved |= released != codes
            codes = released
        columns.append(codes)
        radix.append(int(codes.max()) + 1 if len(codes) else 1)
    if not (gone.any() or moved.any()):
        return
    alive &= ~gone
    class_of, groups = _group(columns, radix, problem.persons)
    offsets = np.zeros(problem.persons + 1, dtype=np.int64)
    np.cumsum(
        np.bincount(features.slot_person[kept_slot], minlength=problem.persons), out=offsets[1:]
    )
    feats = features.features[kept_slot]  # person by person, ascending within each
    # The kernel's counts hold in a class whose live persons are those of a kernel class:
    # recount the classes a person moved into, or out of (or left), then those that lost
    # a failing person, until none fails (kept persons passed in the kernel).
    left = np.zeros(classes.classes, dtype=np.bool_)
    left[classes.class_of[moved | gone]] = True
    dirty = np.zeros(groups, dtype=np.bool_)
    dirty[class_of[alive & (moved | left[classes.class_of])]] = True
    while True:
        recount = np.flatnonzero(alive & dirty[class_of])
        if not len(recount):
            break
        _recount(features, offsets, feats, power, class_of, recount, kk)
        failing = recount[kk[recount] < k]
        if not len(failing):
            break
        alive[failing] = False
        dirty[:] = False
        dirty[class_of[failing]] = True
    removed_persons = int((~alive).sum())
    stats[kernels.PERSONS_SUPPRESSED] = removed_persons
    stats[kernels.PASSES] = 1 if removed_persons <= person_budget else 0
