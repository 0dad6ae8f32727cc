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

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import HierarchyError, preview
from apps.engine.hierarchies.validation import validate_rows

TOP = "*"

CodeArray = npt.NDArray[np.uint32]
CountArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class GeneralizationLookup:
    """Code-to-code maps of one column's hierarchy, compiled for one dictionary.

    `maps[L][code]` is the generalized code at level L of the original value
    `code`; `labels[L][gcode]` its text (None for the missing value); `leaves[L][gcode]`
    how many hierarchy leaves that generalized value covers (Loss, Precision).
    """

    column: str
    maps: tuple[CodeArray, ...]
    labels: tuple[tuple[str | None, ...], ...]
    leaves: tuple[CountArray, ...]
    domain_size: int

    @property
    def height(self) -> int:
        return len(self.maps) - 1

    def generalize(self, codes: pl.Series, level: int) -> pl.Series:
        """Map a column of original codes to its codes at `level` (one gather)."""
        mapped = self.maps[level][codes.to_numpy()]
        return pl.Series(codes.name, mapped, dtype=pl.UInt32)


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
        """True when the highest level is one value such as "*" (full suppression)."""
        return self.height > 0 and len({row[-1] for row in self.rows}) == 1

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

    def lookup(self, dictionary: pl.Series) -> GeneralizationLookup:
        """Compile the hierarchy for one column dictionary (see frame.EncodedData).

        Generalized codes at each level are numbered in the hierarchy's row order,
        only for values present in the dictionary, the missing value last.  The
        missing value stays its own group (label None, covering 1 leaf) below the
        top, and joins the top value only when that is a single value such as "*".

        The hierarchy's own part (each level's labels numbered in row order, and the
        leaves under each, :attr:`_levels`) is computed once per hierarchy; a lookup
        then costs array operations over the dictionary's values only.
        """
        values: list[str | None] = dictionary.to_list()
        find = self._leaf_index.get
        positions = np.fromiter(
            (find(v, -2) if v is not None else -1 for v in values),
            dtype=np.int64,
            count=len(values),
        )
        if (positions == -2).any():
            self.check_covers(values)  # (raises, naming the values)
        missing = positions < 0
        has_missing = bool(missing.any())
        maps: list[CodeArray] = [np.arange(len(values), dtype=np.uint32)]
        labels: list[tuple[str | None, ...]] = [tuple(values)]
        leaves: list[CountArray] = [np.ones(len(values), dtype=np.int64)]
        for level in range(1, self.height + 1):
            codes, level_labels, level_leaves = self._levels[level - 1]
            of_value = codes[np.where(missing, 0, positions)]
            # The missing value joins a single top value; else it is a group of its own.
            missing_joins_top = level == self.height and self.top_is_single_value
            own_group = has_missing and not missing_joins_top
            present = np.unique(of_value[~missing] if own_group else of_value)
            gcode = np.zeros(len(level_labels), dtype=np.uint32)
            gcode[present] = np.arange(len(present), dtype=np.uint32)
            level_map = gcode[of_value]
            if own_group:
                level_map[missing] = len(present)
            maps.append(level_map)
            labels.append((*level_labels[present].tolist(), *([None] if own_group else [])))
            leaves.append(
                np.concatenate(
                    [level_leaves[present], np.ones(1 if own_group else 0, dtype=np.int64)]
                )
            )
        return GeneralizationLookup(
            column=self.column,
            maps=tuple(maps),
            labels=tuple(labels),
            leaves=tuple(leaves),
            domain_size=len(self.rows),
        )

    @cached_property
    def _levels(
        self,
    ) -> tuple[tuple[npt.NDArray[np.int64], npt.NDArray[np.object_], CountArray], ...]:
        """Per level 1..H: each row's label numbered in order of first appearance, the
        labels in that order, and the leaves under each label."""
        out = []
        for level in range(1, self.height + 1):
            numbers: dict[str, int] = {}
            codes = np.fromiter(
                (numbers.setdefault(row[level], len(numbers)) for row in self.rows),
                dtype=np.int64,
                count=len(self.rows),
            )
            labels = np.empty(len(numbers), dtype=object)
            labels[:] = list(numbers)
            out.append((codes, labels, np.bincount(codes, minlength=len(numbers))))
        return tuple(out)

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.height:
            raise HierarchyError(
                f"hierarchy of {self.column!r} has levels 0..{self.height}, not {level}"
            )


def hierarchy_from_rows(column: str, rows: Iterable[Sequence[str]]) -> Hierarchy:
    """Build (and validate) a hierarchy from any iterable of rows."""
    return Hierarchy(column=column, rows=tuple(tuple(row) for row in rows))
