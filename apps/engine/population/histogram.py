"""The class-size histogram every population model starts from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.engine.errors import EngineInputError

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SizeHistogram:
    """Equivalence classes grouped by size: `counts[i]` classes have `sizes[i]` rows.

    Sizes ascend and are distinct; suppressed rows are not in it (they are not released).
    """

    sizes: IntArray
    counts: IntArray

    @classmethod
    def from_counts(cls, pairs: Iterable[tuple[int, int]]) -> SizeHistogram:
        """From (class size, number of classes) pairs, e.g. `risk.class_size_counts`."""
        merged: dict[int, int] = {}
        for size, count in pairs:
            if int(size) < 1 or int(count) < 0:
                raise EngineInputError(
                    f"class-size histogram: size {size} with {count} classes "
                    "(sizes must be at least 1, counts not negative)"
                )
            if count:
                merged[int(size)] = merged.get(int(size), 0) + int(count)
        keys = sorted(merged)
        return cls(
            np.array(keys, dtype=np.int64), np.array([merged[k] for k in keys], dtype=np.int64)
        )

    @classmethod
    def from_class_sizes(cls, sizes: Iterable[int] | npt.NDArray[Any]) -> SizeHistogram:
        """From one size per equivalence class."""
        array = np.asarray(list(sizes) if not isinstance(sizes, np.ndarray) else sizes)
        if array.size == 0:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))
        values, counts = np.unique(array.astype(np.int64), return_counts=True)
        return cls.from_counts(zip(values.tolist(), counts.tolist(), strict=True))

    @property
    def rows(self) -> int:
        return int((self.sizes * self.counts).sum())

    @property
    def classes(self) -> int:
        return int(self.counts.sum())

    def classes_of_size(self, size: int) -> int:
        hit = np.flatnonzero(self.sizes == size)
        return int(self.counts[hit[0]]) if hit.size else 0

    @property
    def uniques(self) -> int:
        """Sample uniques: classes (= rows) of size 1."""
        return self.classes_of_size(1)
