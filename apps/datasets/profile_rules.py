"""The rules of profiling (:mod:`apps.datasets.profiling`'s docstring states them): the
thresholds, the polars expressions that gather a column's evidence, the type each column
gets from it, and the bins of its histogram.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

TYPE_SHARE = 0.95
IDENTIFIER_UNIQUE_SHARE = 0.95
IDENTIFIER_MIN_DISTINCT = 10
IDENTIFIER_MIN_DIGITS = 5
FREE_TEXT_MIN_MEAN_LENGTH = 30.0
FREE_TEXT_MIN_MEAN_WORDS = 4.0
FREE_TEXT_MIN_UNIQUE_SHARE = 0.1
FREE_TEXT_MIN_DISTINCT = 1000
TYPE_SAMPLE_ROWS = 20_000
# What a sample of text holds at most: each value cut to an equal share of it, but never to
# fewer characters than the second figure.
SAMPLE_BYTES = 64 * 1024**2
TYPE_SAMPLE_MIN_CHARS = 64
TOP_VALUES = 10
HISTOGRAM_BINS = 10
SAMPLE_VALUES = 5
SAMPLE_MAX_CHARS = 80

BOOLEAN_VALUES = frozenset(
    {"true", "false", "yes", "no", "y", "n", "t", "f", "0", "1", "oui", "non", "vrai", "faux"}
)
DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%d-%m-%Y", "%d.%m.%Y",
                "%d-%b-%Y", "%d %b %Y", "%b %d, %Y", "%d%b%Y")  # fmt: skip
DATETIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S%.f",
                    "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M",
                    "%d/%m/%Y %H:%M:%S", "%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M:%S",
                    "%m/%d/%Y %H:%M")  # fmt: skip

_INTEGER = r"^\s*[+-]?\d+\s*$"
_LEADING_ZERO = r"^\s*0\d"
_DECIMAL = r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$"
# --------------------------------------------------------------------------- helpers


@dataclass
class _Plan:
    """What pass 1 decided about one column, and how later passes read it."""

    name: str
    position: int
    dtype: pl.DataType
    missing: int
    distinct: int
    non_null: int
    inferred_type: str = "categorical"
    typed: pl.Expr | None = None  # the column as numbers / dates, for min, max, histogram
    mean_length: float | None = None


def _key(index: int, what: str) -> str:
    return f"{index}\x1f{what}"


def _is_string(dtype: pl.DataType) -> bool:
    return dtype == pl.String


def _is_integer(dtype: pl.DataType) -> bool:
    return dtype.is_integer()


def _is_float(dtype: pl.DataType) -> bool:
    return dtype.is_float() or isinstance(dtype, pl.Decimal)


def _evidence_exprs(index: int, name: str) -> list[pl.Expr]:
    """Type evidence for a text column, computed on the sample rows."""
    col = pl.col(name)
    stripped = col.str.strip_chars()
    exprs = [
        col.is_not_null().sum().alias(_key(index, "seen")),
        col.str.contains(_INTEGER).sum().alias(_key(index, "int")),
        col.str.contains(_LEADING_ZERO).sum().alias(_key(index, "zero")),
        col.str.contains(_DECIMAL).sum().alias(_key(index, "dec")),
        stripped.str.to_lowercase().is_in(list(BOOLEAN_VALUES)).sum().alias(_key(index, "bool")),
        col.str.count_matches(r"\S+").mean().alias(_key(index, "words")),
    ]
    exprs += [
        stripped.str.to_date(fmt, strict=False).is_not_null().sum().alias(_key(index, f"d{i}"))
        for i, fmt in enumerate(DATE_FORMATS)
    ]
    exprs += [
        stripped.str.to_datetime(fmt, strict=False, time_unit="us")
        .is_not_null()
        .sum()
        .alias(_key(index, f"t{i}"))
        for i, fmt in enumerate(DATETIME_FORMATS)
    ]
    return exprs


def _provisional(evidence: dict[str, Any], index: int) -> tuple[str, str | None]:
    """(kind, format) of a text column from its sample: boolean, integer, decimal, date,
    datetime (with the winning layout) or text."""

    def get(what: str) -> Any:
        return evidence[_key(index, what)]

    seen = int(get("seen"))
    if seen == 0:
        return "text", None
    need = TYPE_SHARE * seen
    if get("bool") >= seen:
        return "boolean", None
    codes = get("zero") > 0
    if get("int") >= need and not codes:
        return "integer", None
    if get("dec") >= need and not codes:
        return "decimal", None
    date_hits = [get(f"d{i}") for i in range(len(DATE_FORMATS))]
    best = max(range(len(DATE_FORMATS)), key=lambda i: (date_hits[i], -i))
    if date_hits[best] >= need:
        return "date", DATE_FORMATS[best]
    time_hits = [get(f"t{i}") for i in range(len(DATETIME_FORMATS))]
    best = max(range(len(DATETIME_FORMATS)), key=lambda i: (time_hits[i], -i))
    if time_hits[best] >= need:
        return "datetime", DATETIME_FORMATS[best]
    return "text", None


def _full_exprs(
    index: int, name: str, dtype: pl.DataType, provisional: str, *, distinct: bool = True
) -> list[pl.Expr]:
    """Exact counts over every row, plus what the identifier rule needs (the distinct count
    only with `distinct`: `_streamed_distinct` counts it in bounded memory)."""
    col = pl.col(name)
    exprs = [col.null_count().alias(_key(index, "missing"))]
    if distinct:
        exprs.append(col.drop_nulls().n_unique().alias(_key(index, "distinct")))
    if _is_string(dtype):
        exprs.append(col.str.len_chars().mean().alias(_key(index, "len")))
        if provisional == "integer":
            stripped = col.str.strip_chars()
            exprs += [
                stripped.cast(pl.Int64, strict=False).min().alias(_key(index, "lo")),
                stripped.cast(pl.Int64, strict=False).max().alias(_key(index, "hi")),
                stripped.str.len_chars().min().alias(_key(index, "minlen")),
                stripped.str.len_chars().max().alias(_key(index, "maxlen")),
            ]
    elif _is_integer(dtype) or _is_float(dtype):
        as_float = col.cast(pl.Float64)
        digits = (
            as_float.abs().round(0).cast(pl.Int64, strict=False).cast(pl.String).str.len_chars()
        )
        exprs += [
            ((as_float % 1) == 0).all(ignore_nulls=True).alias(_key(index, "whole")),
            as_float.min().alias(_key(index, "lo")),
            as_float.max().alias(_key(index, "hi")),
            digits.min().alias(_key(index, "minlen")),
            digits.max().alias(_key(index, "maxlen")),
        ]
    return exprs


def _looks_assigned(
    distinct: int, non_null: int, lo: float | None, hi: float | None, minlen: Any, maxlen: Any
) -> bool:
    """Near-unique integers that look like numbers given to records (see module docstring)."""
    if non_null == 0 or distinct < IDENTIFIER_MIN_DISTINCT:
        return False
    if distinct / non_null < IDENTIFIER_UNIQUE_SHARE:
        return False
    fixed_width = minlen is not None and minlen == maxlen and int(minlen) >= IDENTIFIER_MIN_DIGITS
    consecutive = lo is not None and hi is not None and hi - lo + 1 == distinct
    return bool(fixed_width or consecutive)


def _classify(
    plan: _Plan,
    stats: dict[str, Any],
    evidence: dict[str, Any],
    provisional: tuple[str, str | None],
) -> None:
    """Set plan.inferred_type and plan.typed from the exact counts and the sample evidence."""
    dtype, col, index = plan.dtype, pl.col(plan.name), plan.position

    def get(what: str) -> Any:
        return stats[_key(index, what)]

    if plan.non_null == 0:
        plan.inferred_type = "empty"
        return
    unique_share = plan.distinct / plan.non_null
    if dtype == pl.Boolean:
        plan.inferred_type = "boolean"
        return
    if _is_integer(dtype) or _is_float(dtype):
        whole = bool(get("whole"))
        assigned = _looks_assigned(
            plan.distinct, plan.non_null, get("lo"), get("hi"), get("minlen"), get("maxlen")
        )
        plan.inferred_type = ("identifier_like" if assigned else "integer") if whole else "decimal"
        plan.typed = col.cast(pl.Int64) if whole else col.cast(pl.Float64)
        return
    if dtype == pl.Date:
        plan.inferred_type, plan.typed = "date", col
        return
    if isinstance(dtype, pl.Datetime):
        plan.inferred_type, plan.typed = "datetime", col
        return
    if not _is_string(dtype):
        plan.inferred_type = "categorical"
        return

    stripped = col.str.strip_chars()
    plan.mean_length = float(get("len")) if get("len") is not None else None
    kind, layout = provisional
    if kind == "boolean" and plan.distinct <= 2:
        plan.inferred_type = "boolean"
        return
    if kind == "integer":
        assigned = _looks_assigned(
            plan.distinct, plan.non_null, get("lo"), get("hi"), get("minlen"), get("maxlen")
        )
        plan.inferred_type = "identifier_like" if assigned else "integer"
        plan.typed = stripped.cast(pl.Int64, strict=False)
        return
    if kind == "decimal":
        plan.inferred_type = "decimal"
        plan.typed = stripped.cast(pl.Float64, strict=False)
        return
    if kind == "date" and layout is not None:
        plan.inferred_type = "date"
        plan.typed = stripped.str.to_date(layout, strict=False)
        return
    if kind == "datetime" and layout is not None:
        plan.inferred_type = "datetime"
        plan.typed = stripped.str.to_datetime(layout, strict=False, time_unit="us")
        return
    words = evidence.get(_key(index, "words"))
    if (
        plan.mean_length is not None
        and plan.mean_length > FREE_TEXT_MIN_MEAN_LENGTH
        and words is not None
        and words >= FREE_TEXT_MIN_MEAN_WORDS
        and (unique_share >= FREE_TEXT_MIN_UNIQUE_SHARE or plan.distinct >= FREE_TEXT_MIN_DISTINCT)
    ):
        plan.inferred_type = "free_text"
        return
    if unique_share >= IDENTIFIER_UNIQUE_SHARE and plan.distinct >= IDENTIFIER_MIN_DISTINCT:
        plan.inferred_type = "identifier_like"
        return
    plan.inferred_type = "categorical"


def _text(value: Any) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _short(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= SAMPLE_MAX_CHARS else text[: SAMPLE_MAX_CHARS - 1] + "…"


# --------------------------------------------------------------------------- histograms


def _bins(plan: _Plan, lo: Any, hi: Any) -> tuple[pl.Expr, list[str]] | None:
    """(bin index expression, labels) for numeric and date columns; None if not binnable."""
    if lo is None or hi is None or plan.typed is None:
        return None
    kind = plan.inferred_type
    if kind in ("date", "datetime"):
        as_date = plan.typed.dt.date() if kind == "datetime" else plan.typed
        values = as_date.cast(pl.Int32)
        start = (lo.date() if isinstance(lo, dt.datetime) else lo).toordinal()
        stop = (hi.date() if isinstance(hi, dt.datetime) else hi).toordinal()
        epoch = dt.date(1970, 1, 1).toordinal()
        index, edges = _integer_bins(values, start - epoch, stop - epoch)
        labels = [
            _range_label(dt.date.fromordinal(a + epoch).isoformat(),
                         dt.date.fromordinal(b + epoch).isoformat())
            for a, b in edges
        ]  # fmt: skip
        return index, labels
    if kind == "integer" and isinstance(lo, int | float):
        index, edges = _integer_bins(plan.typed.cast(pl.Int64), int(lo), int(hi))
        return index, [_range_label(str(a), str(b)) for a, b in edges]
    if kind == "decimal":
        low, high = float(lo), float(hi)
        if not (math.isfinite(low) and math.isfinite(high)):
            return None
        if high == low:
            return pl.lit(0, dtype=pl.Int64), [_range_label(_text(low), _text(high))]
        width = (high - low) / HISTOGRAM_BINS
        index = ((plan.typed - low) / width).floor().clip(0, HISTOGRAM_BINS - 1).cast(pl.Int64)
        labels = [
            _range_label(_text(low + i * width), _text(low + (i + 1) * width))
            for i in range(HISTOGRAM_BINS)
        ]
        return index, labels
    return None


def _integer_bins(values: pl.Expr, lo: int, hi: int) -> tuple[pl.Expr, list[tuple[int, int]]]:
    span = hi - lo + 1
    width = max(1, math.ceil(span / HISTOGRAM_BINS))
    count = math.ceil(span / width)
    edges = [(lo + i * width, min(hi, lo + (i + 1) * width - 1)) for i in range(count)]
    index = ((values.cast(pl.Int64) - lo) // width).clip(0, count - 1)
    return index, edges


def _range_label(lo: str, hi: str) -> str:
    return lo if lo == hi else f"{lo}–{hi}"
