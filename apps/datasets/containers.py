"""What a compressed upload holds, measured without expanding it into memory.

A 490 KB workbook can expand to 168 MB of sheet XML and three million rows, a 1.5 KB one
can place a cell at column XFD, row 10,000 (its reader then holds 164 million cells), and a
1.5 MB Parquet file can hold 200 million rows. Readers such as calamine (behind fastexcel)
hold a whole sheet in memory, and polars decodes a whole Parquet row group at once. So
before a reader sees an upload, the ingest package compares these measurements with its
limits:

- an .xlsx is a ZIP archive: its central directory states every part's expanded size
  (`zip_expanded_size`), read without inflating anything;
- a sheet's extent — its declared range (`<dimension ref>`, which may be missing or lie)
  and the rows and columns its cells really reach — is found by inflating its XML as a
  stream and keeping nothing (`sheet_extent`): memory stays at one chunk, and the scan
  stops as soon as a bound is passed; its shared text values are counted the same way
  (`shared_strings`);
- a Parquet footer states the columns, rows, row groups and the size of the column data
  before compression (`parquet_footer`); that size is still dictionary- and
  run-length-encoded (a million repeats of one value take a few bytes), so the decoded
  size is taken as at least 8 bytes a value, 16 for text (what polars holds for a string
  before its characters) (`decoded_column_bytes`).
"""

from __future__ import annotations

import html
import posixpath
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

__all__ = [
    "ParquetFooter",
    "SheetExtent",
    "column_number",
    "decoded_column_bytes",
    "parquet_footer",
    "shared_strings",
    "sheet_extent",
    "sheet_parts",
    "sheet_rows",
    "workbook_sheets",
    "zip_expanded_size",
]

_CHUNK = 1 << 20
# A tag is never longer than this: what is carried over from one chunk to the next.
_CARRY = 4096
# Any namespace prefix ("<x:row>" as well as "<row>").
_PREFIX = rb"<(?:[A-Za-z_][\w.-]*:)?"
# Rows and cells in document order, with their reference however it is written.
_ROW_OR_CELL = re.compile(
    rb"<((?:[A-Za-z_][\w.-]*:)?(?:row|c))(?=[\s/>])(?:[^>]*?\sr\s*=\s*[\"']([^\"']*))?"
)
_ROOT = re.compile(rb"<([A-Za-z_][\w.-]*:)?worksheet[\s>]")
_DIMENSION = re.compile(_PREFIX + rb"dimension\s[^>]*?\bref=\"([^\"]*)\"")
_CORNER = re.compile(r"\$?([A-Za-z]{0,4})\$?(\d{0,9})")
_SHARED_STRING = re.compile(_PREFIX + rb"si[\s>]")
# Parts read whole to learn the sheets' names: never larger than this in a real workbook.
_SMALL_PART = 16 * 1024**2


def zip_expanded_size(path: Path) -> int:
    """The sum of the expanded sizes of the archive's members, from its central directory."""
    with zipfile.ZipFile(path) as archive:
        return sum(info.file_size for info in archive.infolist())


def sheet_parts(path: Path) -> list[str]:
    """The worksheet XML parts of a workbook (xl/worksheets/*.xml)."""
    with zipfile.ZipFile(path) as archive:
        return [
            name
            for name in archive.namelist()
            if name.startswith("xl/worksheets/") and name.endswith(".xml")
        ]


def _attributes(tag: str) -> dict[str, str]:
    """The attributes of one start tag, by local name (r:id → id), values unescaped."""
    return {
        name.rsplit(":", 1)[-1]: html.unescape(value)
        for name, value in re.findall(r"([\w:.-]+)\s*=\s*\"([^\"]*)\"", tag)
    }


def _read_small(archive: zipfile.ZipFile, name: str) -> str:
    with archive.open(name) as stream:
        data = stream.read(_SMALL_PART + 1)
    if len(data) > _SMALL_PART:
        raise ValueError(f"{name} is larger than any workbook writes it")
    return data.decode("utf-8", errors="replace")


def workbook_sheets(path: Path) -> list[tuple[str, str]]:
    """(name, part) of each worksheet, in the workbook's order (the order readers list
    them in); [] when the workbook does not say (then every sheet part is measured)."""
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if not {"xl/workbook.xml", "xl/_rels/workbook.xml.rels"} <= names:
            return []
        workbook = _read_small(archive, "xl/workbook.xml")
        relations = _read_small(archive, "xl/_rels/workbook.xml.rels")
    targets: dict[str, str] = {}
    for tag in re.findall(r"<(?:[\w.-]+:)?Relationship\s[^>]*>", relations):
        attributes = _attributes(tag)
        target = attributes.get("Target", "")
        target = target.lstrip("/") if target.startswith("/") else posixpath.join("xl", target)
        targets[attributes.get("Id", "")] = posixpath.normpath(target)
    sheets = []
    for tag in re.findall(r"<(?:[\w.-]+:)?sheet\s[^>]*>", workbook):
        attributes = _attributes(tag)
        part = targets.get(attributes.get("id", ""))
        if part in names and part.startswith("xl/worksheets/"):
            sheets.append((attributes.get("name", ""), part))
    return sheets


def column_number(letters: str) -> int:
    """A → 1, Z → 26, AA → 27, XFD → 16,384."""
    number = 0
    for letter in letters.upper():
        number = number * 26 + ord(letter) - 64
    return number


def column_letters(number: int) -> str:
    letters = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


@dataclass(frozen=True)
class SheetExtent:
    """How far a sheet reaches, counted from A1 (a reader allocates every cell from its
    first to its last; counting from A1 never says less). Rows and columns are "at least"
    when the scan stopped at a bound."""

    rows: int  # the last row: the highest row or cell number, or the rows counted
    columns: int  # the last column reached by a cell
    widest: str  # the reference of a cell in the last column ("" when no cell)
    declared: str  # the range the sheet declares (<dimension ref>), "" when none
    declared_rows: int
    declared_columns: int
    cell_elements: int  # the cells written (a reader holds each, even those in one place)

    @property
    def cells(self) -> int:
        """The cells a reader holds: every one of the range, or every one written."""
        return max(self.rows * self.columns, self.cell_elements)


def _declared(ref: str) -> tuple[int, int]:
    """(last row, last column) of a range such as A1:XFD10000 (or a single cell)."""
    rows = columns = 0
    for corner in ref.split(":"):
        match = _CORNER.fullmatch(corner.strip())
        if match is None:
            continue
        letters, digits = match.groups()
        columns = max(columns, column_number(letters) if letters else 0)
        rows = max(rows, int(digits) if digits else 0)
    return rows, columns


def _chunks(path: Path, part: str) -> Iterator[bytes]:
    """The part's XML in pieces that never cut a tag (each ends before a "<")."""
    carry = b""
    with zipfile.ZipFile(path) as archive, archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            buffer = carry + chunk
            # Tags hold no "<" after their first byte, so every tag starting before the last
            # "<" ends before it: hand out up to there, carry the rest to the next chunk.
            cut = buffer.rfind(b"<")
            if cut < 0 or len(buffer) - cut > _CARRY:
                cut = len(buffer)
            yield buffer[:cut]
            carry = buffer[cut:]
    if carry:
        yield carry


_WHITESPACE = b" \t\n\r"
_PAD = 32  # zero bytes after a chunk, so that a window read past its end stays inside


@dataclass
class _Place:
    """Where the scan is: the last row, and the last cell's column within it."""

    row: int = 0
    column: int = 0


def _starting(data: np.ndarray, candidates: np.ndarray, literal: bytes) -> np.ndarray:
    """The candidate positions at which `literal` is written."""
    for offset, byte in enumerate(literal):
        candidates = candidates[data[candidates + offset] == byte]
    return candidates


def _table(allowed: bytes) -> np.ndarray:
    table = np.zeros(256, bool)
    table[np.frombuffer(allowed, np.uint8)] = True
    return table


_ENDS_NAME = _table(_WHITESPACE + b"/>")
_ENDS_R = _table(_WHITESPACE + b"=")
_POSITIONS = np.arange(16)


def _among(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Which of `values` are in `sorted_set` (both sorted, as positions in a chunk are)."""
    found = np.searchsorted(sorted_set, values)
    inside = found < len(sorted_set)
    hit = np.zeros(len(values), bool)
    hit[inside] = sorted_set[found[inside]] == values[inside]
    return hit


def _references(data: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(column, row) numbers of the references whose value starts at `starts` (after r="),
    and whether every one is written plainly: A–Z letters (at most 4), 1–9 digits, '"'."""
    window = data[starts[:, None] + _POSITIONS]
    upper = (window >= 65) & (window <= 90)
    digit = (window >= 48) & (window <= 57)
    letters = np.argmin(upper, axis=1)
    after = letters[:, None] <= _POSITIONS
    stop = np.argmax(after & ~digit, axis=1)
    digits = stop - letters
    closing = np.take_along_axis(window, stop[:, None], axis=1)[:, 0]
    plain = (letters <= 4) & (digits >= 1) & (digits <= 9) & (closing == ord('"'))
    if not plain.all():
        return letters, digits, False
    # Horner's rule over the window's positions, one vector operation per position.
    column = np.zeros(len(starts), np.int64)
    row = np.zeros(len(starts), np.int64)
    for position in range(16):
        value = window[:, position].astype(np.int64)
        column = np.where(position < letters, column * 26 + value - 64, column)
        in_digits = (letters <= position) & (position < stop)
        row = np.where(in_digits, row * 10 + value - 48, row)
    return column, row, True


# What a chunk reaches: (last row, last column, a cell in that column, row and cell tags).
_Reach = tuple[int, int, str, int, int]


def _scan_plain(text: bytes, prefix: bytes, place: _Place) -> _Reach | None:
    """What a chunk reaches, computed with numpy over the whole chunk at once, when every
    reference in it is written as Excel writes it (r="A1" right after the element's name);
    None otherwise. Rows and cells without a reference follow the previous one, as
    readers place them. Moves `place` to the chunk's end."""
    data = np.frombuffer(text + bytes(_PAD), np.uint8)
    opening = np.flatnonzero(data[: len(text)] == ord("<"))
    row_name, cell_name = prefix + b"row", prefix + b"c"
    row_tags = _starting(data, opening + 1, row_name)
    row_tags = row_tags[_ENDS_NAME[data[row_tags + len(row_name)]]] - 1
    cell_tags = _starting(data, opening + 1, cell_name)
    cell_tags = cell_tags[_ENDS_NAME[data[cell_tags + len(cell_name)]]] - 1
    # Every r attribute of the chunk, however written, against those written plainly.
    # (Bytes up to the space include every whitespace: counting a few more is harmless.)
    spaces = np.flatnonzero(data[: len(text)] <= 32)
    any_r = _starting(data, spaces + 1, b"r")
    any_r = any_r[_ENDS_R[data[any_r + 1]]]
    row_ref = _starting(data, row_tags + 1 + len(row_name), b' r="')
    cell_ref = _starting(data, cell_tags + 1 + len(cell_name), b' r="')
    if len(any_r) != len(row_ref) + len(cell_ref):
        return None
    row_columns, row_numbers, row_plain = _references(data, row_ref + 4)
    cell_columns, cell_rows, cell_plain = _references(data, cell_ref + 4)
    if not (row_plain and cell_plain) or (row_columns > 0).any():
        return None
    # Rows: a stated number, else the previous row's plus one.
    stated = np.full(len(row_tags), -1, np.int64)
    stated[_among(row_tags + 1 + len(row_name), row_ref)] = row_numbers
    index = np.arange(len(row_tags))
    last = np.maximum.accumulate(np.where(stated >= 0, index, -1)) if len(index) else index
    numbers = np.where(last >= 0, stated[np.maximum(last, 0)] + index - last, place.row + index + 1)
    # Cells: a stated place, else the next column of the row they are in.
    in_row = np.searchsorted(row_tags, cell_tags) - 1  # -1: the row the chunk started in
    cell_stated = np.full(len(cell_tags), -1, np.int64)
    cell_stated_row = np.full(len(cell_tags), -1, np.int64)
    where = _among(cell_tags + 1 + len(cell_name), cell_ref)
    cell_stated[where], cell_stated_row[where] = cell_columns, cell_rows
    order = np.arange(len(cell_tags))
    starts_row = np.ones(len(cell_tags), bool)
    starts_row[1:] = in_row[1:] != in_row[:-1]
    anchor = (
        np.maximum.accumulate(np.where((cell_stated >= 0) | starts_row, order, -1))
        if len(order)
        else order
    )
    anchored = np.maximum(anchor, 0)
    start_column = np.where(in_row[anchored] < 0, place.column, 0)
    columns = np.where(
        cell_stated[anchored] >= 0,
        cell_stated[anchored] + order - anchor,
        start_column + order - anchor + 1,
    )
    row_of_cell = np.where(
        cell_stated_row >= 0,
        cell_stated_row,
        np.where(in_row >= 0, numbers[np.maximum(in_row, 0)] if len(numbers) else 0, place.row),
    )
    rows = max(int(numbers.max(initial=0)), int(row_of_cell.max(initial=0)))
    widest_column, widest = 0, ""
    if len(columns):
        at = int(np.argmax(columns))
        widest_column = int(columns[at])
        widest = f"{column_letters(widest_column)}{int(row_of_cell[at])}"
    if len(numbers):
        place.row, place.column = int(numbers[-1]), 0
    if len(cell_tags) and in_row[-1] == len(row_tags) - 1:
        place.column = int(columns[-1])
    return rows, widest_column, widest, len(row_tags), len(cell_tags)


def _scan_general(text: bytes, place: _Place) -> _Reach:
    """The same as `_scan_plain`, element by element with Python's re: for references
    written otherwise (single quotes, spaces around '=', character references, another
    prefix), which no common writer produces."""
    rows = columns = row_tags = cell_tags = 0
    widest = ""
    for kind, value in _ROW_OR_CELL.findall(text):
        letters, digits = _split_reference(value)
        if kind.endswith(b"row"):
            row_tags += 1
            place.row, place.column = (int(digits) if digits else place.row + 1), 0
            rows = max(rows, place.row)
            continue
        cell_tags += 1
        place.column = column_number(letters) if letters else place.column + 1
        row = int(digits) if digits else place.row
        rows = max(rows, row)
        if place.column > columns:
            columns, widest = place.column, f"{column_letters(place.column)}{row}"
    return rows, columns, widest, row_tags, cell_tags


def _split_reference(value: bytes) -> tuple[str, str]:
    text = html.unescape(value.decode("utf-8", errors="replace")).strip()
    found = re.fullmatch(r"([A-Za-z]{0,4})(\d{0,9})", text)
    return (found.group(1), found.group(2)) if found else ("", "")


def sheet_extent(
    path: Path,
    part: str,
    *,
    stop_rows: int | None = None,
    stop_columns: int | None = None,
    stop_cells: int | None = None,
) -> SheetExtent:
    """The sheet's declared range and the rows and columns its cells really reach.

    Inflates the part as a stream, one chunk at a time, keeping only counters, and returns
    as soon as one of the `stop_*` bounds is passed (a bomb is measured only as far as
    needed to refuse it). Rows and cells that state no reference (r="...") follow the
    previous one, as readers place them.
    """
    rows = columns = counted_rows = counted_cells = 0
    widest = declared = ""
    declared_rows = declared_columns = 0
    place = _Place()
    prefix = b""
    for index, text in enumerate(_chunks(path, part)):
        if index == 0:
            if root := _ROOT.search(text):
                prefix = root.group(1) or b""
            if found := _DIMENSION.search(text):
                declared = found.group(1).decode("ascii", errors="replace")
                declared_rows, declared_columns = _declared(declared)
        # Rows or cells under another prefix than the root's: the general path.
        ours = text.count(b"<" + prefix + b"row") + text.count(b"<" + prefix + b"c")
        colons = text.count(b":row") + text.count(b":c")
        alone = (text.count(b"<row") + text.count(b"<c")) if prefix else 0
        scanned = None
        if colons == (ours if prefix else 0) and alone == 0:
            scanned = _scan_plain(text, prefix, place)
        if scanned is None:
            scanned = _scan_general(text, place)
        chunk_rows, chunk_columns, chunk_widest, row_tags, cell_tags = scanned
        counted_rows += row_tags
        counted_cells += cell_tags
        rows = max(rows, chunk_rows)
        if chunk_columns > columns:
            columns, widest = chunk_columns, chunk_widest
        # Row elements that repeat a number still take a reader's time and memory.
        rows = max(rows, counted_rows)
        # What the sheet declares counts as reached: refused without reading further.
        reach_rows, reach_columns = max(rows, declared_rows), max(columns, declared_columns)
        if (
            (stop_rows is not None and reach_rows > stop_rows)
            or (stop_columns is not None and reach_columns > stop_columns)
            or (
                stop_cells is not None
                and max(reach_rows * reach_columns, counted_cells) > stop_cells
            )
        ):
            break
    return SheetExtent(
        rows=rows,
        columns=columns,
        widest=widest,
        declared=declared,
        declared_rows=declared_rows,
        declared_columns=declared_columns,
        cell_elements=counted_cells,
    )


def sheet_rows(path: Path, part: str, *, stop_above: int) -> int:
    """How many rows the sheet part spans (see `sheet_extent`), counted up to `stop_above`."""
    return sheet_extent(path, part, stop_rows=stop_above).rows


def shared_strings(path: Path, *, stop_above: int) -> int:
    """How many shared text values the workbook holds (xl/sharedStrings.xml, read whole by
    readers), counted as a stream up to `stop_above`."""
    with zipfile.ZipFile(path) as archive:
        if "xl/sharedStrings.xml" not in archive.namelist():
            return 0
    count = 0
    for text in _chunks(path, "xl/sharedStrings.xml"):
        count += len(_SHARED_STRING.findall(text))
        if count > stop_above:
            break
    return count


# The fewest bytes a value takes once decoded: a 64-bit number; polars' text values take 16
# bytes each before their characters.
DECODED_VALUE_BYTES = 8
DECODED_TEXT_BYTES = 16


@dataclass(frozen=True)
class ParquetFooter:
    columns: int
    rows: int
    uncompressed_bytes: int  # encoded, before compression
    decoded_bytes: int  # at least what the columns take once decoded
    largest_row_group: int  # rows

    @property
    def expanded_bytes(self) -> int:
        """A lower bound of the decoded size: the encoded size, or 8 bytes a value (16 a
        text value), whichever is larger."""
        return max(self.uncompressed_bytes, self.decoded_bytes)


def decoded_column_bytes(metadata: pq.FileMetaData) -> list[int]:
    """For each column, at least what it takes once decoded: its encoded size summed over
    the row groups, or its values times their smallest decoded width, whichever is larger."""
    encoded = [0] * metadata.num_columns
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            encoded[column] += row_group.column(column).total_uncompressed_size
    schema = metadata.schema
    sizes = []
    for column in range(metadata.num_columns):
        physical = schema.column(column).physical_type
        width = DECODED_TEXT_BYTES if physical == "BYTE_ARRAY" else DECODED_VALUE_BYTES
        sizes.append(max(encoded[column], metadata.num_rows * width))
    return sizes


def parquet_footer(path: Path) -> ParquetFooter:
    """Columns, rows and sizes of the column data, as the footer states them."""
    metadata = pq.read_metadata(path)
    uncompressed = sum(
        metadata.row_group(group).column(column).total_uncompressed_size
        for group in range(metadata.num_row_groups)
        for column in range(metadata.row_group(group).num_columns)
    )
    decoded = sum(
        metadata.num_rows
        * (
            DECODED_TEXT_BYTES
            if metadata.schema.column(column).physical_type == "BYTE_ARRAY"
            else DECODED_VALUE_BYTES
        )
        for column in range(metadata.num_columns)
    )
    largest = max(
        (metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)),
        default=0,
    )
    return ParquetFooter(
        columns=int(metadata.num_columns),
        rows=int(metadata.num_rows),
        uncompressed_bytes=int(uncompressed),
        decoded_bytes=int(decoded),
        largest_row_group=int(largest),
    )
