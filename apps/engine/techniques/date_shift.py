"""Date shifting per person, keyed (PDPC 3.6 "data perturbation"; seed 000 step 7).

Every date of one person moves by the same number of days, so intervals within a
person (length of stay, age at diagnosis in days) are kept exactly while calendar
dates no longer match outside sources.  The shift is derived from the person's
identifier with HMAC-SHA-256 under a per-release secret key (the keyed pattern of
masking.py): the same person gets the same shift in every file of the release, nobody
without the key can recompute it, and the key (stored with the custodians, never in
the report) undoes it.  Shifts are uniform over ±1..max_days, never 0.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.masking import KEY_BYTES
from apps.engine.techniques._common import require_columns

DOMAIN = b"deidweb date shift\0"  # separates these HMACs from the pseudonyms' under one key


@dataclass(frozen=True)
class DateShiftParams:
    person: str  # the column identifying a person (before it is masked)
    columns: tuple[str, ...]  # date columns (Date, Datetime, or ISO text YYYY-MM-DD)
    max_days: int = 30
    key: bytes = b""  # 32 bytes, per release (masking.new_key()); never reported


@dataclass(frozen=True)
class DateShiftResult:
    data: pl.DataFrame
    params: DateShiftParams
    persons: int
    shifted: dict[str, int]  # non-missing dates moved, per column


def shift_days(person: str, key: bytes, max_days: int) -> int:
    """The person's shift: the HMAC's first 8 bytes, big-endian, mapped onto ±1..max_days.

    u = int(HMAC-SHA-256(key, DOMAIN + person)[:8]) mod 2·max_days; shift = u − max_days
    when u < max_days, else u − max_days + 1 (so 0 never occurs).
    """
    digest = hmac.new(key, DOMAIN + person.encode("utf-8"), hashlib.sha256).digest()
    u = int.from_bytes(digest[:8], "big") % (2 * max_days)
    return u - max_days if u < max_days else u - max_days + 1


def _as_dates(data: pl.DataFrame, column: str) -> pl.Series:
    series = data.get_column(column)
    if series.dtype == pl.Date or isinstance(series.dtype, pl.Datetime):
        return series
    try:
        return series.cast(pl.String).str.to_date("%Y-%m-%d", strict=True)
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"date shifting: {column!r} must hold dates (YYYY-MM-DD)") from exc


def shift_dates(data: pl.DataFrame, params: DateShiftParams) -> DateShiftResult:
    """Shift every date column by each person's keyed offset."""
    require_columns(data, [params.person, *params.columns], "date-shifting")
    if len(params.key) != KEY_BYTES:
        raise EngineInputError(f"date shifting: the key must be {KEY_BYTES} bytes")
    if not 1 <= params.max_days <= 36_500:
        raise EngineInputError("date shifting: max_days must be between 1 and 36,500")
    if data.height == 0:
        return DateShiftResult(data, params, 0, dict.fromkeys(params.columns, 0))
    persons = data.get_column(params.person).cast(pl.String)
    if persons.null_count():
        raise EngineInputError(f"date shifting: {params.person!r} has missing identifiers")
    distinct = persons.unique().to_list()
    offsets = [shift_days(p, params.key, params.max_days) for p in distinct]
    days = persons.replace_strict(distinct, offsets, return_dtype=pl.Int64)
    replaced, shifted = [], {}
    for column in params.columns:
        dates = _as_dates(data, column)
        moved = (
            pl.DataFrame([dates.alias(column), days.alias("__days")])
            .select(pl.col(column) + pl.duration(days=pl.col("__days")))
            .get_column(column)
        )
        shifted[column] = int(dates.is_not_null().sum())
        if data.schema[column] == pl.String:
            moved = moved.dt.strftime("%Y-%m-%d")
        replaced.append(moved)
    return DateShiftResult(data.with_columns(replaced), params, len(distinct), shifted)
