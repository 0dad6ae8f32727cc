"""Helpers shared by the Step 7 techniques: column checks, codes, seeded generators.

Every technique takes a polars DataFrame and returns a new one; none changes its input.
Randomised techniques take a `seed`: the same seed gives the same output (tests,
previews), while a release draws a fresh one so that nobody can rerun the draw.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.reading import check_columns

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def require_columns(data: pl.DataFrame, columns: Sequence[str], role: str) -> tuple[str, ...]:
    """The columns as a tuple, or a one-line EngineInputError naming what is wrong."""
    check_columns(data.columns, list(columns), role)
    return tuple(columns)


def numeric_values(data: pl.DataFrame, column: str, technique: str) -> FloatArray:
    """A column as float64 (text read from a CSV is parsed); missing values become NaN."""
    series = data.get_column(column)
    try:
        values = series.cast(pl.Float64, strict=True)
    except pl.exceptions.PolarsError as exc:
        bad = (
            series.cast(pl.String)
            .filter(series.cast(pl.Float64, strict=False).is_null() & series.is_not_null())
            .head(3)
            .to_list()
        )
        raise EngineInputError(
            f"{technique}: column {column!r} must be numeric; values such as {bad} are not"
        ) from exc
    out: FloatArray = values.fill_null(np.nan).to_numpy().astype(np.float64)
    return out


def generator(seed: int | None) -> np.random.Generator:
    """A numpy generator from `seed`, or from a cryptographic random seed when None."""
    return np.random.default_rng(seed if seed is not None else secrets.randbits(63))


def row_codes(data: pl.DataFrame, columns: Sequence[str]) -> tuple[IntArray, tuple[int, ...]]:
    """Each row's values as small integers: 0 = missing, 1.. = the sorted distinct texts.

    Returns the (rows × columns) code matrix and each column's number of distinct values.
    Values are compared as text, as frame.encode does.
    """
    if not columns:
        return np.zeros((data.height, 0), dtype=np.int64), ()
    frame = data.select(
        pl.col(c).cast(pl.String).rank("dense").fill_null(0).cast(pl.Int64).alias(c)
        for c in columns
    )
    codes: IntArray = frame.to_numpy().astype(np.int64).reshape(data.height, len(columns))
    cards = tuple(int(codes[:, j].max()) if data.height else 0 for j in range(len(columns)))
    return codes, cards


def pack_rows(codes: IntArray, cards: Sequence[int]) -> IntArray:
    """One int64 key per row, equal exactly when the rows are equal (mixed radix).

    Falls back to the rank of each distinct row when the radix product passes 2**62.
    """
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64)
    radix = [c + 1 for c in cards]
    if float(np.prod(np.array(radix, dtype=np.float64))) < 2.0**62:
        key = np.zeros(codes.shape[0], dtype=np.int64)
        for j, r in enumerate(radix):
            key = key * r + codes[:, j]
        return key
    _, inverse = np.unique(codes, axis=0, return_inverse=True)
    packed: IntArray = inverse.astype(np.int64).ravel()
    return packed


SECRET_FIELDS = ("seed", "key")


def public_parameters(params: object) -> dict[str, object]:
    """A parameter dataclass as a dict for the report, without what would undo it.

    The seed of a random draw or the key of a keyed shift lets anyone who holds it
    reverse the technique, so neither is ever shown (issue #18; seed 000 step 7.1).
    """
    fields = getattr(params, "__dataclass_fields__", {})
    return {name: getattr(params, name) for name in fields if name not in SECRET_FIELDS}
