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

The stored form is in :mod:`apps.datasets.column_profile`, the type rules and histograms in
:mod:`apps.datasets.profile_rules`; this module plans the batches and runs the queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow.parquet as pq

from apps.datasets.column_profile import INFERRED_TYPES, ColumnProfile, DatasetProfile
from apps.datasets.containers import decoded_column_bytes
from apps.datasets.profile_rules import (
    DATE_FORMATS,
    DATETIME_FORMATS,
    FREE_TEXT_MIN_DISTINCT,
    FREE_TEXT_MIN_UNIQUE_SHARE,
    SAMPLE_BYTES,
    SAMPLE_VALUES,
    TOP_VALUES,
    TYPE_SAMPLE_MIN_CHARS,
    TYPE_SAMPLE_ROWS,
    TYPE_SHARE,
    _bins,
    _classify,
    _evidence_exprs,
    _full_exprs,
    _is_string,
    _key,
    _Plan,
    _provisional,
    _short,
)
from apps.engine.slices import HASH_SLICE_VALUES, hash_slices

__all__ = [
    "DATE_FORMATS",
    "DATETIME_FORMATS",
    "FREE_TEXT_MIN_DISTINCT",
    "FREE_TEXT_MIN_UNIQUE_SHARE",
    "INFERRED_TYPES",
    "TYPE_SHARE",
    "ColumnProfile",
    "DatasetProfile",
    "column_batches",
    "profile_parquet",
]

# Columns profiled together: at most this many, holding at most this much uncompressed data.
PROFILE_MAX_BATCH = 100
PROFILE_MEMORY_BUDGET = 512 * 1024**2
# A batch this small once decoded is read into memory: polars' streaming engine costs a few
# milliseconds per query, which on a wide file of few rows is most of the time (2,000
# columns: 17 s → 3 s).
IN_MEMORY_BYTES = 64 * 1024**2
# Distinct values counted exactly in one streaming pass at most: above, in hash slices of
# this many (apps.engine.slices.hash_slices).
EXACT_DISTINCT_CHUNK = HASH_SLICE_VALUES

Progress = Callable[[int, str], None]
Engine = Literal["streaming", "in-memory"]


def _collect(frame: pl.LazyFrame, engine: Engine = "streaming") -> pl.DataFrame:
    return frame.collect(engine=engine)


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
