"""Encoding a data set's quasi-identifiers (the basis of speed): a table read once
(``apps.engine.reading``) compressed to its distinct quasi-identifier tuples with their
counts, each value replaced by a small integer code (``apps.engine.encoded.EncodedData``).
A table in memory whose quasi-identifiers are text is coded value by value in compiled
code (``textcodes``): a small one in one compiled call, a larger one column by column, a
few columns at once; integer, boolean, date and
categorical columns are grouped on one packed key (``apps.engine.packed``); anything else
by a streaming group-by, the distinct table then coded. Every path gives the same
dictionaries (the texts of the values, sorted, missing last) and the same tuples.
Contract: docs/engine-contract.md (frame.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from apps.engine.encoded import (
    CODE_DTYPE,
    COUNT_COLUMN,
    EncodedData,
    from_tuples,
    sorted_dictionary,
)
from apps.engine.errors import EngineInputError
from apps.engine.packed import encode_packed, packable
from apps.engine.reading import check_columns, first_line, read_table
from apps.engine.textcodes import (
    ColumnCodes,
    code_column,
    code_table,
    dictionary_series,
    group_rows,
    joined_views,
)
from apps.engine.workers import Deferred, share_work


def encode(data: pl.LazyFrame | pl.DataFrame, quasi: Sequence[str]) -> EncodedData:
    """Compress the data to its distinct quasi-identifier tuples with counts.

    One streaming pass groups the rows (memory proportional to distinct tuples).
    Only then, on the small distinct table, are values turned into strings,
    dictionaries built (sorted values, missing value last) and codes assigned.

    A table already in memory (a DataFrame of at most :data:`IN_MEMORY_ROWS` rows) whose
    quasi-identifiers are text is encoded in compiled passes over its values instead
    (:func:`_encode_in_memory`).

    When every quasi-identifier is stored as integers, booleans, dates or
    categoricals (typical Parquet), the pass groups on one 64-bit key packing the
    columns' offsets from their minimum, found by a cheap first pass: grouping one
    integer is much faster than grouping several columns.  Otherwise (strings,
    floats, or more than 64 bits) it groups on the raw columns.
    """
    quasi = tuple(quasi)
    if isinstance(data, pl.DataFrame) and data.height <= IN_MEMORY_ROWS:
        check_columns(data.columns, quasi, "quasi-identifier")
        # (each column's type, not the schema: polars makes the schema anew on every read)
        columns = [data.get_column(q) for q in quasi]
        if all(isinstance(c.dtype, pl.String) for c in columns):  # (not ==: it runs Python)
            return _encode_in_memory(columns, quasi)
    frame = data.lazy()
    schema = frame.collect_schema()
    check_columns(schema.names(), quasi, "quasi-identifier")
    try:
        if all(packable(schema[q]) for q in quasi):
            packed = encode_packed(frame, quasi, [schema[q] for q in quasi])
            if packed is not None:
                return packed
        distinct = (
            frame.select(quasi)
            .group_by(quasi)
            .agg(pl.len().alias(COUNT_COLUMN))
            .collect(engine="streaming")
        )
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot read the data: {first_line(exc)}") from exc
    return encode_distinct(distinct, quasi)


#: Tables in memory up to this many rows are encoded value by value in compiled code
#: (:func:`_encode_in_memory`); larger ones, and lazy frames, by a streaming group-by.
IN_MEMORY_ROWS = 2_000_000
#: From this many rows the columns are coded by a few threads at once (below, a thread
#: costs more than it saves: on 2 cores at load 2.4-3, ARX's fars_subset (10,093 rows)
#: and adult (30,162) took 0.05-0.2 ms longer per protocol run with the second thread
#: than without, also when it got a core, and twice as long at the 75th percentile).
PARALLEL_ROWS = 50_000


def _encode_in_memory(columns: list[pl.Series], quasi: tuple[str, ...]) -> EncodedData:
    """Each column's values (``columns``: the String columns ``quasi``, at least one) to
    codes, its distinct values sorted and ranked (values
    compared exactly, read from the columns' string views), the dictionaries made, then
    the distinct rows of codes with their counts: the same dictionaries (the texts of the
    values, sorted, missing last) and tuples as the group-by of :func:`encode`.

    Below :data:`PARALLEL_ROWS` rows, all of it in one compiled call
    (textcodes.code_table): on so small a table the Python and the compiled calls around
    each column cost as much as coding it (ARX's adult_subset, 3,016 rows and 9 columns:
    the encoding took about half the time it took column by column, figures in
    ``textcodes/table.py``). From there on, each column in one compiled call
    (textcodes.code_column), several side by side, every dictionary made at once
    (textcodes.dictionary_series), the rows grouped in one more, in a thread."""
    n, d = len(columns[0]), len(quasi)
    if n < PARALLEL_ROWS:
        table = code_table(columns)
        if table is not None:  # (None: a column not handed over as string views)
            arrays = (table.grouped, table.counts)
            return EncodedData(quasi, table.dictionaries, rows=n, arrays=arrays, views=table.views)
    codes = np.empty((d, n), dtype=np.uint32)
    coded: list[ColumnCodes | None] = [None] * d

    def code(j: int) -> None:
        coded[j] = code_column(columns[j], codes[j])

    if d > 1 and n >= PARALLEL_ROWS:
        # (the compiled passes let go of the interpreter: columns are coded side by side)
        share_work(d, code)
    else:
        for j in range(d):
            code(j)
    done = [c for c in coded if c is not None]
    ranks = [c.rank for c in done]
    radix = np.array([len(r) for r in ranks], dtype=np.int64)
    rank_at = np.zeros(d, dtype=np.int64)
    if d:
        np.cumsum(radix[:-1], out=rank_at[1:])
    flat = np.concatenate(ranks) if ranks else np.zeros(0, dtype=np.uint32)
    views = joined_views([c.views for c in done])
    if n >= PARALLEL_ROWS:
        # (the grouping lets go of the interpreter: it starts before the dictionaries
        # are made, and the caller looks their values up meanwhile; EncodedData.arrays
        # waits for it)
        pending = Deferred(group_rows, codes, radix, flat, rank_at)
        dictionaries = tuple(dictionary_series(done))
        return EncodedData(quasi, dictionaries, rows=n, pending=pending, views=views)
    grouped, counts = group_rows(codes, radix, flat, rank_at)
    dictionaries = tuple(dictionary_series(done))
    return EncodedData(quasi, dictionaries, rows=n, arrays=(grouped, counts), views=views)


def encode_distinct(distinct: pl.DataFrame, quasi: Sequence[str]) -> EncodedData:
    """Encode an already grouped table (QI columns + "count") into codes and dictionaries."""
    quasi = tuple(quasi)
    texts = [q for q in quasi if distinct.schema[q] == pl.String]
    # Text columns: every sorted dictionary in one query, every code column in another.
    found = (
        distinct.select(
            *(pl.col(q).drop_nulls().unique().sort().implode().alias(q) for q in texts),
            *(pl.col(q).null_count().alias(f"{q}\0nulls") for q in texts),
        ).row(0, named=True)
        if texts
        else {}
    )
    columns: list[pl.Series | pl.Expr] = []
    dictionaries: list[pl.Series] = []
    merge = False
    for q in quasi:
        if q in texts:
            present: list[str] = found[q]
            missing = [None] if found[f"{q}\0nulls"] else []
            dictionaries.append(pl.Series(q, [*present, *missing], dtype=pl.String))
            enum = pl.col(q).cast(pl.Enum(present)).to_physical()
            columns.append(enum.cast(CODE_DTYPE).fill_null(len(present)))
        else:
            dictionary, codes, collided = _dictionary_and_codes(distinct.get_column(q))
            dictionaries.append(dictionary)
            columns.append(codes.alias(q))
            merge = merge or collided
    tuples = distinct.select(*columns, pl.col(COUNT_COLUMN))
    if merge:  # two raw values with the same text (e.g. floats): one class after all
        tuples = tuples.group_by(quasi).agg(pl.col(COUNT_COLUMN).sum())
    return from_tuples(quasi, dictionaries, tuples)


def _dictionary_and_codes(values: pl.Series) -> tuple[pl.Series, pl.Series, bool]:
    """Sorted distinct texts (missing last), each value's code, and whether texts collided."""
    raw = values.unique()
    labels = raw.cast(pl.String)
    dictionary = sorted_dictionary(values.name, labels)
    present = dictionary.drop_nulls()
    # Casting to an Enum of the sorted texts yields their positions as physical codes.
    code_of = labels.cast(pl.Enum(present.to_list())).to_physical().cast(CODE_DTYPE)
    codes = values.to_physical().replace_strict(
        raw.to_physical(), code_of.fill_null(present.len()), return_dtype=CODE_DTYPE
    )
    return dictionary, codes.fill_null(present.len()), dictionary.len() < raw.len()


def encode_file(path: str | Path, quasi: Sequence[str], *, sep: str | None = None) -> EncodedData:
    """read_table + encode, the common case of the command line and the jobs."""
    return encode(read_table(path, sep=sep), quasi)
