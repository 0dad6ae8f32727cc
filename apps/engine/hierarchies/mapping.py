"""What a released category contains: the original values behind each generalized value.

The Step 9 report documents each hierarchy as applied (issue #16): for one level, every
released value with the original values it stands for. Ordered values are collapsed to
ranges ("17-19, 23" rather than "17, 18, 19, 23"); long lists and many groups are capped
with a count of what was left out, so a reader can always tell what a category holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from apps.engine.hierarchies.model import Hierarchy

MAX_GROUPS = 60
MAX_PARTS = 12


@dataclass(frozen=True)
class ReleasedGroup:
    label: str  # the released (generalized) value
    values: str  # the original values it contains, collapsed and capped
    count: int  # how many original values


@dataclass(frozen=True)
class LevelMapping:
    column: str
    level: int
    groups: tuple[ReleasedGroup, ...]
    groups_total: int  # before the cap
    values_total: int


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def collapse(values: Sequence[str], *, max_parts: int = MAX_PARTS) -> str:
    """``["17","18","19","23"]`` → ``"17-19, 23"``; text sorted and listed; capped."""
    numbers = [_number(v) for v in values]
    parts: list[str] = []
    if values and all(n is not None for n in numbers):
        ordered = sorted(zip(numbers, values, strict=True), key=lambda p: p[0])  # type: ignore[arg-type, return-value]
        run_start = run_end = ordered[0]
        for item in ordered[1:]:
            if (
                float(item[0]).is_integer()  # type: ignore[arg-type]
                and float(run_end[0]).is_integer()  # type: ignore[arg-type]
                and item[0] == run_end[0] + 1  # type: ignore[operator]
            ):
                run_end = item
                continue
            parts.append(run_start[1] if run_start is run_end else f"{run_start[1]}-{run_end[1]}")
            run_start = run_end = item
        parts.append(run_start[1] if run_start is run_end else f"{run_start[1]}-{run_end[1]}")
    else:
        parts = sorted(values)
    if len(parts) > max_parts:
        shown = ", ".join(parts[:max_parts])
        return f"{shown}, … ({len(values):,} values in all)"
    return ", ".join(parts)


def level_mapping(
    hierarchy: Hierarchy, level: int, *, max_groups: int = MAX_GROUPS
) -> LevelMapping:
    """Every released value at ``level`` with the original values it contains, the largest
    groups first (at most ``max_groups``; the count of the rest is kept)."""
    if not 0 <= level <= hierarchy.height:
        raise ValueError(f"level {level} is outside 0..{hierarchy.height}")
    members: dict[str, list[str]] = {}
    for row in hierarchy.rows:
        members.setdefault(row[level], []).append(row[0])
    ranked = sorted(members.items(), key=lambda item: (-len(item[1]), item[0]))
    groups = tuple(
        ReleasedGroup(label=label, values=collapse(values), count=len(values))
        for label, values in ranked[:max_groups]
    )
    return LevelMapping(
        column=hierarchy.column,
        level=level,
        groups=groups,
        groups_total=len(members),
        values_total=len(hierarchy.rows),
    )
