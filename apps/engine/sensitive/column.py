"""A sensitive column prepared for the models: codes, overall counts, order, hierarchy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError, preview
from apps.engine.hierarchies import Hierarchy
from apps.engine.sensitive.models import SensitiveModel

I64 = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SensitiveColumn:
    """One sensitive column over a dictionary of codes ``0..m-1`` (``values[code]``).

    ``totals[code]``: rows of the whole input with that value (the overall distribution
    of t-closeness). ``order[i]``: code of the ``i``-th value in increasing numeric order
    (ordered distance; None when the column is not numeric). ``levels[L][code]``: the
    value's node at level ``L`` of the column's hierarchy (hierarchical distance; None
    without a hierarchy).
    """

    name: str
    values: tuple[str | None, ...]
    totals: I64
    order: I64 | None = None
    levels: tuple[I64, ...] | None = None

    @property
    def size(self) -> int:
        return len(self.values)

    def check(self, model: SensitiveModel) -> None:
        """A clear error when ``model`` cannot be applied to this column."""
        if model.needs_numbers and self.order is None:
            raise EngineInputError(
                f"ordered-distance t-closeness needs numbers in {self.name!r}: "
                f"{self.not_numbers()}; use equal-t or hierarchical-t for a text column"
            )
        if model.needs_hierarchy and self.levels is None:
            raise EngineInputError(
                f"hierarchical-distance t-closeness on {self.name!r} needs a hierarchy "
                "for that column"
            )

    def not_numbers(self) -> str:
        bad = [v for v in self.values if _as_number(v) is None]
        return "values that are not numbers: " + preview(
            ["(missing)" if v is None else v for v in bad]
        )


def _as_number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if np.isfinite(x) else None


def numeric_order(values: Sequence[str | None]) -> I64 | None:
    """Codes in increasing numeric order (ties in code order), or None when a value is
    not a number (the missing value included)."""
    numbers = [_as_number(v) for v in values]
    if any(x is None for x in numbers):
        return None
    keys = np.asarray(numbers, dtype=np.float64)
    return np.argsort(keys, kind="stable").astype(np.int64)


def hierarchy_levels(
    column: str, values: Sequence[str | None], hierarchy: Hierarchy
) -> tuple[I64, ...]:
    """``levels[L][code]`` for the dictionary ``values``: the node (an index per level)
    that covers the value at level ``L``. The hierarchy must cover every value; it is a
    tree (one parent per node, as the distance needs) by validation (``Hierarchy``)."""
    if None in values:
        raise EngineInputError(
            f"hierarchical-distance t-closeness on {column!r}: the column has missing "
            "values, which its hierarchy cannot place"
        )
    hierarchy.check_covers(values)
    rows = {row[0]: row for row in hierarchy.rows}
    out: list[I64] = []
    for level in range(hierarchy.height + 1):
        index: dict[tuple[int, str], int] = {}
        codes = np.empty(len(values), dtype=np.int64)
        for code, value in enumerate(values):
            label = rows[str(value)][level]
            codes[code] = index.setdefault((level, label), len(index))
        out.append(codes)
    return tuple(out)


def sensitive_column(
    name: str,
    values: Sequence[str | None],
    totals: NDArray[np.integer],
    *,
    hierarchy: Hierarchy | None = None,
) -> SensitiveColumn:
    """Prepare a sensitive column from its dictionary and rows per value."""
    counts = np.asarray(totals, dtype=np.int64)
    if len(counts) != len(values):
        raise EngineInputError(
            f"sensitive column {name!r}: {len(counts)} counts for {len(values)} values"
        )
    return SensitiveColumn(
        name=name,
        values=tuple(values),
        totals=counts,
        order=numeric_order(values),
        levels=hierarchy_levels(name, values, hierarchy) if hierarchy is not None else None,
    )
