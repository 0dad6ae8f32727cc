"""Data risk (Step 4): equivalence classes and the re-identification risk measures.

An equivalence class is the set of rows sharing every quasi-identifier value
(a missing value counting as a value).  A row in a class of size f has
probability of re-identification 1/f (seed 000 step 4.1; PDPC 17.5).  All the
measures below need only the class sizes, so they take an array of sizes, one per
class, computed once from the distinct-tuples table of frame.py.

Empty input (no rows, e.g. every row suppressed): nothing is released, so every
risk is 0, there are 0 classes and the smallest class size is reported as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineInputError

# Class sizes, one per class: any unsigned or signed integer array (counts come as UInt32).
Sizes = npt.NDArray[np.integer[Any]]
ReleaseModel = Literal["public", "semi_public", "non_public"]
RELEASE_MODELS: tuple[ReleaseModel, ...] = ("public", "semi_public", "non_public")

DEFAULT_STRICT_AVERAGE_CAP = 0.33
# Seed 000 step 4.2: 0.33 (smallest class of 3) is the usual cut-off, 0.5 (no uniques) allowed.
ALLOWED_STRICT_AVERAGE_CAPS = (0.33, 0.5)

# Class-size buckets of the report: (label, smallest size, largest size or None).
CLASS_SIZE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1", 1, 1),
    ("2", 2, 2),
    ("3-4", 3, 4),
    ("5-9", 5, 9),
    ("10-19", 10, 19),
    ("20+", 20, None),
)


# --------------------------------------------------------------------------- classes


def equivalence_class_sizes(
    tuples: pl.DataFrame,
    *,
    by: Sequence[str] | None = None,
    suppressed: pl.Series | npt.NDArray[np.bool_] | None = None,
) -> Sizes:
    """Sizes of the equivalence classes of a (generalized) tuples table.

    `by` names the code columns that define a class (default: every column but
    "count"); rows of `tuples` sharing them are merged.  `suppressed` is a boolean
    mask over the rows of `tuples`: suppressed rows leave the release and so both
    the counts of rows and of classes (seed 000 step 4).
    """
    columns = list(by) if by is not None else [c for c in tuples.columns if c != COUNT_COLUMN]
    table = tuples
    if suppressed is not None:
        mask = (
            pl.Series(suppressed, dtype=pl.Boolean)
            if not isinstance(suppressed, pl.Series)
            else suppressed
        )
        if mask.len() != tuples.height:
            raise EngineInputError(
                f"suppressed mask has {mask.len()} entries for {tuples.height} tuples"
            )
        table = tuples.filter(~mask)
    if table.height == 0:
        return np.zeros(0, dtype=np.int64)
    if not columns:
        return np.array([int(table.get_column(COUNT_COLUMN).cast(pl.UInt64).sum())], np.int64)
    grouped = table.group_by(columns).agg(pl.col(COUNT_COLUMN).cast(pl.UInt64).sum())
    return grouped.get_column(COUNT_COLUMN).to_numpy()


def encoded_class_sizes(encoded: EncodedData) -> Sizes:
    """Class sizes of ungeneralized data: the tuples are already distinct, no grouping needed.

    A zero-copy view of the counts: with millions of classes a copy costs more than the
    figures computed from it.
    """
    return encoded.tuples.get_column(COUNT_COLUMN).to_numpy()


def _sizes(sizes: Sizes | Sequence[int]) -> Sizes:
    array = np.asarray(sizes)
    if array.dtype.kind not in "iu":  # e.g. an empty list
        array = array.astype(np.int64)
    if array.size and int(array.min()) < 1:
        raise EngineInputError("equivalence class sizes must be at least 1")
    return array


# --------------------------------------------------------------------------- measures


def row_count(sizes: Sizes | Sequence[int]) -> int:
    return int(_sizes(sizes).sum())


def smallest_class_size(sizes: Sizes | Sequence[int]) -> int:
    """Size of the smallest equivalence class (the data's k); 0 when empty."""
    array = _sizes(sizes)
    return int(array.min()) if array.size else 0


def uniques(sizes: Sizes | Sequence[int]) -> int:
    """Rows alone in their class (probability of re-identification 1)."""
    return int(np.count_nonzero(_sizes(sizes) == 1))


def max_risk(sizes: Sizes | Sequence[int]) -> float:
    """Largest probability over rows = 1 / smallest class size (seed 000 step 4.2, public)."""
    smallest = smallest_class_size(sizes)
    return 1.0 / smallest if smallest else 0.0


def average_risk(sizes: Sizes | Sequence[int]) -> float:
    """Mean over rows of 1/f = number of classes / number of rows (each class adds f·1/f = 1)."""
    array = _sizes(sizes)
    rows = int(array.sum())
    return array.size / rows if rows else 0.0


def check_strict_average_cap(cap: float) -> float:
    if cap not in ALLOWED_STRICT_AVERAGE_CAPS:
        raise EngineInputError(
            f"strict average cap {cap} is not allowed: use 0.33 (default) or 0.5 (IPC 2016, step 4.2)"
        )
    return cap


def strict_average_risk(
    sizes: Sizes | Sequence[int], cap: float = DEFAULT_STRICT_AVERAGE_CAP
) -> float:
    """Average risk, unless some row's risk exceeds `cap`: then the max risk (seed 000 step 4.2).

    The cap keeps a small average from hiding unique or near-unique rows in
    non-public releases.
    """
    check_strict_average_cap(cap)
    highest = max_risk(sizes)
    return highest if highest > cap else average_risk(sizes)


def data_risk(
    sizes: Sizes | Sequence[int],
    release_model: str,
    cap: float = DEFAULT_STRICT_AVERAGE_CAP,
) -> float:
    """The measure the release model calls for: max risk for public and semi-public,
    strict average risk for non-public (seed 000 step 4.2)."""
    model = check_release_model(release_model)
    if model == "non_public":
        return strict_average_risk(sizes, cap)
    return max_risk(sizes)


def check_release_model(release_model: str) -> ReleaseModel:
    for model in RELEASE_MODELS:
        if release_model == model:
            return model
    raise EngineInputError(
        f"unknown release model {release_model!r}: use one of {', '.join(RELEASE_MODELS)}"
    )


@dataclass(frozen=True)
class RecordsAtRisk:
    """Rows whose probability of re-identification 1/f exceeds `target`."""

    target: float
    rows: int
    share: float  # of all rows, 0..1
    classes: int

    @property
    def percent(self) -> float:
        return 100.0 * self.share


def records_at_risk(sizes: Sizes | Sequence[int], target: float) -> RecordsAtRisk:
    """Count rows (and classes) with 1/f > target (METHOD step 4, records at risk)."""
    if not 0.0 < target <= 1.0:
        raise EngineInputError(f"risk target must be in (0, 1], not {target}")
    array = _sizes(sizes)
    rows = int(array.sum())
    at_risk = (1.0 / array) > target if array.size else np.zeros(0, dtype=np.bool_)
    risky_rows = int(array[at_risk].sum())
    return RecordsAtRisk(
        target=target,
        rows=risky_rows,
        share=risky_rows / rows if rows else 0.0,
        classes=int(np.count_nonzero(at_risk)),
    )


# --------------------------------------------------------------------------- distribution


@dataclass(frozen=True)
class ClassSizeBucket:
    label: str
    smallest: int
    largest: int | None
    classes: int
    rows: int


_CHUNK = 1 << 18


def _size_frequencies(array: Sizes) -> npt.NDArray[np.int64]:
    """frequencies[f] = number of classes of size f (one O(n) pass; sizes are small).

    Counted a chunk at a time so that bincount's conversion of its input stays small.
    """
    frequencies = np.zeros(int(array.max()) + 1 if array.size else 1, dtype=np.int64)
    for start in range(0, array.size, _CHUNK):
        part = np.bincount(array[start : start + _CHUNK])
        frequencies[: part.size] += part
    return frequencies


def class_size_histogram(sizes: Sizes | Sequence[int]) -> tuple[ClassSizeBucket, ...]:
    """Classes and rows per size bucket 1, 2, 3-4, 5-9, 10-19, 20+."""
    return _histogram(_size_frequencies(_sizes(sizes)))


def _histogram(frequencies: npt.NDArray[np.int64]) -> tuple[ClassSizeBucket, ...]:
    rows_by_size = frequencies * np.arange(frequencies.size)
    buckets = []
    for label, smallest, largest in CLASS_SIZE_BUCKETS:
        stop = largest + 1 if largest is not None else frequencies.size
        buckets.append(
            ClassSizeBucket(
                label,
                smallest,
                largest,
                int(frequencies[smallest:stop].sum()),
                int(rows_by_size[smallest:stop].sum()),
            )
        )
    return tuple(buckets)


def class_size_counts(sizes: Sizes | Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Exact distribution: (class size, number of classes of that size), by size."""
    frequencies = _size_frequencies(_sizes(sizes))
    return tuple((int(f), int(frequencies[f])) for f in np.flatnonzero(frequencies))


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class RiskProfile:
    """Every Step 4 figure of one data set (or of one generalization of it)."""

    rows: int
    equivalence_classes: int
    smallest_class: int
    largest_class: int
    uniques: int
    max_risk: float
    average_risk: float
    strict_average_risk: float
    strict_average_cap: float
    histogram: tuple[ClassSizeBucket, ...]
    class_size_counts: tuple[tuple[int, int], ...]

    def data_risk(self, release_model: str) -> float:
        model = check_release_model(release_model)
        return self.strict_average_risk if model == "non_public" else self.max_risk

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "equivalence_classes": self.equivalence_classes,
            "min_class_size": self.smallest_class,
            "max_class_size": self.largest_class,
            "uniques": self.uniques,
            "max_risk": self.max_risk,
            "average_risk": self.average_risk,
            "strict_average_risk": self.strict_average_risk,
            "strict_average_cap": self.strict_average_cap,
            "class_size_histogram": {
                b.label: {"classes": b.classes, "rows": b.rows} for b in self.histogram
            },
            "class_size_counts": {str(size): n for size, n in self.class_size_counts},
        }


def risk_profile(
    sizes: Sizes | Sequence[int], *, cap: float = DEFAULT_STRICT_AVERAGE_CAP
) -> RiskProfile:
    """Every Step 4 figure, derived from one count of classes per size.

    Same formulas as the functions above, but the class sizes (one per class,
    millions for large data) are scanned once into frequencies, whose length is
    only the largest class size.
    """
    check_strict_average_cap(cap)
    frequencies = _size_frequencies(_sizes(sizes))
    sizes_present = np.flatnonzero(frequencies)
    classes = int(frequencies.sum())
    rows = int((frequencies * np.arange(frequencies.size)).sum())
    smallest = int(sizes_present[0]) if classes else 0
    highest = 1.0 / smallest if smallest else 0.0
    average = classes / rows if rows else 0.0
    return RiskProfile(
        rows=rows,
        equivalence_classes=classes,
        smallest_class=smallest,
        largest_class=int(sizes_present[-1]) if classes else 0,
        uniques=int(frequencies[1]) if frequencies.size > 1 else 0,
        max_risk=highest,
        average_risk=average,
        strict_average_risk=highest if highest > cap else average,
        strict_average_cap=cap,
        histogram=_histogram(frequencies),
        class_size_counts=tuple((int(f), int(frequencies[f])) for f in sizes_present),
    )
