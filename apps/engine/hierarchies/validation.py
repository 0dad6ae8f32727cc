"""Consistency checks of a generalization hierarchy (Step 7.2).

A hierarchy is usable for global recoding if (1) every leaf appears once and
(2) each level is a function of the level below it (one value at level L never
maps to two values at level L+1, otherwise the lattice node would not define one
generalized value per original value).  Each check names the offending values.

Labels are opaque text, as in ARX: a hierarchy is a functional mapping, so an
imported group label "4-7" next to "4-6" is two distinct groups, not two
overlapping ranges.  The groups of a global recoding are disjoint by (1) and (2)
whatever the labels say (seed 000 step 7.2).  Interval semantics belong only to
hierarchies the interval builder made: it checks its own labels with
`check_intervals`, a guard against a builder bug, never applied to imports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from apps.engine.errors import HierarchyError, preview

Rows = Sequence[Sequence[str]]

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")
_HALF_OPEN = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*[\[)]\s*$")
_CLOSED = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]\s*$")
_BELOW = re.compile(rf"^\s*<\s*({_NUMBER})\s*$")
_AT_LEAST = re.compile(rf"^\s*(?:>=|≥)\s*({_NUMBER})\s*$|^\s*({_NUMBER})\s*\+\s*$")


@dataclass(frozen=True)
class Interval:
    """A numeric interval read from a label; `high_closed` tells if `high` belongs to it."""

    label: str
    low: float
    high: float
    high_closed: bool

    def overlaps(self, other: Interval) -> bool:
        first, second = (self, other) if self.low <= other.low else (other, self)
        if second.low < first.high:
            return True
        return second.low == first.high and first.high_closed


def parse_interval(label: str) -> Interval | None:
    """Read "20-24" (integers: both ends included), "[20, 25[", "[20, 25]", "<18", "90+", ">=90".

    Returns None for labels that are not intervals, and for "a-b" with a > b
    (such as a month "2020-03"), which is a date rather than an interval.
    """
    if match := _RANGE.match(label):
        low, high = float(match[1]), float(match[2])
        if low > high:
            return None
        return Interval(label, low, high, high_closed=True)
    if match := _HALF_OPEN.match(label):
        return Interval(label, float(match[1]), float(match[2]), high_closed=False)
    if match := _CLOSED.match(label):
        return Interval(label, float(match[1]), float(match[2]), high_closed=True)
    if match := _BELOW.match(label):
        return Interval(label, -math.inf, float(match[1]), high_closed=False)
    if match := _AT_LEAST.match(label):
        return Interval(label, float(match[1] or match[2]), math.inf, high_closed=True)
    return None


def check_shape(column: str, rows: Rows) -> None:
    """Rows exist, have the same length and no empty leaf."""
    if not rows:
        raise HierarchyError(f"hierarchy of {column!r} has no rows")
    width = len(rows[0])
    if width < 1:
        raise HierarchyError(f"hierarchy of {column!r}: row 1 is empty")
    for number, row in enumerate(rows, start=1):
        if len(row) != width:
            raise HierarchyError(
                f"hierarchy of {column!r}: row {number} has {len(row)} values, "
                f"expected {width} like row 1"
            )


def check_unique_leaves(column: str, rows: Rows) -> None:
    seen: set[str] = set()
    repeated: list[str] = []
    for row in rows:
        if row[0] in seen and row[0] not in repeated:
            repeated.append(row[0])
        seen.add(row[0])
    if repeated:
        raise HierarchyError(f"hierarchy of {column!r} lists a value twice: {preview(repeated)}")


def check_functional(column: str, rows: Rows) -> None:
    """Each value at level L has exactly one parent at level L+1."""
    height = len(rows[0]) - 1
    for level in range(1, height):
        parent: dict[str, str] = {}
        conflicts: list[str] = []
        for row in rows:
            value, up = row[level], row[level + 1]
            known = parent.setdefault(value, up)
            if known != up:
                conflicts.append(f"{value!r} -> {known!r} and {up!r}")
                parent[value] = up  # report each further conflicting parent once
        if conflicts:
            raise HierarchyError(
                f"hierarchy of {column!r}: level {level + 1} is not a function of level "
                f"{level}: {'; '.join(conflicts[:10])}"
                + (f" ({len(conflicts)} conflicts)" if len(conflicts) > 10 else "")
            )


def check_generalizes(column: str, rows: Rows) -> None:
    """A label stands for the same values, or more, at every level it appears on.

    A leaf is the label of itself at level 0.  Once each level is a function of the one
    below (check_functional), the values under label X at one level all sit in one group at
    any higher level; if X is also a label there, that group must be X.  Otherwise the
    "hierarchy" exchanges values instead of grouping them: A -> B and B -> A at level 1 is a
    function, yet it releases every A as B, a falsified record rather than a generalized one.
    """
    height = len(rows[0]) - 1
    # For each label: one row under it, at the lowest level the label appears on.
    witness: dict[str, int] = {row[0]: number for number, row in enumerate(rows)}
    for level in range(1, height + 1):
        under = {row[level]: number for number, row in enumerate(rows)}
        turned = sorted(
            (witness[label], label, number)
            for label, number in under.items()
            if label in witness and rows[witness[label]][level] != label
        )
        if turned:
            listed = "; ".join(
                f"{label!r} into {rows[kept][level]!r} but {rows[number][level - 1]!r} into "
                f"{label!r}"
                for kept, label, number in turned[:10]
            )
            raise HierarchyError(
                f"hierarchy of {column!r}: level {level} turns {listed}"
                + (f" ({len(turned)} in all)" if len(turned) > 10 else "")
                + ": a hierarchy may group values, not exchange them"
            )
        for label, number in under.items():
            witness.setdefault(label, number)


def check_intervals(column: str, rows: Rows) -> None:
    """At each level above the leaves, no two distinct interval labels overlap.

    Only for hierarchies whose labels the interval builder wrote as intervals.
    """
    height = len(rows[0]) - 1
    for level in range(1, height + 1):
        labels = list(dict.fromkeys(row[level] for row in rows))
        intervals = [i for i in map(parse_interval, labels) if i is not None]
        overlapping = overlapping_intervals(intervals)
        if overlapping:
            pairs = "; ".join(f"{a.label!r} and {b.label!r}" for a, b in overlapping[:10])
            raise HierarchyError(
                f"hierarchy of {column!r}: overlapping intervals at level {level}: {pairs}"
            )


def overlapping_intervals(intervals: Sequence[Interval]) -> list[tuple[Interval, Interval]]:
    """Pairs of overlapping intervals (sweep over intervals sorted by their lower end)."""
    ordered = sorted(intervals, key=lambda i: (i.low, i.high))
    pairs: list[tuple[Interval, Interval]] = []
    reach: Interval | None = None  # the interval reaching furthest so far
    for interval in ordered:
        if reach is not None and interval.overlaps(reach):
            pairs.append((reach, interval))
        if reach is None or interval.high > reach.high:
            reach = interval
    return pairs


def validate_rows(column: str, rows: Rows) -> None:
    """The checks every hierarchy passes, in the order a user would fix them.

    No check reads meaning into labels (see the module docstring).
    """
    check_shape(column, rows)
    check_unique_leaves(column, rows)
    check_functional(column, rows)
    check_generalizes(column, rows)
