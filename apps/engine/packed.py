"""Encoding by one packed key: when every quasi-identifier is stored as integers, booleans,
dates or categoricals (typical Parquet), the rows are grouped on one 64-bit key packing
each column's offset from its minimum, found by a cheap first pass (grouping one integer
is much faster than grouping several columns), and the distinct keys are unpacked into
the codes and dictionaries of an ``EncodedData``, the same as the general group-by of
``apps.engine.frame.encode`` gives. ``encode_packed`` returns None when the key would
not fit in 64 bits or a column's range is too wide, and the general path is taken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.encoded import (
    CODE_DTYPE,
    COUNT_COLUMN,
    EncodedData,
    from_tuples,
    sorted_dictionary,
)

_MAX_SPAN = 1 << 24  # larger value ranges would make the offset lookup arrays too big


# 64-bit unsigned and 128-bit integers could overflow the Int64 offsets: general path.
_PACKABLE = (
    pl.Int8,
    pl.Int16,
    pl.Int32,
    pl.Int64,
    pl.UInt8,
    pl.UInt16,
    pl.UInt32,
    pl.Boolean,
    pl.Date,
)


def packable(dtype: pl.DataType) -> bool:
    return dtype in _PACKABLE or isinstance(dtype, pl.Categorical | pl.Enum)


def _physical(column: str, dtype: pl.DataType) -> pl.Expr:
    # Kept in the stored width: a cast to Int64 on every row costs as much as reading.
    expr = pl.col(column)
    return expr.cast(pl.UInt8) if dtype == pl.Boolean else expr.to_physical()


@dataclass(frozen=True)
class _Slot:
    """Where one column sits in the packed key: offset = physical - low (+1 if nulls, null = 0)."""

    low: int
    slots: int
    nulls: bool
    shift: int


def encode_packed(
    frame: pl.LazyFrame, quasi: tuple[str, ...], dtypes: list[pl.DataType]
) -> EncodedData | None:
    slots = _slots(frame, quasi, dtypes)
    if slots is None:
        return None
    key: pl.Expr | None = None
    for q, d, slot in zip(quasi, dtypes, slots, strict=True):
        if slot.slots <= 1:
            continue  # a constant column adds nothing to the key
        offset = _physical(q, d)
        if slot.low:
            offset = offset.cast(pl.Int64) - slot.low
        offset = offset.cast(pl.UInt64)
        offset = (offset + 1).fill_null(0) if slot.nulls else offset
        part = offset * pl.lit(1 << slot.shift, dtype=pl.UInt64) if slot.shift else offset
        key = part if key is None else key + part
    if key is None:  # every column constant: one tuple, and a literal key would be one row
        key = pl.repeat(0, pl.len(), dtype=pl.UInt64)
    grouped = (
        frame.select(key.alias("__key"))
        .group_by("__key")
        .agg(pl.len().alias(COUNT_COLUMN))
        .collect(engine="streaming")
    )
    keys = grouped.get_column("__key").to_numpy()
    if slots[-1].shift + (slots[-1].slots - 1).bit_length() < 64:
        keys = keys.view(np.int64)  # shifts then give intp indices directly, no conversion
    present = _unpack_presence(keys, slots)
    dictionaries: list[pl.Series] = []
    lookups: list[npt.NDArray[np.uint32]] = []
    for q, d, slot, used_mask in zip(quasi, dtypes, slots, present, strict=True):
        used = np.flatnonzero(used_mask)
        has_missing = slot.nulls and used.size > 0 and used[0] == 0
        physical = (used[1:] if has_missing else used) - int(slot.nulls) + slot.low
        labels = _labels(frame, q, d, physical)
        if has_missing:  # offset 0 is the missing value
            labels = pl.concat([pl.Series(q, [None], dtype=pl.String), labels])
        dictionary = sorted_dictionary(q, labels)
        present_labels = dictionary.drop_nulls()
        ranks = labels.cast(pl.Enum(present_labels.to_list())).to_physical()
        lookup = np.zeros(used_mask.size, dtype=np.uint32)
        lookup[used] = ranks.fill_null(present_labels.len()).to_numpy()
        dictionaries.append(dictionary)
        lookups.append(lookup)
    tuples = grouped.select(*_unpack_codes(quasi, slots, lookups), pl.col(COUNT_COLUMN))
    return from_tuples(quasi, dictionaries, tuples)


# Keys are unpacked a chunk at a time: the temporary offset arrays stay in cache instead of
# allocating (and page-faulting) one array of 8 bytes per distinct tuple per column.
_CHUNK = 1 << 18


def _offsets(chunk: npt.NDArray[Any], slot: _Slot) -> npt.NDArray[np.intp]:
    mask = (1 << (slot.slots - 1).bit_length()) - 1
    shifted = (chunk >> chunk.dtype.type(slot.shift)) & chunk.dtype.type(mask)
    offsets: npt.NDArray[np.intp] = shifted.astype(np.intp, copy=False)
    return offsets


def _unpack_presence(keys: npt.NDArray[Any], slots: list[_Slot]) -> list[npt.NDArray[np.bool_]]:
    """Which offsets occur, per column."""
    present = [np.zeros(max(slot.slots, 1), dtype=np.bool_) for slot in slots]
    for start in range(0, keys.size, _CHUNK):
        chunk = keys[start : start + _CHUNK]
        for used, slot in zip(present, slots, strict=True):
            used[_offsets(chunk, slot)] = True
    return present


def _unpack_codes(
    quasi: tuple[str, ...], slots: list[_Slot], lookups: list[npt.NDArray[np.uint32]]
) -> list[pl.Expr]:
    """Each column's code per distinct tuple, lookup[offset], as polars expressions.

    Polars rather than numpy here: its allocator reuses the memory the group-by
    just released, where numpy would fault in fresh pages for every output column.
    """
    key = pl.col("__key")
    columns = []
    for q, slot, lookup in zip(quasi, slots, lookups, strict=True):
        shifted = key // pl.lit(1 << slot.shift, dtype=pl.UInt64) if slot.shift else key
        offset = shifted & pl.lit((1 << (slot.slots - 1).bit_length()) - 1, dtype=pl.UInt64)
        codes = pl.lit(pl.Series(lookup, dtype=CODE_DTYPE)).gather(offset)
        columns.append(codes.alias(q))
    return columns


def _slots(
    frame: pl.LazyFrame, quasi: tuple[str, ...], dtypes: list[pl.DataType]
) -> list[_Slot] | None:
    """One cheap pass for each column's range; None when the key would not fit 64 bits."""
    columns = list(zip(quasi, dtypes, strict=True))
    stats = (
        frame.select(
            pl.len().alias("rows"),
            *(_physical(q, d).min().alias(f"min{i}") for i, (q, d) in enumerate(columns)),
            *(_physical(q, d).max().alias(f"max{i}") for i, (q, d) in enumerate(columns)),
            *(pl.col(q).null_count().alias(f"nulls{i}") for i, q in enumerate(quasi)),
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    if not stats["rows"]:
        return None
    slots: list[_Slot] = []
    shift = 0
    for i in range(len(quasi)):
        low, high, nulls = stats[f"min{i}"], stats[f"max{i}"], int(stats[f"nulls{i}"] > 0)
        low, high = (int(low), int(high)) if low is not None else (0, -1)
        # Offsets from 0 avoid a subtraction per row, unless that would cost a bit.
        if low > 0 and (high + nulls).bit_length() == (high - low + nulls).bit_length():
            low = 0
        count = high - low + 1 + nulls
        if count > _MAX_SPAN:
            return None
        slots.append(_Slot(low, count, bool(nulls), shift))
        shift += (count - 1).bit_length()
    return slots if shift <= 64 else None


def _labels(
    frame: pl.LazyFrame, name: str, dtype: pl.DataType, physical: npt.NDArray[np.int64]
) -> pl.Series:
    """Texts of physical values: the texts a cast to String gives."""
    ints = pl.Series(name, physical, dtype=pl.Int64)
    if isinstance(dtype, pl.Categorical):
        # Categories are shared and indexed by physical id; read the column only if that fails.
        texts = dtype.categories.to_series()
        if not physical.size or int(physical.max()) < texts.len():
            picked = texts.gather(ints).alias(name)
            if not picked.null_count():
                return picked
        distinct = frame.select(pl.col(name).unique().drop_nulls()).collect().get_column(name)
        known = dict(
            zip(distinct.to_physical().to_list(), distinct.cast(pl.String).to_list(), strict=True)
        )
        return pl.Series(name, [known[int(v)] for v in physical], dtype=pl.String)
    if isinstance(dtype, pl.Enum):
        return dtype.categories.gather(ints).alias(name)
    if dtype == pl.Boolean:
        return ints.cast(pl.Boolean).cast(pl.String)
    if dtype == pl.Date:
        return ints.cast(pl.Int32).cast(pl.Date).cast(pl.String)
    return ints.cast(dtype).cast(pl.String)
