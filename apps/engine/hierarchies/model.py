"""The hierarchy model and its compilation to code lookup arrays.

A hierarchy is a table with one row per original value (leaf): the leaf, then
its generalized value at levels 1..H (ARX's format).  Generalizing a column to a
level never touches strings row by row: `Hierarchy.lookup` turns the hierarchy
into one integer array per level, indexed by the column's codes (frame.py), so
applying a level is a single gather over the distinct-tuples table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import polars as pl

from apps.engine.errors import HierarchyError, preview
from apps.engine.hierarchies.compiled import CompiledHierarchy, compile_hierarchy
from apps.engine.hierarchies.lookups import GeneralizationLookup, lookup_columns
from apps.engine.hierarchies.validation import validate_rows
from apps.engine.textcodes import TextViews, joined_views

TOP = "*"


@dataclass(frozen=True)
class Hierarchy:
    """One generalization hierarchy: rows of (leaf, level 1, ..., level H).

    Built only through validation: a Hierarchy object always has rows of equal
    length, unique leaves and levels that are functions of the level below.
    Labels are opaque text (validation.py).
    """

    column: str
    rows: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        # Normalize lists to tuples so that equality and hashing behave.
        object.__setattr__(self, "rows", tuple(tuple(str(v) for v in row) for row in self.rows))
        validate_rows(self.column, self.rows)

    @property
    def height(self) -> int:
        """Number of levels above the leaves; valid levels are 0..height."""
        return len(self.rows[0]) - 1

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(row[0] for row in self.rows)

    @cached_property
    def _leaf_index(self) -> dict[str, int]:
        return {row[0]: i for i, row in enumerate(self.rows)}

    @cached_property
    def top_is_single_value(self) -> bool:
        """True when the highest level is one value such as "*" (full suppression): read
        off :attr:`compiled` (the labels of each level, counted when the hierarchy is
        parsed), not the rows (a set of a 100,000-row hierarchy's tops took 3 ms in a
        process's first look-up)."""
        return self.height > 0 and int(self.compiled.sizes[self.height - 1]) == 1

    def level_labels(self, level: int) -> tuple[str, ...]:
        """Distinct values at `level`, in the order they first appear in the rows."""
        self._check_level(level)
        return tuple(dict.fromkeys(row[level] for row in self.rows))

    def generalize(self, value: str | None, level: int) -> str | None:
        """The generalized value of one original value (for display and tests)."""
        self._check_level(level)
        if value is None:
            return self.rows[0][-1] if level == self.height and self.top_is_single_value else None
        index = self._leaf_index.get(value)
        if index is None:
            raise HierarchyError(f"hierarchy of {self.column!r} does not cover {value!r}")
        return self.rows[index][level]

    def uncovered(self, values: Iterable[str | None]) -> list[str]:
        """Values (other than the missing value) that are not leaves of the hierarchy."""
        index = self._leaf_index
        return [v for v in dict.fromkeys(values) if v is not None and v not in index]

    def check_covers(self, values: Iterable[str | None]) -> None:
        missing = self.uncovered(values)
        if missing:
            raise HierarchyError(
                f"hierarchy of {self.column!r} does not cover {len(missing)} value(s) "
                f"of the data: {preview(missing)}"
            )

    def lookup(self, dictionary: pl.Series, views: TextViews | None = None) -> GeneralizationLookup:
        """Compile the hierarchy for one column dictionary (see encoded.EncodedData).

        Generalized codes at each level are numbered in the hierarchy's row order,
        only for values present in the dictionary, the missing value last.  The
        missing value stays its own group (label None, covering 1 leaf) below the
        top, and joins the top value only when that is a single value such as "*".

        The hierarchy's own part (its leaves indexed, each level's labels numbered in
        row order with the leaves under each: :attr:`compiled`) is computed once per
        hierarchy; a lookup then finds the dictionary's values among the leaves and
        numbers the generalized values present, in compiled passes over the
        dictionary's values (hierarchies/compiled.py); labels are made when read.
        ``views``: the dictionary's views when known, so that they are not read from
        polars again. A table's columns are looked up together by
        :func:`~.lookups.lookup_columns` (in one compiled call), of which this is one
        column.
        """
        return lookup_columns(
            [self], [dictionary], None if views is None else joined_views([views])
        )[0]

    @cached_property
    def compiled(self) -> CompiledHierarchy:
        """The hierarchy as arrays, for :meth:`lookup` (once per hierarchy)."""
        return compile_hierarchy(self.rows, self.height)

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.height:
            raise HierarchyError(
                f"hierarchy of {self.column!r} has levels 0..{self.height}, not {level}"
            )


def hierarchy_from_rows(column: str, rows: Iterable[Sequence[str]]) -> Hierarchy:
    """Build (and validate) a hierarchy from any iterable of rows."""
    return Hierarchy(column=column, rows=tuple(tuple(row) for row in rows))
