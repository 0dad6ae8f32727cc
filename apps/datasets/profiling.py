"""Column profiles of a stored Parquet data set: counts, types, ranges and distributions.

Few scans of the file per batch of columns (a hundred columns, or fewer when they hold
much data: `column_batches`), each one polars query over the batch's columns run by the
streaming engine: (0) a sample of up to 20 000 rows spread over the file,
on which text columns are tested against the type rules (parsing every value of a
multi-million-row file against ten date layouts would dominate the run time); (1) exact
counts — missing and distinct values, lengths, ranges for the identifier rule; (2) ranges,
top values and examples; (3) histograms, whose bins need the ranges.

Bounded memory at any number of rows: a batch too large to read into memory (by its
decoded size, not its run-length-encoded one) runs only queries the streaming engine
executes chunk by chunk. Counting distinct values that way holds one entry per distinct
value, so each column is first estimated (HyperLogLog, a few kilobytes), and a column
with more than `EXACT_DISTINCT_CHUNK` distinct values is
counted exactly in several passes, each over the values whose hash falls in one slice
(the slices share no value, so their counts add up): memory holds one slice's values.
Examples come from one query per column that stops after its first non-missing values.

Type inference for text columns (CSV values are all stored as text). A column gets a type
when at least `TYPE_SHARE` (95 %) of its sampled non-missing values fit it, tried in this
order (values that do not fit are treated as missing in ranges and histograms):

- empty: no value at all.
- boolean: at most two distinct values, all from yes/no, true/false, y/n, t/f, 0/1, oui/non.
- integer: optional sign and digits. Digit strings with a leading zero (postal and health
  numbers, codes) are codes, not numbers: they go on to the text rules below.
- decimal: a number with a decimal point or an exponent.
- date: one date layout fits (ISO 1980-03-14, 14/03/1980, 03/14/1980, 14-MAR-1980, ...).
  Day-first wins a tie with month-first (the usual Canadian reading).
- datetime: a date with a time of day.
- free_text: long values made of words — mean length over 30 characters, at least 4 words
  on average, and values that vary: at least 10 % of them distinct, or 1 000 distinct
  values or more. (A coded list such as "I10 Essential hypertension" repeats far more;
  erring towards free text only costs a human review.)
- identifier_like: (near-)unique short values — at least 95 % of the non-missing values
  distinct and at least 10 of them. Integers count as identifier-like only when they look
  like numbers assigned to records: all the same number of digits (≥ 5), or a run of
  consecutive numbers (1, 2, 3, ...); an income column that happens to be unique does not.
- categorical: everything else — short values that repeat. Few distinct values relative
  to rows is the typical case (sex, province, education); longer repeating lists such as
  city or first name also land here.

Typed columns (Excel, Parquet, SAS, SPSS, Stata) keep their type; floats that are all whole
numbers count as integers, and the identifier rule above applies to integers of any origin.

Privacy: top values are not kept for identifier-like and free-text columns (every count
would be 1, and the profile would only copy identifiers into the database); examples are
limited to five short values.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow.parquet as pq

from apps.datasets.containers import decoded_column_bytes
from apps.engine.frame import HASH_SLICE_VALUES, hash_slices

__all__ = [
    "ColumnProfile",
    "DatasetProfile",
    "TYPE_SHARE",
    "profile_parquet",
]

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
# Columns profiled together: at most this many, holding at most this much uncompressed data.
PROFILE_MAX_BATCH = 100
PROFILE_MEMORY_BUDGET = 512 * 1024**2
# A batch this small once decoded is read into memory: polars' streaming engine costs a few
# milliseconds per query, which on a wide file of few rows is most of the time (2,000
# columns: 17 s → 3 s).
IN_MEMORY_BYTES = 64 * 1024**2
# Distinct values counted exactly in one streaming pass at most: above, in hash slices of
# this many (apps.engine.frame.hash_slices).
EXACT_DISTINCT_CHUNK = HASH_SLICE_VALUES

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

Progress = Callable[[int, str], None]

# Every type profiling infers (the module's docstring says when); their words for pages are in
# apps.core.labels.
INFERRED_TYPES = (
    "integer",
    "decimal",
    "date",
    "datetime",
    "categorical",
    "free_text",
    "identifier_like",
    "boolean",
    "empty",
)


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    position: int
    inferred_type: str  # one of INFERRED_TYPES
    missing: int
    distinct: int
    unique_share: float  # distinct / non-missing values (0 when the column is empty)
    min: str | None
    max: str | None
    top_values: tuple[tuple[str, int], ...]
    histogram: tuple[tuple[str, int], ...]
    mean_length: float | None
    sample_values: tuple[str, ...]


@dataclass(frozen=True)
class DatasetProfile:
    rows: int
    columns: tuple[ColumnProfile, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: tuples become lists."""
        return {"rows": self.rows, "columns": [_listify(asdict(c)) for c in self.columns]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetProfile:
        columns = []
        for item in data["columns"]:
            columns.append(
                ColumnProfile(
                    name=str(item["name"]),
                    position=int(item["position"]),
                    inferred_type=str(item["inferred_type"]),
                    missing=int(item["missing"]),
                    distinct=int(item["distinct"]),
                    unique_share=float(item["unique_share"]),
                    min=item.get("min"),
                    max=item.get("max"),
                    top_values=tuple((str(v), int(n)) for v, n in item.get("top_values", [])),
                    histogram=tuple((str(v), int(n)) for v, n in item.get("histogram", [])),
                    mean_length=(
                        None if item.get("mean_length") is None else float(item["mean_length"])
                    ),
                    sample_values=tuple(str(v) for v in item.get("sample_values", [])),
                )
            )
        return cls(rows=int(data["rows"]), columns=tuple(columns))

    def column(self, name: str) -> ColumnProfile:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)


def _listify(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_listify(v) for v in value]
    if isinstance(value, dict):
        return {k: _listify(v) for k, v in value.items()}
    return value


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


Engine = Literal["streaming", "in-memory"]


def _collect(frame: pl.LazyFrame, engine: Engine = "streaming") -> pl.DataFrame:
    return frame.collect(engine=engine)


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


# --------------------------------------------------------------------------- main


def profile_parquet(
    path: Path, *, progress: Progress | None = None, memory_budget: int | None = None
) -> DatasetProfile:
    """Profile every column of a Parquet file (see the module docstring for the rules).

    Columns are profiled in batches (`column_batches`) so that a wide file neither builds
    one query of hundreds of thousands of expressions nor holds every column's state at
    once: memory follows the batch, not the width. `progress(percent, message)` is called
    between the scans of each batch (0 → 100); a callback that raises stops the work there.
    """
    report: Progress = progress or (lambda _pct, _msg: None)
    frame = pl.scan_parquet(path)
    schema = frame.collect_schema()
    names: Sequence[str] = schema.names()
    report(0, "Counting values")
    rows = int(_collect(frame.select(pl.len())).item())
    batches = column_batches(path, budget=memory_budget or PROFILE_MEMORY_BUDGET)
    columns: list[ColumnProfile] = []
    for number, batch in enumerate(batches):

        def batch_report(
            pct: int, message: str, number: int = number, batch: ColumnBatch = batch
        ) -> None:
            if len(batches) > 1:
                positions = batch.positions
                message += f" (columns {positions.start + 1}–{positions.stop} of {len(names)})"
            report(int((number * 100 + pct) / len(batches)), message)

        engine: Engine = "in-memory" if _fits_in_memory(frame, schema, batch) else "streaming"
        columns += _profile_batch(frame, schema, names, batch.positions, rows, batch_report, engine)
    report(100, "Profile complete")
    return DatasetProfile(rows=rows, columns=tuple(columns))


@dataclass(frozen=True)
class ColumnBatch:
    positions: range
    size: int  # encoded bytes of these columns in the file, before compression
    decoded: int  # at least what they take once decoded (containers.decoded_column_bytes)


def column_batches(
    path: Path, *, budget: int = PROFILE_MEMORY_BUDGET, most: int = PROFILE_MAX_BATCH
) -> list[ColumnBatch]:
    """Consecutive column positions, grouped so that each group's encoded size (from the
    Parquet footer, an upper bound of what its distinct values and group-bys can hold) stays
    within `budget`, and no group has more than `most` columns (one query's width).

    Each group also carries its decoded size, which decides the engine: run-length and
    dictionary encoding make 200 million repeats of a value a few KB, which the in-memory
    engine would still hold as 200 million values."""
    metadata = pq.read_metadata(path)
    sizes = [0] * metadata.num_columns
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            sizes[column] += row_group.column(column).total_uncompressed_size
    decoded = decoded_column_bytes(metadata)
    batches: list[ColumnBatch] = []
    start, held = 0, 0
    for position, size in enumerate(sizes):
        if position > start and (held + size > budget or position - start >= most):
            batches.append(ColumnBatch(range(start, position), held, sum(decoded[start:position])))
            start, held = position, 0
        held += size
    if start < len(sizes):
        batches.append(ColumnBatch(range(start, len(sizes)), held, sum(decoded[start:])))
    return batches


def _fits_in_memory(frame: pl.LazyFrame, schema: pl.Schema, batch: ColumnBatch) -> bool:
    """Whether the batch's columns, decoded, stay within IN_MEMORY_BYTES. The footer tells
    the values (at least 8 or 16 bytes each), not how long a text is: a 50 KB text repeated
    takes a few bytes in the file. So the text's bytes are counted first, by one streaming
    pass (cheap: only a batch of few values gets this far)."""
    if batch.decoded > IN_MEMORY_BYTES:
        return False
    names = schema.names()
    texts = [names[i] for i in batch.positions if _is_string(schema[names[i]])]
    if not texts:
        return True
    lengths = frame.select(
        pl.sum_horizontal(pl.col(texts).str.len_bytes().cast(pl.Int64).sum()).alias("bytes")
    )
    return batch.decoded + int(_collect(lengths).item() or 0) <= IN_MEMORY_BYTES


def _streamed_distinct(frame: pl.LazyFrame, names: dict[int, str]) -> dict[str, int]:
    """Exact distinct non-missing values of each column, in memory bounded by
    `EXACT_DISTINCT_CHUNK` values (see the module docstring), keyed like `_full_exprs`."""
    estimates = _collect(
        frame.select(pl.col(name).approx_n_unique().alias(str(i)) for i, name in names.items())
    ).row(0, named=True)
    counts: dict[str, int] = {}
    for index, name in names.items():
        parts = hash_slices(
            frame.select(name).drop_nulls(), name, int(estimates[str(index)]), EXACT_DISTINCT_CHUNK
        )
        counts[_key(index, "distinct")] = sum(
            int(_collect(part.unique().select(pl.len())).item()) for part in parts
        )
    return counts


def _examples(frame: pl.LazyFrame, name: str, engine: Engine) -> list[Any]:
    """Up to `SAMPLE_VALUES` distinct values among the column's first 50 non-missing ones."""
    first = _collect(frame.select(pl.col(name)).drop_nulls().head(50), engine).get_column(name)
    return first.unique(maintain_order=True).head(SAMPLE_VALUES).to_list()


def _profile_batch(
    frame: pl.LazyFrame,
    schema: pl.Schema,
    all_names: Sequence[str],
    batch: range,
    rows: int,
    report: Progress,
    engine: Engine,
) -> list[ColumnProfile]:
    """The three scans of the module docstring, over the columns at positions `batch`."""
    names = {index: all_names[index] for index in batch}

    # Pass 1: type evidence on a sample of rows spread over the file, then exact counts.
    strings = [(i, name) for i, name in names.items() if _is_string(schema[name])]
    provisional: dict[int, tuple[str, str | None]] = {}
    evidence: dict[str, Any] = {}
    if strings:
        report(0, "Inferring types")
        step = max(1, rows // TYPE_SAMPLE_ROWS)
        # The start of each value is evidence enough (no number or date is that long), and
        # keeps the sample small whatever the texts' length (20,000 notes of 50 KB: 1 GB).
        chars = max(TYPE_SAMPLE_MIN_CHARS, SAMPLE_BYTES // (TYPE_SAMPLE_ROWS * len(strings)))
        sample = _collect(
            frame.select(pl.col(name).str.slice(0, chars) for _, name in strings)
            .gather_every(step)
            .head(TYPE_SAMPLE_ROWS),
            engine,
        )
        exprs = [e for i, name in strings for e in _evidence_exprs(i, name)]
        evidence = sample.head(TYPE_SAMPLE_ROWS).select(exprs).row(0, named=True)
        provisional = {i: _provisional(evidence, i) for i, _ in strings}
    report(10, "Counting missing and distinct values")
    # The in-memory engine counts distinct values of a small batch in the same query; the
    # streaming engine would hold every column of a large one for that (`_streamed_distinct`).
    in_memory = engine == "in-memory"
    exprs = [
        e
        for i, name in names.items()
        for e in _full_exprs(
            i, name, schema[name], provisional.get(i, ("", None))[0], distinct=in_memory
        )
    ]
    stats = _collect(frame.select(exprs), engine).row(0, named=True)
    if not in_memory:
        stats |= _streamed_distinct(frame, names)
    plans: list[_Plan] = []
    for index, name in names.items():
        missing = int(stats[_key(index, "missing")])
        plan = _Plan(
            name=name,
            position=index,
            dtype=schema[name],
            missing=missing,
            distinct=int(stats[_key(index, "distinct")]),
            non_null=rows - missing,
        )
        _classify(plan, stats, evidence, provisional.get(index, ("text", None)))
        plans.append(plan)
    report(35, "Types inferred; computing ranges and frequent values")

    # Pass 2: ranges, examples and top values.
    range_exprs: list[pl.Expr] = []
    for plan in plans:
        col = pl.col(plan.name)
        if plan.typed is not None:
            range_exprs += [plan.typed.min().alias(_key(plan.position, "min")),
                            plan.typed.max().alias(_key(plan.position, "max"))]  # fmt: skip
        elif plan.inferred_type in ("categorical", "boolean") and _is_string(plan.dtype):
            range_exprs += [col.min().alias(_key(plan.position, "min")),
                            col.max().alias(_key(plan.position, "max"))]  # fmt: skip
        if in_memory:
            range_exprs.append(
                col.drop_nulls().head(50).unique(maintain_order=True).head(SAMPLE_VALUES)
                .implode().alias(_key(plan.position, "sample"))
            )  # fmt: skip
    wants_top = [
        p for p in plans if p.inferred_type not in ("identifier_like", "free_text", "empty")
    ]
    # Most frequent first, ties in value order, so the same data always gives the same list.
    queries = [frame.select(range_exprs)] + [
        frame.select(pl.col(p.name).alias("value"))
        .drop_nulls()
        .group_by("value")
        .agg(pl.len().alias("count"))
        .sort(["count", "value"], descending=[True, False])
        .head(TOP_VALUES)
        for p in wants_top
    ]
    results = pl.collect_all(queries, engine=engine)
    ranges = results[0].row(0, named=True) if range_exprs else {}
    if not in_memory:
        for plan in plans:
            ranges[_key(plan.position, "sample")] = _examples(frame, plan.name, engine)
    tops: dict[str, tuple[tuple[str, int], ...]] = {}
    for plan, result in zip(wants_top, results[1:], strict=True):
        tops[plan.name] = tuple((_short(value), int(count)) for value, count in result.iter_rows())
    report(70, "Computing distributions")

    # Pass 3: histograms for numbers and dates.
    binned: dict[str, list[str]] = {}
    hist_queries: list[pl.LazyFrame] = []
    for plan in plans:
        spec = _bins(
            plan, ranges.get(_key(plan.position, "min")), ranges.get(_key(plan.position, "max"))
        )
        if spec is None:
            continue
        bin_index, labels = spec
        binned[plan.name] = labels
        hist_queries.append(
            frame.select(bin_index.alias("bin"))
            .drop_nulls()
            .group_by("bin")
            .agg(pl.len().alias("n"))
        )
    hist_results = pl.collect_all(hist_queries, engine=engine) if hist_queries else []
    histograms: dict[str, tuple[tuple[str, int], ...]] = {}
    for (name, labels), result in zip(binned.items(), hist_results, strict=True):
        counts = dict(
            zip(result.get_column("bin").to_list(), result.get_column("n").to_list(), strict=True)
        )
        histograms[name] = tuple((label, int(counts.get(i, 0))) for i, label in enumerate(labels))

    columns: list[ColumnProfile] = []
    for plan in plans:
        lo = ranges.get(_key(plan.position, "min"))
        hi = ranges.get(_key(plan.position, "max"))
        top = tops.get(plan.name, ())
        columns.append(
            ColumnProfile(
                name=plan.name,
                position=plan.position,
                inferred_type=plan.inferred_type,
                missing=plan.missing,
                distinct=plan.distinct,
                unique_share=round(plan.distinct / plan.non_null, 6) if plan.non_null else 0.0,
                min=None if lo is None else _short(lo),
                max=None if hi is None else _short(hi),
                top_values=top,
                histogram=histograms.get(plan.name, top if plan.typed is None else ()),
                mean_length=None if plan.mean_length is None else round(plan.mean_length, 3),
                sample_values=tuple(_short(v) for v in ranges[_key(plan.position, "sample")]),
            )
        )
    return columns
