"""Reading a data set and encoding its quasi-identifiers (the basis of speed).

Every risk figure depends only on how many rows share each combination of
quasi-identifier values, so the data is read once and compressed to the table of
distinct quasi-identifier tuples with their counts ("tuples"), each value replaced
by a small integer code.  Everything later (risk, generalization, search) works on
that table, whose size is the number of distinct tuples, never the number of rows.

Contract: docs/engine-contract.md (frame.py).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import EngineInputError, preview
from apps.engine.textcodes import ColumnCodes, TextViews, code_column, dictionary_series, group_rows
from apps.engine.utf8 import check_utf8
from apps.engine.workers import Deferred, share_work

CODE_DTYPE = pl.UInt32
COUNT_COLUMN = "count"

_CSV_SUFFIXES = {".csv", ".tsv", ".txt", ".tab", ""}
_PARQUET_SUFFIXES = {".parquet", ".pq"}
_SEPARATOR_CANDIDATES = (",", ";", "\t", "|")


class EncodedData:
    """A data set reduced to its distinct quasi-identifier tuples.

    `dictionaries[j][code]` is the value (a string, or None for the missing value)
    that code `code` stands for in column `quasi[j]` of `tuples`.  Rows of `tuples`
    come in no particular order; `tuples["count"]` sums to `rows`.

    Encoded in memory (:func:`_encode_in_memory`), the tuples are held as arrays
    (`arrays`: codes ``[d x tuples]`` and counts), which the search reads directly; the
    `tuples` table is then made from them when first read. Their grouping may still be
    under way in another thread when this object is returned (the dictionaries are
    ready: a caller looks values up meanwhile); `arrays` waits for it. `views` then
    holds each dictionary's string views (read through the table's buffers), with which
    a hierarchy finds the values (`Hierarchy.lookup`) without reading them back from
    polars; else None.
    """

    __slots__ = ("quasi", "dictionaries", "rows", "views", "_arrays", "_pending", "_tuples")

    def __init__(
        self,
        quasi: tuple[str, ...],
        dictionaries: tuple[pl.Series, ...],
        tuples: pl.DataFrame | None = None,
        rows: int = 0,
        *,
        arrays: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]] | None = None,
        pending: Deferred[tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]] | None = None,
        views: tuple[TextViews, ...] | None = None,
    ) -> None:
        if tuples is None and arrays is None and pending is None:
            raise ValueError("EncodedData needs its tuples, as a table or as arrays")
        self.quasi = quasi
        self.dictionaries = dictionaries
        self.rows = rows
        self.views = views
        self._arrays = arrays
        self._pending = pending
        self._tuples = tuples

    @property
    def arrays(self) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]] | None:
        """Codes ``[d x tuples]`` and counts, when encoded in memory (else None)."""
        if self._pending is not None:
            self._arrays, self._pending = self._pending.result(), None
        return self._arrays

    @property
    def tuples(self) -> pl.DataFrame:
        if self._tuples is None:
            arrays = self.arrays
            assert arrays is not None
            codes, counts = arrays
            self._tuples = pl.DataFrame(
                [
                    *(pl.Series(q, codes[j], dtype=CODE_DTYPE) for j, q in enumerate(self.quasi)),
                    pl.Series(COUNT_COLUMN, counts, dtype=pl.UInt32),
                ]
            )
        return self._tuples

    @property
    def distinct_tuples(self) -> int:
        """Number of distinct quasi-identifier combinations (= classes before generalization)."""
        arrays = self.arrays if self._tuples is None else None
        if arrays is not None:
            return int(arrays[1].shape[0])
        return self.tuples.height

    def counts(self) -> pl.Series:
        """Rows per distinct tuple, as UInt64 (safe to sum)."""
        return self.tuples.get_column(COUNT_COLUMN).cast(pl.UInt64)

    def decoded(self) -> pl.DataFrame:
        """The tuples table with codes replaced by their values (for reports and tests)."""
        columns = [
            pl.Series(q, dictionary.to_list(), dtype=pl.String)
            .gather(self.tuples.get_column(q))
            .alias(q)
            for q, dictionary in zip(self.quasi, self.dictionaries, strict=True)
        ]
        return pl.DataFrame([*columns, self.tuples.get_column(COUNT_COLUMN)])


# --------------------------------------------------------------------------- reading


def read_table(
    path: str | Path, *, sep: str | None = None, null_values: Sequence[str] | None = None
) -> pl.LazyFrame:
    """Open a CSV/TSV or Parquet file lazily.

    CSV columns are all read as strings so that values are compared exactly as
    written ("007" stays "007"); an empty field is the missing value, as are the
    optional `null_values`.  The separator, when not given, is sniffed from the
    header line.  Parquet is read as stored (its types are kept: grouping on
    integers or categoricals is faster than on their strings).  CSV must be UTF-8
    (:func:`apps.engine.utf8.check_utf8` refuses it otherwise, naming line and byte).
    """
    file = Path(path)
    if not file.exists():
        raise EngineInputError(f"file not found: {file}")
    if not file.is_file():
        raise EngineInputError(f"not a file: {file}")
    if file.stat().st_size == 0:
        raise EngineInputError(f"empty file: {file}")
    suffix = file.suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        return _scan_parquet(file)
    if suffix in _CSV_SUFFIXES:
        return _scan_csv(file, sep=sep, null_values=null_values)
    raise EngineInputError(
        f"unsupported file format {suffix!r}: expected .csv, .tsv, .txt or .parquet ({file.name})"
    )


def _scan_parquet(file: Path) -> pl.LazyFrame:
    frame = pl.scan_parquet(file)
    try:
        frame.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise EngineInputError(f"cannot read Parquet file {file.name}: {_first_line(exc)}") from exc
    return frame


def _scan_csv(file: Path, *, sep: str | None, null_values: Sequence[str] | None) -> pl.LazyFrame:
    check_utf8(file)
    header, has_rows = _header_and_has_rows(file)
    if not header.strip():
        raise EngineInputError(f"empty file: {file} (no header line)")
    if not has_rows:
        raise EngineInputError(f"empty file: {file} (a header line but no data rows)")
    if sep is None:
        sep = "\t" if file.suffix.lower() == ".tsv" else sniff_separator(header)
    _check_separator(sep, header)
    frame = pl.scan_csv(
        file,
        separator=sep,
        infer_schema=False,  # every column as String: values stay exactly as written
        null_values=list(null_values) if null_values else None,
        encoding="utf8-lossy",
    )
    try:
        frame.collect_schema()
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot read CSV file {file.name}: {_first_line(exc)}") from exc
    return frame


def sniff_separator(header: str) -> str:
    """Guess the separator from the header line: the candidate appearing most often.

    Counting only outside quotes would be more exact, but headers rarely quote
    separators and the user can always pass `sep`.
    """
    counts = {candidate: header.count(candidate) for candidate in _SEPARATOR_CANDIDATES}
    best = max(counts, key=lambda candidate: counts[candidate])
    return best if counts[best] > 0 else ","


def _check_separator(sep: str, header: str) -> None:
    if len(sep) != 1 or len(sep.encode()) != 1:
        raise EngineInputError(f"bad separator {sep!r}: give a single one-byte character")
    if sep in ('"', "\n", "\r"):
        raise EngineInputError(f"bad separator {sep!r}")
    columns = next(csv.reader([header], delimiter=sep), [])
    others = [c for c in _SEPARATOR_CANDIDATES if c != sep and c in header]
    # A single column is legitimate, unless the header clearly uses another separator.
    if len(columns) <= 1 and others:
        raise EngineInputError(
            f"bad separator {sep!r}: the header has one column but contains {others[0]!r}"
        )


def _header_and_has_rows(file: Path) -> tuple[str, bool]:
    with file.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        header = handle.readline().lstrip("\ufeff").rstrip("\r\n")
        # Stops at the first non-blank line: cheap even for a huge file.
        has_rows = any(line.strip() for line in handle)
    return header, has_rows


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- encoding


def check_columns(schema_names: Sequence[str], wanted: Sequence[str], role: str) -> None:
    """Raise a one-line EngineInputError if a wanted column is absent or repeated."""
    if not wanted:
        raise EngineInputError(f"no {role} column given")
    unknown = [c for c in wanted if c not in schema_names]
    if unknown:
        raise EngineInputError(
            f"unknown {role} column(s): {preview(unknown)}; available: {', '.join(schema_names)}"
        )
    repeated = sorted({c for c in wanted if list(wanted).count(c) > 1})
    if repeated:
        raise EngineInputError(f"{role} column(s) given twice: {', '.join(repeated)}")


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
        schema = data.schema  # (made anew on every read: once, not per column)
        if all(schema[q] == pl.String for q in quasi):
            return _encode_in_memory(data, quasi)
    frame = data.lazy()
    schema = frame.collect_schema()
    check_columns(schema.names(), quasi, "quasi-identifier")
    try:
        if all(_packable(schema[q]) for q in quasi):
            packed = _encode_packed(frame, quasi, [schema[q] for q in quasi])
            if packed is not None:
                return packed
        distinct = (
            frame.select(quasi)
            .group_by(quasi)
            .agg(pl.len().alias(COUNT_COLUMN))
            .collect(engine="streaming")
        )
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot read the data: {_first_line(exc)}") from exc
    return encode_distinct(distinct, quasi)


#: Tables in memory up to this many rows are encoded value by value in compiled code
#: (:func:`_encode_in_memory`); larger ones, and lazy frames, by a streaming group-by.
IN_MEMORY_ROWS = 2_000_000
#: From this many rows the columns are coded by a few threads at once (below, a thread
#: costs more than it saves).
PARALLEL_ROWS = 5_000


def _encode_in_memory(data: pl.DataFrame, quasi: tuple[str, ...]) -> EncodedData:
    """Each column's values to codes, its distinct values sorted and ranked
    (textcodes.code_column: one compiled call over the column's string views, values
    compared exactly), every dictionary made at once (textcodes.dictionary_series), then
    the distinct rows of codes with their counts (one compiled pass): the same
    dictionaries (the texts of the values, sorted, missing last) and tuples as the
    group-by of :func:`encode`."""
    n, d = data.height, len(quasi)
    codes = np.empty((d, n), dtype=np.uint32)
    columns = [data.get_column(q) for q in quasi]
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
    views = tuple(c.views for c in done)
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
    return _encoded(quasi, dictionaries, tuples)


def _encoded(
    quasi: tuple[str, ...], dictionaries: list[pl.Series], tuples: pl.DataFrame
) -> EncodedData:
    rows = int(tuples.get_column(COUNT_COLUMN).cast(pl.UInt64).sum()) if tuples.height else 0
    return EncodedData(quasi=quasi, dictionaries=tuple(dictionaries), tuples=tuples, rows=rows)


def _sorted_dictionary(name: str, labels: pl.Series) -> pl.Series:
    present = labels.drop_nulls().unique().sort()
    missing = [None] if labels.null_count() else []
    return pl.Series(name, [*present.to_list(), *missing], dtype=pl.String)


def _dictionary_and_codes(values: pl.Series) -> tuple[pl.Series, pl.Series, bool]:
    """Sorted distinct texts (missing last), each value's code, and whether texts collided."""
    raw = values.unique()
    labels = raw.cast(pl.String)
    dictionary = _sorted_dictionary(values.name, labels)
    present = dictionary.drop_nulls()
    # Casting to an Enum of the sorted texts yields their positions as physical codes.
    code_of = labels.cast(pl.Enum(present.to_list())).to_physical().cast(CODE_DTYPE)
    codes = values.to_physical().replace_strict(
        raw.to_physical(), code_of.fill_null(present.len()), return_dtype=CODE_DTYPE
    )
    return dictionary, codes.fill_null(present.len()), dictionary.len() < raw.len()


# --------------------------------------------------------------------------- packed keys

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


def _packable(dtype: pl.DataType) -> bool:
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


def _encode_packed(
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
        dictionary = _sorted_dictionary(q, labels)
        present_labels = dictionary.drop_nulls()
        ranks = labels.cast(pl.Enum(present_labels.to_list())).to_physical()
        lookup = np.zeros(used_mask.size, dtype=np.uint32)
        lookup[used] = ranks.fill_null(present_labels.len()).to_numpy()
        dictionaries.append(dictionary)
        lookups.append(lookup)
    tuples = grouped.select(*_unpack_codes(quasi, slots, lookups), pl.col(COUNT_COLUMN))
    return _encoded(quasi, dictionaries, tuples)


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


def encode_file(path: str | Path, quasi: Sequence[str], *, sep: str | None = None) -> EncodedData:
    """read_table + encode, the common case of the command line and the jobs."""
    return encode(read_table(path, sep=sep), quasi)
