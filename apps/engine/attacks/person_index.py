"""Coding a person release for the attacks in persons (persons.py): both data's values
coded together, each person's distinct events (features) and sensitive values, and the
release indexed by person-level class and (class, feature) for the compiled kernel."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.attacks.person_kernel import score_targets
from apps.engine.errors import EngineInputError, preview
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.longitudinal.formulas import ALL, Power

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: Known-event sets per target: all of them up to this many, else this many at random.
MAX_KNOWN_SETS = 64
PERSON_ID = "__person_id"

# --------------------------------------------------------------------------- encoding


def codes(*series: pl.Series) -> list[I64]:
    """The values of several series coded together (equal text, equal code; missing its
    own code)."""
    joined = pl.concat([s.cast(pl.String).fill_null("\x00") for s in series]).alias("v")
    physical = joined.cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()
    codes = unique_inverse(physical)[1]
    out, at = [], 0
    for s in series:
        out.append(codes[at : at + s.len()])
        at += s.len()
    return out


def unique_inverse(values: I64) -> tuple[I64, I64]:
    """The distinct values (ascending) and each value's index among them (a sort: far
    faster than ``np.unique`` on millions of integers)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.ones(ordered.size, dtype=np.bool_)
    new[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def sorted_unique(values: I64) -> I64:
    ordered = np.sort(values)
    new = np.ones(ordered.size, dtype=np.bool_)
    new[1:] = ordered[1:] != ordered[:-1]
    return ordered[new]


def _tuples(columns: Sequence[I64], size: int) -> I64:
    """Each row's group on its code tuple (columns folded in one at a time)."""
    group = np.zeros(size, dtype=np.int64)
    for column in columns:
        column = np.asarray(column, dtype=np.int64)
        radix = int(column.max()) + 1 if column.size else 1
        group = unique_inverse(group * radix + column)[1]
    return group


def csr(owner: I64, item: I64, owners: int, width: int) -> tuple[I64, I64]:
    """Distinct items of each owner, ascending (CSR)."""
    pair = sorted_unique(owner * max(width, 1) + item)
    offsets = np.zeros(owners + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair // max(width, 1), minlength=owners), out=offsets[1:])
    return offsets, (pair % max(width, 1)).astype(np.int64)


def _features(seen: LongitudinalData, released: LongitudinalData) -> tuple[I64, I64, I64, I64, int]:
    """Each person's distinct features (an event's table and values) in both data, coded
    together: (seen offsets, seen features, released offsets, released features, count)."""
    by_name = {t.name: t for t in released.tables}
    unknown = [t.name for t in released.tables if t.name not in {s.name for s in seen.tables}]
    if unknown:
        raise EngineInputError(f"the release has event table(s) {preview(unknown)} not in the data")
    owners, items, sides = [], [], []
    first = 0
    for table in seen.tables:
        other = by_name.get(table.name)
        if other is not None and tuple(other.quasi) != tuple(table.quasi):
            raise EngineInputError(f"event table {table.name!r} has other columns in the release")
        parts = [table.values] + ([other.values] if other is not None else [])
        persons = [table.person_index] + ([other.person_index] if other is not None else [])
        columns = [codes(*[p.get_column(q) for p in parts]) for q in table.quasi]
        size = sum(len(p) for p in persons)
        tuples = _tuples([np.concatenate(c) for c in columns], size)
        count = int(tuples.max()) + 1 if size else 0
        for which, (p, start) in enumerate(zip(persons, (0, table.events), strict=False)):
            owners.append(np.asarray(p, dtype=np.int64))
            items.append(tuples[start : start + len(p)] + first)
            sides.append(np.full(len(p), which, dtype=np.int64))
        first += count
    empty = np.zeros(0, dtype=np.int64)
    owner: I64 = np.concatenate(owners) if owners else empty
    item: I64 = np.concatenate(items) if items else empty
    side: I64 = np.concatenate(sides) if sides else empty
    s_off, s_feat = csr(owner[side == 0], item[side == 0], seen.persons, first)
    r_off, r_feat = csr(owner[side == 1], item[side == 1], released.persons, first)
    return s_off, s_feat, r_off, r_feat, first


def values(frame: pl.DataFrame | None, ids: pl.Series, column: str, coded: I64) -> tuple[I64, I64]:
    """Each person's distinct sensitive values (CSR, id order), from rows of the person."""
    if frame is None or frame.height == 0:
        return np.zeros(ids.len() + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    index = pl.DataFrame({PERSON_ID: ids, "__i": np.arange(ids.len(), dtype=np.int64)})
    rows = (
        pl.DataFrame({PERSON_ID: frame.get_column(PERSON_ID).cast(pl.String), "__v": coded})
        .filter(frame.get_column(column).is_not_null())
        .join(index, on=PERSON_ID, how="inner")
    )
    width = int(coded.max()) + 1 if coded.size else 1
    return csr(rows["__i"].to_numpy(), rows["__v"].to_numpy(), ids.len(), width)


def known_sets(
    offsets: I64, features: I64, targets: I64, power: Power, rng: np.random.Generator
) -> tuple[I64, I64, I64]:
    """Per target, the sets of events the adversary may know (module docstring)."""
    known, item_offsets, items = [0], [0], []
    for i in targets.tolist():
        own = features[offsets[i] : offsets[i + 1]]
        s = own.size if power == ALL else min(int(power), own.size)
        if math.comb(own.size, s) <= MAX_KNOWN_SETS:
            chosen = [list(c) for c in itertools.combinations(own.tolist(), s)]
        else:
            chosen = [
                sorted(own[rng.choice(own.size, size=s, replace=False)].tolist())
                for _ in range(MAX_KNOWN_SETS)
            ]
        for c in chosen:
            items.extend(c)
            item_offsets.append(len(items))
        known.append(len(item_offsets) - 1)
    return (
        np.asarray(known, dtype=np.int64),
        np.asarray(item_offsets, dtype=np.int64),
        np.asarray(items, dtype=np.int64),
    )


@dataclass(frozen=True, eq=False)
class Coded:
    """Both data coded together, and the release indexed for the kernel."""

    seen_codes: I64  # seen persons x person-level QIs
    seen_class: I64  # per seen person: the released class with their values, or -1
    seen_own: I64  # per seen person: their released person, or -1
    seen_offsets: I64
    seen_features: I64
    class_starts: I64
    class_members: I64
    class_codes: I64
    post_keys: I64
    post_starts: I64
    post_persons: I64
    n_features: int
    released_offsets: I64
    released_features: I64
    released_class: I64
    released_codes: I64


def code(seen: LongitudinalData, released: LongitudinalData) -> Coded:
    if tuple(seen.person_quasi) != tuple(released.person_quasi):
        raise EngineInputError("the release has other person-level columns than the data")
    n, m = seen.persons, released.persons
    columns = [
        codes(seen.person_values.get_column(q), released.person_values.get_column(q))
        for q in seen.person_quasi
    ]
    width = len(columns)
    both = (
        np.stack([np.concatenate(c) for c in columns], axis=1)
        if columns
        else np.zeros((n + m, 0), dtype=np.int64)
    )
    group = _tuples([both[:, q] for q in range(width)], n + m)
    released_group = group[n:]
    distinct, released_class = unique_inverse(released_group)
    class_of_group = np.full(int(group.max()) + 1 if group.size else 1, -1, dtype=np.int64)
    class_of_group[distinct] = np.arange(distinct.size, dtype=np.int64)
    seen_class = class_of_group[group[:n]]
    class_members = np.argsort(released_class, kind="stable").astype(np.int64)
    class_starts = np.zeros(distinct.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(released_class, minlength=distinct.size), out=class_starts[1:])
    class_codes = np.zeros((distinct.size, width), dtype=np.int64)
    class_codes[released_class] = both[n:]
    s_off, s_feat, r_off, r_feat, n_features = _features(seen, released)
    person = np.repeat(np.arange(m, dtype=np.int64), np.diff(r_off))
    keys = released_class[person] * max(n_features, 1) + r_feat
    order = np.argsort(keys, kind="stable")  # persons ascending within a key
    keys, person = keys[order], person[order]
    starts_at = np.ones(keys.size, dtype=np.bool_)
    starts_at[1:] = keys[1:] != keys[:-1]
    first = np.flatnonzero(starts_at)
    post_keys = keys[first]
    post_starts = np.append(first, keys.size).astype(np.int64)
    own = (
        pl.DataFrame({PERSON_ID: seen.ids.cast(pl.String)})
        .join(
            pl.DataFrame(
                {PERSON_ID: released.ids.cast(pl.String), "__j": np.arange(m, dtype=np.int64)}
            ),
            on=PERSON_ID,
            how="left",
            maintain_order="left",
        )
        .get_column("__j")
        .fill_null(-1)
        .to_numpy()
        .astype(np.int64)
    )
    return Coded(
        seen_codes=both[:n],
        seen_class=seen_class,
        seen_own=own,
        seen_offsets=s_off,
        seen_features=s_feat,
        class_starts=class_starts,
        class_members=class_members,
        class_codes=class_codes,
        post_keys=post_keys.astype(np.int64),
        post_starts=post_starts,
        post_persons=person.astype(np.int64),
        n_features=n_features,
        released_offsets=r_off,
        released_features=r_feat,
        released_class=released_class,
        released_codes=both[n:],
    )


def run(
    coded: Coded,
    *,
    target_class: I64,
    target_codes: I64,
    target_own: I64,
    target_leave: NDArray[np.bool_],
    known: tuple[I64, I64, I64],
    sensitive: tuple[I64, I64, int, I64, I64, F64] | None = None,
) -> tuple[F64, F64, F64, F64]:
    if sensitive is None:
        empty = np.zeros(0, dtype=np.int64)
        zeros = np.zeros(target_class.size + 1, dtype=np.int64)
        sensitive = (
            np.zeros(coded.class_members.size + 1, dtype=np.int64),
            empty,
            0,
            zeros,
            empty,
            np.zeros(1),
        )
    v_off, vals, n_values, t_off, truths, fallback = sensitive
    return score_targets(  # type: ignore[no-any-return]
        coded.class_starts,
        coded.class_members,
        coded.class_codes,
        coded.post_keys,
        coded.post_starts,
        coded.post_persons,
        coded.n_features,
        target_class,
        target_codes,
        target_own,
        target_leave,
        known[0],
        known[1],
        known[2],
        v_off,
        vals,
        n_values,
        t_off,
        truths,
        fallback,
    )
