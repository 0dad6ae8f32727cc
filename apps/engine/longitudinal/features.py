"""Features and person-level classes of a lattice node (LONGITUDINAL.md §1, §2.3).

An event's *feature* is the tuple of its generalized event-level values (tagged by its
table); a person's feature set ``F_i`` holds its distinct features (set semantics:
repeated events collapse). The data is reduced once to *base features* (distinct
level-0 tuples) and each person's distinct base features with their number of events
(:class:`BaseFeatures`); a node then maps base features to its features and regroups
each person's list (:func:`node_features`), never touching the events again.

Features are numbered in the order of their value tuples (table, then each QI's code in
natural label order), so a smaller feature id is a "smaller value" (§3.2 step 4).

Person-level classes (:func:`node_classes`) group persons on their generalized
person-level values; persons are listed class by class, in id order within a class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from apps.engine.longitudinal import kernels
from apps.engine.longitudinal.problem import LongitudinalProblem

I64 = NDArray[np.int64]
I32 = NDArray[np.int32]
_KEY_LIMIT = 1 << 62


def _group(
    columns: Sequence[NDArray[np.integer]], radix: Sequence[int], size: int
) -> tuple[I64, int]:
    """Group rows on their code tuple: each row's group id (in the order of the tuples,
    first column most significant) and the number of groups."""
    if not columns:
        return np.zeros(size, dtype=np.int64), 1 if size else 0
    span = 1
    for r in radix:
        span *= max(int(r), 1)
    if span < _KEY_LIMIT:
        key = np.zeros(size, dtype=np.int64)
        for codes, r in zip(columns, radix, strict=True):
            key *= max(int(r), 1)
            key += codes.astype(np.int64)
        uniq, inverse = np.unique(key, return_inverse=True)
        return inverse.astype(np.int64).reshape(-1), len(uniq)
    stacked = np.stack([c.astype(np.int64) for c in columns], axis=1)
    uniq_rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), len(uniq_rows)


@dataclass(frozen=True, eq=False)
class BaseFeatures:
    """Level-0 features and each person's distinct base features (CSR by person)."""

    table: I64  # per base feature: its event table
    first: I64  # per table: the first base feature id of the table (+ total at the end)
    codes: dict[int, I64]  # dimension index -> level-0 code of each base feature of its table
    offsets: I64  # persons + 1: person i's base features are [offsets[i], offsets[i+1])
    features: I64  # base feature ids, ascending within a person
    events: I64  # events of the person carrying that base feature
    events_of: I64  # per base feature: events carrying it (all persons)

    @property
    def count(self) -> int:
        return len(self.table)


def base_features(problem: LongitudinalProblem) -> BaseFeatures:
    """Reduce the events to base features once per problem."""
    n = problem.persons
    tables, firsts, codes_of = [], [0], {}
    event_feature: list[I64] = []
    for t, persons in enumerate(problem.event_persons):
        dims = problem.event_dimensions(t)
        size = len(persons)
        local, count = _group(
            [problem.dimensions[j].codes for j in dims],
            [problem.dimensions[j].lookup.size(0) for j in dims],
            size,
        )
        # representative event of every local feature -> its codes
        representative = np.zeros(count, dtype=np.int64)
        if size:
            representative[local[::-1]] = np.arange(size - 1, -1, -1, dtype=np.int64)
        for j in dims:
            codes_of[j] = problem.dimensions[j].codes[representative].astype(np.int64)
        event_feature.append(local + firsts[-1])
        tables.append(np.full(count, t, dtype=np.int64))
        firsts.append(firsts[-1] + count)
    total = firsts[-1]
    if event_feature:
        person = np.concatenate(problem.event_persons).astype(np.int64)
        feature = np.concatenate(event_feature)
    else:
        person = np.zeros(0, dtype=np.int64)
        feature = np.zeros(0, dtype=np.int64)
    pair, per_pair = np.unique(person * max(total, 1) + feature, return_counts=True)
    pair_person = pair // max(total, 1)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_person, minlength=n), out=offsets[1:])
    return BaseFeatures(
        table=np.concatenate(tables) if tables else np.zeros(0, dtype=np.int64),
        first=np.asarray(firsts, dtype=np.int64),
        codes=codes_of,
        offsets=offsets,
        features=(pair % max(total, 1)).astype(np.int64),
        events=per_pair.astype(np.int64),
        events_of=np.bincount(feature, minlength=total).astype(np.int64),
    )


@dataclass(frozen=True, eq=False)
class NodeFeatures:
    """Features of one node: each person's distinct features (CSR) with event counts."""

    levels: tuple[int, ...]  # levels of the event-level dimensions (problem order)
    count: int  # features at this node
    of_base: I64  # base feature -> node feature
    offsets: I64
    features: I32  # ascending within a person
    events: I64  # events of the person carrying that feature

    @property
    def nbytes(self) -> int:
        return int(
            self.of_base.nbytes + self.offsets.nbytes + self.features.nbytes + self.events.nbytes
        )

    @cached_property
    def sizes(self) -> I64:
        """|F_i| per person."""
        return np.diff(self.offsets)

    @cached_property
    def slot_person(self) -> I64:
        return np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int64), self.sizes)


def node_features(
    problem: LongitudinalProblem, base: BaseFeatures, levels: Sequence[int]
) -> NodeFeatures:
    """Map base features to the node's features (``levels`` = full level tuple)."""
    event_levels = tuple(levels[j] for j in problem.event_dimensions())
    of_base = np.zeros(base.count, dtype=np.int64)
    start = 0
    for t in range(len(problem.event_persons)):
        lo, hi = int(base.first[t]), int(base.first[t + 1])
        dims = problem.event_dimensions(t)
        columns = [problem.dimensions[j].lookup.maps[levels[j]][base.codes[j]] for j in dims]
        radix = [problem.dimensions[j].lookup.size(levels[j]) for j in dims]
        local, count = _group(columns, radix, hi - lo)
        of_base[lo:hi] = local + start
        start += count
    offsets, features, events = kernels.regroup(base.offsets, base.features, base.events, of_base)
    return NodeFeatures(event_levels, start, of_base, offsets, features, events)


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """Person-level classes of one node: persons listed class by class (id order inside)."""

    levels: tuple[int, ...]  # levels of the person-level dimensions
    class_of: I64  # per person
    order: I64  # persons, class by class
    starts: I64  # classes + 1: class c holds order[starts[c]:starts[c+1]]

    @property
    def classes(self) -> int:
        return len(self.starts) - 1

    @property
    def nbytes(self) -> int:
        return int(self.class_of.nbytes + self.order.nbytes + self.starts.nbytes) * 4 // 3

    @cached_property
    def position(self) -> I64:
        out = np.empty(len(self.order), dtype=np.int64)
        out[self.order] = np.arange(len(self.order), dtype=np.int64)
        return out

    @cached_property
    def sizes(self) -> I64:
        return np.diff(self.starts)


def node_classes(problem: LongitudinalProblem, levels: Sequence[int]) -> NodeClasses:
    dims = problem.person_dimensions()
    columns = [
        problem.dimensions[j].lookup.maps[levels[j]][problem.dimensions[j].codes] for j in dims
    ]
    radix = [problem.dimensions[j].lookup.size(levels[j]) for j in dims]
    class_of, count = _group(columns, radix, problem.persons)
    order = np.argsort(class_of, kind="stable").astype(np.int64)
    starts = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(class_of, minlength=count), out=starts[1:])
    return NodeClasses(tuple(levels[j] for j in dims), class_of, order, starts)
