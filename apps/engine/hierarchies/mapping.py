"""What a released category contains, told without leaking what the release hides.

The Step 9 report documents each hierarchy as applied (issue #16): for one level, every
released value with the original values it stands for. Those lists are read by people who
may not see the data (reviewers, recipients, the public), so they follow one rule (issue
#22): **an original value held by fewer records than the release's class threshold k is
never printed** — not in a list, not as the end of a range, not as a released value. Such
values are counted instead ("3 values held by fewer than 20 records each"). Values held by
k records or more are no more identifying than a released class and are listed, most
frequent first with their record counts; numbers are collapsed to ranges ("17-19, 23").
Long lists and many groups are capped, and the cap is said with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apps.engine.hierarchies.model import Hierarchy

MAX_GROUPS = 60
MAX_PARTS = 12


@dataclass(frozen=True)
class ReleasedGroup:
    label: str | None  # the released value; None when it is itself a rare original value
    values: str  # what it contains, in words (frequent values, ranges, counts of the rest)
    count: int  # original values it contains that occur in the data
    records: int  # records holding them in the original data


@dataclass(frozen=True)
class LevelMapping:
    column: str
    level: int
    groups: tuple[ReleasedGroup, ...]  # the groups holding the most records first
    groups_total: int  # before the cap
    values_total: int  # original values that occur in the data
    min_records: int  # k: fewer records than this and a value is never printed


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _ranges(values: Sequence[str]) -> list[str]:
    """Numbers in order, consecutive whole numbers as one range: ``17, 18, 19, 23`` →
    ``["17-19", "23"]``."""
    ordered = sorted(values, key=lambda v: _number(v) or 0.0)
    parts: list[str] = []
    start = end = ordered[0]
    for value in ordered[1:]:
        a, b = _number(end), _number(value)
        if a is not None and b is not None and a.is_integer() and b == a + 1:
            end = value
            continue
        parts.append(start if start == end else f"{start}-{end}")
        start = end = value
    parts.append(start if start == end else f"{start}-{end}")
    return parts


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def contents_in_words(
    values: Sequence[tuple[str, int]], *, min_records: int, max_parts: int = MAX_PARTS
) -> str:
    """What one released value contains: ``(original value, records)`` pairs told by the
    module's rule. Categories: ``"United-States (27,504), Mexico (610); 3 values held by
    fewer than 20 records each, not listed"``; numbers: ``"20-27, 29; …"``."""
    frequent = sorted(((v, n) for v, n in values if n >= min_records), key=lambda p: (-p[1], p[0]))
    rare = [v for v, n in values if 0 < n < min_records]
    pieces = []
    if frequent:
        numeric = all(_number(v) is not None for v, _ in frequent)
        parts = (
            _ranges([v for v, _ in frequent]) if numeric else [f"{v} ({n:,})" for v, n in frequent]
        )
        listed = ", ".join(parts[:max_parts])
        if len(parts) > max_parts:
            shown = f"the first {max_parts} ranges" if numeric else f"the {max_parts} most frequent"
            listed += (
                f", … ({shown} of {_plural(len(frequent), 'value')} held by {min_records:,} or "
                f"more records: the report lists at most {max_parts})"
            )
        pieces.append(listed)
    if rare:
        each = " each" if len(rare) > 1 else ""
        pieces.append(
            f"{_plural(len(rare), 'value')} held by fewer than {min_records:,} records{each}, "
            "not listed"
        )
    return "; ".join(pieces) if pieces else "no value of the data"


def level_mapping(
    hierarchy: Hierarchy,
    level: int,
    *,
    counts: Mapping[str, int],
    min_records: int,
    max_groups: int = MAX_GROUPS,
    max_parts: int = MAX_PARTS,
) -> LevelMapping:
    """Every released value at ``level`` with what it contains (``counts``: records per
    original value in the data; values of the hierarchy the data lacks are left out), the
    groups holding the most records first (at most ``max_groups``; the count of the rest is
    kept). A released value that is itself an original value held by fewer than
    ``min_records`` records (an ungeneralized rare value) is withheld (``label`` None)."""
    if not 0 <= level <= hierarchy.height:
        raise ValueError(f"level {level} is outside 0..{hierarchy.height}")
    if min_records < 1:
        raise ValueError(f"the class threshold must be 1 or more, not {min_records}")
    members: dict[str, list[tuple[str, int]]] = {}
    for row in hierarchy.rows:
        records = int(counts.get(row[0], 0))
        if records > 0:
            members.setdefault(row[level], []).append((row[0], records))
    totals = {label: sum(n for _, n in values) for label, values in members.items()}
    ranked = sorted(members, key=lambda label: (-totals[label], label))
    groups = []
    for label in ranked[:max_groups]:
        rare_original = counts.get(label, 0) > 0 and totals[label] < min_records
        groups.append(
            ReleasedGroup(
                label=None if rare_original else label,
                values=contents_in_words(
                    members[label], min_records=min_records, max_parts=max_parts
                ),
                count=len(members[label]),
                records=totals[label],
            )
        )
    return LevelMapping(
        column=hierarchy.column,
        level=level,
        groups=tuple(groups),
        groups_total=len(members),
        values_total=sum(len(v) for v in members.values()),
        min_records=min_records,
    )
