"""Builders of the hierarchy kinds of Step 7.2 (seed 000 step 7.2; PDPC 10 generalisation).

Each builder takes the column's distinct values (strings, as in a frame.py
dictionary; the missing value is ignored, it stays its own group) and returns a
validated Hierarchy whose last level is "*" unless `add_top=False`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime

from apps.engine.errors import HierarchyError, preview
from apps.engine.hierarchies.model import TOP, Hierarchy
from apps.engine.hierarchies.validation import check_intervals

DATE_LEVELS = ("month", "year", "5-year", "10-year")


def _distinct(values: Iterable[str | None]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v is not None]


def _with_top(rows: list[list[str]], add_top: bool) -> list[list[str]]:
    return [[*row, TOP] for row in rows] if add_top else rows


def suppression_hierarchy(column: str, values: Iterable[str | None]) -> Hierarchy:
    """Leaf → "*": the only generalization is suppressing the value altogether."""
    return Hierarchy(column, tuple((v, TOP) for v in _distinct(values)))


# --------------------------------------------------------------------------- intervals


def _number(text: float) -> str:
    return str(int(text)) if float(text).is_integer() else repr(float(text))


def interval_hierarchy(
    column: str,
    values: Iterable[str | None],
    widths: Sequence[float],
    *,
    anchor: float | None = None,
    bottom: float | None = None,
    top: float | None = None,
    bottom_label: str | None = None,
    top_label: str | None = None,
    add_top: bool = True,
) -> Hierarchy:
    """Numeric intervals, one width per level (e.g. ages by 5, 10, 20 years).

    Intervals start at `anchor` (default `bottom`, else 0).  Each width must be a
    multiple of the previous one so that every interval sits inside exactly one
    interval of the next level.  Values below `bottom` become `bottom_label`
    (default "<bottom") and values at or above `top` become `top_label` (default
    "top+") at every level: top/bottom coding such as ages 90+ (Portage, seed 004).
    Integer data gets labels "20-24" (both ends included), other data "[20, 25[".
    """
    leaves = _distinct(values)
    numbers = _parse_numbers(column, leaves)
    _check_widths(column, widths)
    if bottom is not None and top is not None and bottom >= top:
        raise HierarchyError(f"interval hierarchy of {column!r}: bottom must be below top")
    start = anchor if anchor is not None else (bottom if bottom is not None else 0.0)
    integral = all(float(x).is_integer() for x in [*numbers, *widths, start])
    low_code = bottom_label or (f"<{_number(bottom)}" if bottom is not None else "")
    high_code = top_label or (f"{_number(top)}+" if top is not None else "")

    def label(x: float, width: float) -> str:
        if bottom is not None and x < bottom:
            return low_code
        if top is not None and x >= top:
            return high_code
        low = start + math.floor((x - start) / width) * width
        high = low + width
        # Clip to the codes so that no interval overlaps "<bottom" or "top+".
        low = max(low, bottom) if bottom is not None else low
        high = min(high, top) if top is not None else high
        if integral:
            return f"{_number(low)}-{_number(high - 1)}"
        return f"[{_number(low)}, {_number(high)}["

    ordered = sorted(zip(numbers, leaves, strict=True))
    rows = [[leaf, *(label(x, w) for w in widths)] for x, leaf in ordered]
    hierarchy = Hierarchy(column, tuple(map(tuple, _with_top(rows, add_top))))
    # These labels are intervals by construction, so here (and only here) they must
    # not overlap, e.g. a custom bottom/top label that reads as a range inside the others.
    check_intervals(column, hierarchy.rows)
    return hierarchy


def _parse_numbers(column: str, leaves: Sequence[str]) -> list[float]:
    numbers: list[float] = []
    bad: list[str] = []
    for leaf in leaves:
        try:
            number = float(leaf)
        except ValueError:
            bad.append(leaf)
            continue
        if math.isfinite(number):
            numbers.append(number)
        else:
            bad.append(leaf)
    if bad:
        raise HierarchyError(f"interval hierarchy of {column!r}: not numbers: {preview(bad)}")
    return numbers


def _check_widths(column: str, widths: Sequence[float]) -> None:
    if not widths:
        raise HierarchyError(f"interval hierarchy of {column!r}: give at least one width")
    if any(w <= 0 for w in widths):
        raise HierarchyError(f"interval hierarchy of {column!r}: widths must be positive")
    for smaller, larger in zip(widths, widths[1:], strict=False):
        ratio = larger / smaller
        if ratio < 1 or not math.isclose(ratio, round(ratio)):
            raise HierarchyError(
                f"interval hierarchy of {column!r}: width {_number(larger)} is not a "
                f"multiple of the previous width {_number(smaller)}"
            )


# --------------------------------------------------------------------------- dates


def _parse_date(text: str, date_format: str | None) -> date:
    if date_format is None:
        return datetime.fromisoformat(text.strip()).date()
    return datetime.strptime(text.strip(), date_format).date()


def _date_label(day: date, level: str) -> str:
    if level == "month":
        return f"{day.year:04d}-{day.month:02d}"
    if level == "year":
        return f"{day.year:04d}"
    span = 5 if level == "5-year" else 10
    first = day.year - day.year % span
    return f"{first:04d}-{first + span - 1:04d}"


def date_hierarchy(
    column: str,
    values: Iterable[str | None],
    *,
    levels: Sequence[str] = DATE_LEVELS,
    date_format: str | None = None,
    add_top: bool = True,
) -> Hierarchy:
    """Dates: day → month ("2020-03") → year → 5-year ("2020-2024") → 10-year → "*".

    `levels` may skip some of the generalizations but keeps their order.  Dates are
    ISO ("2020-03-14", optionally with a time) unless `date_format` (strptime) is given.
    """
    unknown = [lv for lv in levels if lv not in DATE_LEVELS]
    if unknown or not levels:
        raise HierarchyError(
            f"date hierarchy of {column!r}: levels must be among {', '.join(DATE_LEVELS)}"
        )
    if list(levels) != sorted(levels, key=DATE_LEVELS.index) or len(set(levels)) != len(levels):
        raise HierarchyError(
            f"date hierarchy of {column!r}: levels must go from finest to coarsest, once each"
        )
    leaves = _distinct(values)
    days: list[tuple[date, str]] = []
    bad: list[str] = []
    for leaf in leaves:
        try:
            days.append((_parse_date(leaf, date_format), leaf))
        except ValueError:
            bad.append(leaf)
    if bad:
        raise HierarchyError(f"date hierarchy of {column!r}: not dates: {preview(bad)}")
    rows = [[leaf, *(_date_label(day, lv) for lv in levels)] for day, leaf in sorted(days)]
    return Hierarchy(column, tuple(map(tuple, _with_top(rows, add_top))))


# --------------------------------------------------------------------------- prefixes


def prefix_hierarchy(
    column: str,
    values: Iterable[str | None],
    lengths: Sequence[int] = (3, 1),
    *,
    mask_char: str | None = None,
    add_top: bool = True,
) -> Hierarchy:
    """Keep a shorter prefix at each level: "K1A 0B1" → "K1A" → "K" → "*".

    `lengths` must decrease.  With `mask_char` the dropped characters are replaced
    instead of cut ("K1A****"), keeping the value's length visible.
    """
    if not lengths or any(n < 0 for n in lengths):
        raise HierarchyError(f"prefix hierarchy of {column!r}: give non-negative lengths")
    if any(a <= b for a, b in zip(lengths, lengths[1:], strict=False)):
        raise HierarchyError(f"prefix hierarchy of {column!r}: lengths must decrease")
    if mask_char is not None and len(mask_char) != 1:
        raise HierarchyError(f"prefix hierarchy of {column!r}: mask_char is one character")

    def label(value: str, keep: int) -> str:
        if mask_char is None:
            return value[:keep]
        return value[:keep] + mask_char * max(len(value) - keep, 0)

    rows = [[leaf, *(label(leaf, n) for n in lengths)] for leaf in sorted(_distinct(values))]
    return Hierarchy(column, tuple(map(tuple, _with_top(rows, add_top))))


# --------------------------------------------------------------------------- categories


def categorical_hierarchy(
    column: str,
    values: Iterable[str | None],
    levels: Sequence[Mapping[str, Iterable[str]]],
    *,
    keep_ungrouped: bool = False,
    add_top: bool = True,
) -> Hierarchy:
    """A tree from groups: levels[0] groups the values, levels[1] groups those groups, ...

    Example: [{"IT": ["Programmer", "Database Administrator"]}] (PDPC 16.8).  An item
    missing from every group of a level is an error (listed) unless `keep_ungrouped`,
    which keeps it as its own group; an item in two groups is an error.
    """
    _check_groups(column, levels)
    leaves = _distinct(values)
    rows = [[leaf] for leaf in leaves]
    for number, groups in enumerate(levels, start=1):
        parent: dict[str, str] = {}
        twice: list[str] = []
        for group, members in groups.items():
            for member in members:
                if member in parent and parent[member] != group:
                    twice.append(f"{member!r} in {parent[member]!r} and {group!r}")
                parent[member] = group
        if twice:
            raise HierarchyError(
                f"categorical hierarchy of {column!r}, level {number}: an item is in two "
                f"groups: {'; '.join(twice[:10])}"
            )
        below = list(dict.fromkeys(row[-1] for row in rows))
        orphans = [item for item in below if item not in parent]
        if orphans and not keep_ungrouped:
            raise HierarchyError(
                f"categorical hierarchy of {column!r}, level {number}: not in any group: "
                f"{preview(orphans)}"
            )
        for row in rows:
            row.append(parent.get(row[-1], row[-1]))
    return Hierarchy(column, tuple(map(tuple, _with_top(rows, add_top))))


def _check_groups(column: str, levels: object) -> None:
    """`levels` as read from JSON or a form: a list of {group name: [values]}, all text.

    Without this a string would be read letter by letter as levels or as members."""
    shape = "levels must be a list of {group: [values]} mappings, one per level"
    if not isinstance(levels, (list, tuple)):
        raise HierarchyError(f"categorical hierarchy of {column!r}: {shape}")
    for number, groups in enumerate(levels, start=1):
        well_formed = isinstance(groups, Mapping) and all(
            isinstance(name, str)
            and isinstance(members, (list, tuple))
            and all(isinstance(member, str) for member in members)
            for name, members in groups.items()
        )
        if not well_formed:
            raise HierarchyError(
                f"categorical hierarchy of {column!r}, level {number}: {shape} "
                "(group names and values are text)"
            )
