"""Read an uploaded file once and store it as Parquet, the one format every later step reads.

Supported: CSV/TSV text, Excel (.xlsx), Parquet, SAS (.sas7bdat, .xpt), SPSS (.sav, .zsav,
.por) and Stata (.dta). The extension says what a file should be; its first bytes must agree.

Text files keep every column as text, exactly as written (a postal code "K0A 1A0" or a
health number "0123456789" must not lose a leading zero to type guessing); profiling infers
types later without changing the stored values. Typed formats keep their types, except that
numbers stored as floating point but holding only whole numbers (how SAS, SPSS and Excel
store every number) become integers. In every format an empty text value is stored as
missing, and rows in which every value is missing are dropped with a warning.

Large files are streamed: text is checked line by line in one pass (exact line numbers for
every error), then converted by polars' streaming engine; statistical files are read in
chunks. The destination appears only when everything succeeded.

Every problem raises `IngestError` with a message a privacy officer can act on and a stable
`code` the interface can key on.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import datetime
import io
import os
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import charset_normalizer
import polars as pl

from apps.datasets import containers

__all__ = [
    "EXCEL_MAX_ROWS",
    "FORMATS_BY_EXTENSION",
    "IngestError",
    "IngestLimits",
    "IngestResult",
    "check_size",
    "convert_to_parquet",
    "detect_format",
    "human_size",
    "sniff_text",
]


class IngestError(Exception):
    """A file that cannot be taken in, with a readable message and where the problem is.

    `code` is one of: too_large, too_many_columns, too_many_rows, expands_too_much,
    empty_file, no_data_rows, unsupported_format, format_mismatch, unknown_encoding,
    encoding, ragged_rows, malformed_csv, unterminated_quote, duplicate_columns,
    empty_column_name, sheet_not_found, unsupported_column_type, corrupt.
    """

    def __init__(
        self, message: str, *, code: str, line: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.column = column


@dataclass(frozen=True)
class IngestResult:
    format: str
    rows: int
    columns: tuple[str, ...]
    delimiter: str | None
    encoding: str | None
    sheet: str | None
    warnings: tuple[str, ...]


# Excel's own limit of rows in a sheet: a "workbook" with more was not written by Excel.
EXCEL_MAX_ROWS = 1_048_576


@dataclass(frozen=True)
class IngestLimits:
    """Bounds checked before a file is read in full, so that no shape of file (10 000
    columns, a ZIP bomb) can make conversion or profiling outgrow memory.

    `max_columns`: any format. `max_expanded_bytes`: what an .xlsx may expand to (its
    reader holds a whole sheet in memory); `max_sheet_rows` the rows of any of its sheets.
    `max_parquet_expanded_bytes`: the uncompressed column data of a Parquet file (read by
    streaming, so this bounds time and disk rather than memory; None: no bound).
    """

    max_columns: int = 2000
    max_expanded_bytes: int = 1024**3
    max_sheet_rows: int = EXCEL_MAX_ROWS
    max_parquet_expanded_bytes: int | None = None


FORMATS_BY_EXTENSION: dict[str, str] = {
    ".csv": "csv",
    ".txt": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".parquet": "parquet",
    ".sas7bdat": "sas7bdat",
    ".xpt": "xpt",
    ".sav": "sav",
    ".zsav": "zsav",
    ".por": "por",
    ".dta": "dta",
}

_LABELS: dict[str, str] = {
    "csv": "CSV text",
    "tsv": "tab-separated text",
    "text": "plain text",
    "xlsx": "an Excel workbook (.xlsx)",
    "parquet": "a Parquet file",
    "sas7bdat": "a SAS data set (.sas7bdat)",
    "xpt": "a SAS transport file (.xpt)",
    "sav": "an SPSS data file (.sav)",
    "zsav": "a compressed SPSS data file (.zsav)",
    "por": "an SPSS portable file (.por)",
    "dta": "a Stata data file (.dta)",
    "ole": "a Microsoft Office 97–2003 document (such as an old .xls workbook)",
    "zip": "a ZIP archive",
    "docx": "a Word document",
    "gzip": "a gzip-compressed file",
    "pdf": "a PDF document",
    "binary": "binary data of an unknown kind",
}

# SAS7BDAT files open with this 32-byte signature (the ReadStat library checks the same).
_SAS7BDAT_MAGIC = bytes(12) + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011")
_OLE_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")
_HEAD_BYTES = 1 << 16
_SNIFF_BYTES = 1 << 18
_CHUNK_BYTES = 1 << 24
_CHUNK_ROWS = 200_000
_DELIMITERS = (",", ";", "\t", "|")
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
TEXT_FORMATS = _TEXT_FORMATS = ("csv", "tsv")
_STAT_FORMATS = ("sas7bdat", "xpt", "sav", "zsav", "por", "dta")

# Python's csv module refuses values over 128 KiB by default; clinical notes can be longer.
# Much longer than this is a quote that never closes, swallowing the rest of the file.
_MAX_FIELD_CHARS = 16 * 1024 * 1024


# --------------------------------------------------------------------------- sizes


def human_size(size: int) -> str:
    """1536 → '1.5 KB'; units of 1024, as file managers show them."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            text = f"{value:.1f}".rstrip("0").rstrip(".") if unit != "bytes" else str(size)
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_size(size: int, limit: int) -> None:
    """Refuse a file larger than the limit, saying both sizes in human units."""
    if size > limit:
        raise IngestError(
            f"The file is {human_size(size)}; the upload limit is {human_size(limit)}. "
            "Remove columns or rows you do not need, or compress it as Parquet.",
            code="too_large",
        )


def check_columns(count: int, limits: IngestLimits, *, at_least: bool = False) -> None:
    """Refuse a file wider than the column limit, saying both numbers."""
    if count > limits.max_columns:
        more = "at least " if at_least else ""
        raise IngestError(
            f"The file has {more}{count:,} columns; the limit is {limits.max_columns:,}. "
            "Keep the columns the release needs (identifiers, quasi-identifiers and the "
            "variables to share) and upload again.",
            code="too_many_columns",
        )


# --------------------------------------------------------------------------- format detection


def _read_head(path: Path, size: int = _HEAD_BYTES) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def _looks_like_text(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if b"\x00" in head:
        return False
    controls = sum(1 for byte in head if byte < 32 and byte not in (9, 10, 12, 13)) + head.count(
        b"\x7f"
    )
    return controls <= len(head) // 200


def _identify(path: Path, head: bytes) -> str:
    """What the content is, from its signature: a format key, 'text' or another kind."""
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(_SAS7BDAT_MAGIC):
        return "sas7bdat"
    if head.startswith(b"HEADER RECORD*******LIB"):
        return "xpt"
    if head.startswith(b"$FL2"):
        return "sav"
    if head.startswith(b"$FL3"):
        return "zsav"
    if head.startswith(b"<stata_dta>"):
        return "dta"
    # Stata 104–115: release byte, byte order (1 = big, 2 = little endian), file type 1.
    if len(head) > 4 and 104 <= head[0] <= 115 and head[1] in (1, 2) and head[2] == 1:
        return "dta"
    if b"SPSSPORT" in head[:1024].replace(b"\r", b"").replace(b"\n", b""):
        return "por"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
        except (zipfile.BadZipFile, OSError):
            return "zip"
        if "xl/workbook.xml" in names:
            return "xlsx"
        return "docx" if "word/document.xml" in names else "zip"
    if head.startswith(_OLE_MAGIC):
        return "ole"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"%PDF-"):
        return "pdf"
    return "text" if _looks_like_text(head) else "binary"


def detect_format(path: Path, filename: str) -> str:
    """The format named by the extension, after checking the content agrees with it."""
    extension = Path(filename).suffix.lower()
    expected = FORMATS_BY_EXTENSION.get(extension)
    if expected is None:
        hint = " Save the sheet as .xlsx or CSV." if extension == ".xls" else ""
        supported = ", ".join(sorted(FORMATS_BY_EXTENSION))
        raise IngestError(
            f"'{filename}': files ending in '{extension or '(no extension)'}' are not "
            f"supported.{hint} Supported: {supported}.",
            code="unsupported_format",
        )
    if path.stat().st_size == 0:
        raise IngestError(f"'{filename}' is empty (0 bytes).", code="empty_file")
    found = _identify(path, _read_head(path))
    agrees = (
        found == "text"
        if expected in _TEXT_FORMATS
        else found == expected or {found, expected} == {"sav", "zsav"}
    )
    if not agrees:
        raise IngestError(
            f"'{filename}' is named like {_LABELS[expected]}, but its content is "
            f"{_LABELS[found]}. Check that you chose the right file, or give it the extension "
            "that matches its content.",
            code="format_mismatch",
        )
    return expected


# --------------------------------------------------------------------------- text sniffing

# Single-byte code pages for Latin script. On a short sample charset-normalizer cannot tell
# them apart (it often answers cp1250 for French text); Windows-1252 is what spreadsheet
# software in Canada writes, so it is preferred whenever it decodes the sample.
_LATIN_SINGLE_BYTE = {
    "cp1250", "cp1252", "cp1254", "cp1257", "cp775", "cp850", "cp852", "cp857", "cp858",
    "cp863", "cp437", "hp_roman8", "latin_1", "iso8859_1", "iso8859_2", "iso8859_3",
    "iso8859_4", "iso8859_9", "iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15",
    "iso8859_16", "mac_roman", "mac_latin2", "mac_iceland", "mac_turkish",
}  # fmt: skip


def _codec_name(encoding: str) -> str:
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise IngestError(
            f"'{encoding}' is not an encoding this system knows. Try utf-8, windows-1252 "
            "or iso-8859-1.",
            code="unknown_encoding",
        ) from None
    name = codec.name
    # Python's codec registry also holds bytes-to-bytes and text-to-text transforms (rot13,
    # base64, zlib); bytes.decode() refuses them by this same flag.
    if not getattr(codec, "_is_text_encoding", True):
        raise IngestError(
            f"'{encoding}' is not a character encoding. Try utf-8, windows-1252 or iso-8859-1.",
            code="unknown_encoding",
        )
    return "utf-8" if name == "utf-8" else name


# Encodings whose decoder reads the byte order from a byte-order mark and fails without one.
_NEEDS_BOM = {
    "utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
    "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),
}


def _check_byte_order_mark(head: bytes, encoding: str) -> None:
    marks = _NEEDS_BOM.get(encoding)
    if marks is None or head.startswith(marks):
        return
    label = encoding.upper()
    raise IngestError(
        f"The file is not {label}: it does not start with {label}'s byte-order mark. Choose "
        "its encoding (such as utf-8 or windows-1252), or leave the encoding to be detected.",
        code="encoding",
        line=1,
    )


def check_encoding_choice(path: Path, encoding: str | None) -> None:
    """What can be said of a chosen encoding from the file's first bytes alone, before the
    upload is accepted: the name is a character encoding, and UTF-16/UTF-32 start with their
    byte-order mark. (The rest is checked during conversion, with the line of a bad byte.)"""
    if not encoding:
        return
    chosen = _codec_name(encoding)
    _check_byte_order_mark(_read_head(path, 4), chosen)


def _detect_encoding(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8"
    best = charset_normalizer.from_bytes(head).best()
    if best is None:
        raise IngestError(
            "The file's character encoding could not be recognized. Choose its encoding "
            "(for example windows-1252) when uploading, or save it as UTF-8.",
            code="encoding",
        )
    guess = best.encoding
    if guess in _LATIN_SINGLE_BYTE or _mostly_ascii_letters(head):
        try:
            head.decode("cp1252")
        except UnicodeDecodeError:
            return _codec_name(guess)
        return "cp1252"
    return _codec_name(guess)


def _mostly_ascii_letters(head: bytes) -> bool:
    """Text in a Latin script: accented letters are a small minority of all letters.

    In Cyrillic, Greek or Asian text nearly every letter is a non-ASCII byte; in French or
    German one letter in ten or fewer is, whatever code page a short sample suggests.
    """
    ascii_letters = sum(1 for byte in head if 65 <= byte <= 90 or 97 <= byte <= 122)
    high = sum(1 for byte in head if byte >= 128)
    return high <= 0.3 * ascii_letters


def _decode_head(head: bytes, encoding: str) -> str:
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(head, final=False)
    return text.lstrip("\ufeff")


def _detect_delimiter(text: str, *, truncated: bool, prefer: str = ",") -> str:
    """The candidate that splits the first lines into the same number (> 1) of fields.

    Parsing with the csv module (not counting characters) keeps delimiters inside quoted
    values from voting. Ties go to the most fields, then to `prefer`, then to , ; tab |.
    """
    if truncated and "\n" in text:
        text = text[: text.rindex("\n") + 1]
    best: tuple[float, int, int] | None = None
    chosen = prefer
    order = [prefer, *[d for d in _DELIMITERS if d != prefer]]
    for rank, candidate in enumerate(order):
        try:
            rows = [
                len(row)
                for row, _ in zip(
                    csv.reader(io.StringIO(text), delimiter=candidate), range(50), strict=False
                )
                if row
            ]
        except csv.Error:
            continue
        if not rows or rows[0] < 2:
            continue
        consistent = sum(1 for count in rows if count == rows[0]) / len(rows)
        score = (consistent, rows[0], -rank)
        if best is None or score > best:
            best, chosen = score, candidate
    return chosen


def sniff_text(
    path: Path, *, encoding: str | None = None, delimiter: str | None = None
) -> tuple[str, str]:
    """(encoding, delimiter) of a text file: detected from its first bytes, or as given.

    Encoding: a byte-order mark decides; otherwise UTF-8 if the sample decodes as UTF-8;
    otherwise charset-normalizer's guess (Windows-1252 for Latin-script code pages). The
    whole file is checked later, during conversion, with the exact line of any bad byte.
    """
    head = _read_head(path, _SNIFF_BYTES)
    if not head.strip():
        raise IngestError("The file contains no text: no header line, no rows.", code="empty_file")
    if encoding:
        chosen = _codec_name(encoding)
        if chosen == "utf-8" and head.startswith(codecs.BOM_UTF8):
            chosen = "utf-8-sig"
        _check_byte_order_mark(head, chosen)
    else:
        chosen = _detect_encoding(head)
    if delimiter:
        if len(delimiter) != 1 or delimiter in '"\r\n':
            raise IngestError(
                f"{delimiter!r} cannot be a delimiter: give one character such as , ; or tab.",
                code="malformed_csv",
            )
        return chosen, delimiter
    prefer = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    text = _decode_head(head, chosen)
    return chosen, _detect_delimiter(text, truncated=len(head) == _SNIFF_BYTES, prefer=prefer)


# --------------------------------------------------------------------------- text: decoding


def _encoding_error(
    exc: UnicodeDecodeError, line: int, line_start: bytes, encoding: str
) -> IngestError:
    bad = exc.object[exc.start : exc.end]
    before = line_start.decode(encoding, errors="replace")[-30:]
    context = f" after “{before}”" if before.strip() else ""
    alternatives = "windows-1252 or iso-8859-1" if encoding.startswith("utf") else "utf-8"
    label = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8"}.get(encoding, encoding)
    return IngestError(
        f"Line {line} is not valid {label}: byte 0x{bad.hex().upper()}{context} cannot be read. "
        f"The file is probably in another encoding (such as {alternatives}): choose it when "
        "uploading, or save the file as UTF-8.",
        code="encoding",
        line=line,
    )


def _decode_chunks(path: Path, encoding: str) -> Iterator[str]:
    """Decode a file chunk by chunk; a bad byte raises `IngestError` with its line number."""
    decoder = codecs.getincrementaldecoder(encoding)()
    newlines = 0
    last_line = b""
    with path.open("rb") as handle:
        while True:
            chunk = handle.read(_CHUNK_BYTES)
            try:
                text = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                data = exc.object
                before = data[: exc.start]
                line = newlines + before.count(b"\n") + 1
                cut = before.rfind(b"\n")
                start = before[cut + 1 :] if cut >= 0 else last_line + before
                raise _encoding_error(exc, line, start, encoding) from None
            except UnicodeError as exc:  # a decoder's own refusal, e.g. a missing byte-order mark
                raise IngestError(
                    f"The file cannot be read as {encoding}: {exc}. Choose its encoding (such "
                    "as utf-8 or windows-1252), or leave the encoding to be detected.",
                    code="encoding",
                ) from None
            newlines += chunk.count(b"\n")
            cut = chunk.rfind(b"\n")
            last_line = chunk[cut + 1 :] if cut >= 0 else (last_line + chunk)[-4096:]
            if text:
                yield text
            if not chunk:
                return


def _as_utf8(src: Path, encoding: str, scratch: Path) -> Path:
    """The file itself if it is UTF-8 (checked in full), else a UTF-8 copy written in chunks."""
    if encoding in ("utf-8", "utf-8-sig"):
        for _ in _decode_chunks(src, encoding):
            pass
        return src
    target = scratch / "utf8.csv"
    with target.open("w", encoding="utf-8", newline="") as out:
        for text in _decode_chunks(src, encoding):
            out.write(text.lstrip("\ufeff") if out.tell() == 0 else text)
    return target


# --------------------------------------------------------------------------- names


def _check_names(names: Sequence[str | None], *, drop_trailing_empty: bool = False) -> list[str]:
    """Column names stripped of surrounding spaces; unique and non-empty, or `IngestError`."""
    cleaned = [("" if name is None else str(name)).strip().lstrip("\ufeff") for name in names]
    if drop_trailing_empty:
        while cleaned and not cleaned[-1]:
            cleaned.pop()
    for position, name in enumerate(cleaned, start=1):
        if not name:
            raise IngestError(
                f"Column {position} has no name (its header cell is empty). Give every column "
                "a name in the first row.",
                code="empty_column_name",
            )
    positions: dict[str, list[int]] = {}
    for position, name in enumerate(cleaned, start=1):
        positions.setdefault(name, []).append(position)
    duplicates = {name: where for name, where in positions.items() if len(where) > 1}
    if duplicates:
        listed = "; ".join(
            f"'{name}' (columns {', '.join(map(str, where))})" for name, where in duplicates.items()
        )
        raise IngestError(
            f"Column names must be unique. Repeated: {listed}. Rename the repeated columns.",
            code="duplicate_columns",
            column=next(iter(duplicates)),
        )
    return cleaned


# --------------------------------------------------------------------------- text: structure


@dataclass
class _TextScan:
    header: list[str]
    raw_width: int
    records: int = 0
    blank_lines: int = 0
    empty_records: int = 0


def _scan_structure(path: Path, encoding: str, delimiter: str, limits: IngestLimits) -> _TextScan:
    """One streaming pass with the csv module: header checks, field counts, exact lines."""
    previous_limit = csv.field_size_limit(_MAX_FIELD_CHARS)
    try:
        return _scan_records(path, encoding, delimiter, limits)
    finally:
        csv.field_size_limit(previous_limit)


def _scan_records(path: Path, encoding: str, delimiter: str, limits: IngestLimits) -> _TextScan:
    reader_encoding = "utf-8-sig" if encoding in ("utf-8", "utf-8-sig") else "utf-8"
    shown = _DELIMITER_NAMES.get(delimiter, repr(delimiter))
    with path.open(encoding=reader_encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quotechar='"', strict=True)
        start = 1
        try:
            header: list[str] = []
            for row in reader:
                if row:
                    header = row
                    break
                start = reader.line_num + 1
            if not header:
                raise IngestError(
                    "The file contains no header line and no rows.", code="empty_file"
                )
            check_columns(len(header), limits)  # a header longer than the sniffed start
            trailing = len(header) - len(_check_names(header, drop_trailing_empty=True))
            scan = _TextScan(header=header[: len(header) - trailing], raw_width=len(header))
            width = len(header)
            start = reader.line_num + 1
            for row in reader:
                if len(row) != width:
                    if not row:
                        scan.blank_lines += 1
                        start = reader.line_num + 1
                        continue
                    raise IngestError(
                        f"Line {start} has {len(row)} fields but the header has {width} "
                        f"(delimiter: {shown}). Look for a missing or extra delimiter, or a "
                        "value containing the delimiter without quotes.",
                        code="ragged_rows",
                        line=start,
                    )
                if trailing and any(row[width - trailing :]):
                    raise IngestError(
                        f"Column {width - trailing + 1} has no name (its header cell is empty) "
                        f"but holds values, for example on line {start}. Give it a name.",
                        code="empty_column_name",
                        line=start,
                    )
                if not any(row):
                    scan.empty_records += 1
                scan.records += 1
                start = reader.line_num + 1
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):
                raise IngestError(
                    f"A value starting on line {start} runs on for more than "
                    f"{human_size(_MAX_FIELD_CHARS)}: most likely a quote that is never closed. "
                    'Check for a stray " character.',
                    code="unterminated_quote",
                    line=start,
                ) from None
            if "unexpected end of data" in str(exc):
                raise IngestError(
                    f"A quoted value starting on line {start} is never closed: the file ends "
                    'inside it. Check for a stray " character.',
                    code="unterminated_quote",
                    line=start,
                ) from None
            raise IngestError(
                f'Line {reader.line_num}: a quoted value is badly formed ({exc}). A " inside '
                'a quoted value must be doubled ("").',
                code="malformed_csv",
                line=reader.line_num,
            ) from None
    if scan.records - scan.empty_records == 0:
        raise IngestError(
            "The file has a header line but no data rows.", code="no_data_rows", line=start
        )
    return scan


# --------------------------------------------------------------------------- shared helpers


def _blank_strings_to_null(frame: pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
    strings = [name for name, dtype in schema.items() if dtype == pl.String]
    if not strings:
        return frame
    return frame.with_columns(
        pl.when(pl.col(name) != "").then(pl.col(name)).alias(name) for name in strings
    )


def _drop_empty_rows(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.filter(pl.any_horizontal(pl.all().is_not_null()))


def _count_rows(path: Path) -> int:
    return int(pl.scan_parquet(path).select(pl.len()).collect().item())


def _whole_number_columns(frame: pl.DataFrame) -> set[str]:
    """Float columns whose values are all whole numbers within the range of Int64."""
    floats = [name for name, dtype in frame.schema.items() if dtype in (pl.Float32, pl.Float64)]
    if not floats:
        return set()
    checks = frame.select(
        (
            ((pl.col(name) % 1 == 0) & (pl.col(name).abs() < 2.0**53)).all(ignore_nulls=True)
            & pl.col(name).is_not_null().any()
        ).alias(name)
        for name in floats
    ).row(0)
    return {name for name, ok in zip(floats, checks, strict=True) if ok}


@contextlib.contextmanager
def _atomic_destination(dest: Path) -> Iterator[tuple[Path, Path]]:
    """(temporary file, scratch directory) beside `dest`; renamed onto `dest` on success."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    temporary = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    try:
        with tempfile.TemporaryDirectory(prefix=".ingest-", dir=dest.parent) as scratch:
            yield temporary, Path(scratch)
        os.replace(temporary, dest)
    finally:
        temporary.unlink(missing_ok=True)


def _polars_failure(exc: Exception, what: str) -> IngestError:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return IngestError(
        f"The file could not be read as {what}: it may be damaged or incomplete ({first_line}).",
        code="corrupt",
    )


def _dropped_rows_warning(count: int) -> list[str]:
    if not count:
        return []
    rows = "row was" if count == 1 else "rows were"
    return [f"{count} {rows} entirely empty and left out."]


# --------------------------------------------------------------------------- converters


def _header_width(text: str, delimiter: str) -> tuple[int, bool]:
    """(fields, whether the header line ended) of the first non-empty record of `text`, the
    decoded start of the file: enough to refuse a too wide file before reading the rest."""
    complete = "\n" in text or "\r" in text
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar='"')
    try:
        for row in reader:
            if row:
                return len(row), complete
    except csv.Error:  # a value longer than csv's limit: the full scan reports it
        pass
    return 0, False


def _convert_text(
    src: Path,
    fmt: str,
    temporary: Path,
    scratch: Path,
    encoding: str | None,
    delimiter: str | None,
    limits: IngestLimits,
) -> IngestResult:
    chosen_encoding, chosen_delimiter = sniff_text(src, encoding=encoding, delimiter=delimiter)
    head = _read_head(src, _SNIFF_BYTES)
    width, complete = _header_width(_decode_head(head, chosen_encoding), chosen_delimiter)
    check_columns(width, limits, at_least=not complete)
    utf8 = _as_utf8(src, chosen_encoding, scratch)
    scan = _scan_structure(utf8, chosen_encoding, chosen_delimiter, limits)
    names = _check_names(scan.header)
    raw_names = [f"c{index}" for index in range(scan.raw_width)]
    frame = pl.scan_csv(
        utf8,
        separator=chosen_delimiter,
        has_header=True,
        quote_char='"',
        infer_schema=False,
        encoding="utf8",
        with_column_names=lambda _: raw_names,
    ).select(pl.col(raw).alias(name) for raw, name in zip(raw_names, names, strict=False))
    frame = _drop_empty_rows(
        _blank_strings_to_null(frame, pl.Schema(dict.fromkeys(names, pl.String)))
    )
    try:
        frame.sink_parquet(temporary)
    except pl.exceptions.PolarsError as exc:
        raise _polars_failure(exc, _LABELS[fmt]) from None
    rows = _count_rows(temporary)
    expected = scan.records - scan.empty_records
    if rows != expected:
        raise IngestError(
            f"The file was read inconsistently ({rows} rows against {expected} records "
            "counted line by line). Save it again from its source program as CSV (UTF-8).",
            code="malformed_csv",
        )
    warnings: list[str] = []
    if encoding is None and chosen_encoding not in ("utf-8", "utf-8-sig"):
        warnings.append(
            f"The file is not UTF-8; it was read as {chosen_encoding}. If accented letters "
            "look wrong, upload it again and choose its encoding."
        )
    if scan.raw_width > len(names):
        warnings.append(
            f"{scan.raw_width - len(names)} unnamed, empty column(s) at the end of each line "
            "were left out."
        )
    if scan.blank_lines:
        warnings.append(f"{scan.blank_lines} blank line(s) were skipped.")
    warnings += _dropped_rows_warning(scan.empty_records)
    return IngestResult(
        format=fmt,
        rows=rows,
        columns=tuple(names),
        delimiter=chosen_delimiter,
        encoding=chosen_encoding,
        sheet=None,
        warnings=tuple(warnings),
    )


def _check_workbook_expansion(src: Path, limits: IngestLimits) -> None:
    """Refuse a workbook that expands beyond the limit or has a sheet of too many rows,
    before a reader inflates it (containers.py)."""
    try:
        expanded = containers.zip_expanded_size(src)
        if expanded > limits.max_expanded_bytes:
            raise IngestError(
                f"The workbook is {human_size(src.stat().st_size)} but expands to "
                f"{human_size(expanded)}; the limit is {human_size(limits.max_expanded_bytes)}. "
                "Save the sheet as CSV, or as Parquet, and upload that instead.",
                code="expands_too_much",
            )
        for part in containers.sheet_parts(src):
            rows = containers.sheet_rows(src, part, stop_above=limits.max_sheet_rows)
            if rows > limits.max_sheet_rows:
                raise IngestError(
                    f"A sheet of the workbook ({part.rsplit('/', 1)[-1]}) has more than "
                    f"{limits.max_sheet_rows:,} rows, the limit for a workbook (Excel's own). "
                    "Save the data as CSV or Parquet and upload that instead.",
                    code="too_many_rows",
                )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error) as exc:
        raise _polars_failure(exc, _LABELS["xlsx"]) from None


def _convert_xlsx(
    src: Path, temporary: Path, sheet: str | None, limits: IngestLimits
) -> IngestResult:
    import fastexcel

    _check_workbook_expansion(src, limits)
    try:
        reader = fastexcel.read_excel(src)
        sheets = list(reader.sheet_names)
    except Exception as exc:  # noqa: BLE001 - calamine raises its own error types
        raise _polars_failure(exc, _LABELS["xlsx"]) from None
    if not sheets:
        raise IngestError("The workbook has no sheets.", code="empty_file")
    if sheet is not None and sheet not in sheets:
        raise IngestError(
            f"The workbook has no sheet named '{sheet}'. Its sheets: "
            + ", ".join(f"'{name}'" for name in sheets)
            + ".",
            code="sheet_not_found",
        )
    chosen = sheet if sheet is not None else sheets[0]
    try:
        header_frame = reader.load_sheet(chosen, header_row=None, n_rows=1, dtypes="string")
        header_row = header_frame.to_polars()
    except Exception as exc:  # noqa: BLE001
        raise _polars_failure(exc, _LABELS["xlsx"]) from None
    if header_row.height == 0:
        raise IngestError(f"The sheet '{chosen}' is empty.", code="empty_file")
    raw_header = list(header_row.row(0))
    check_columns(len(raw_header), limits)
    names = _check_names(raw_header, drop_trailing_empty=True)
    try:
        data = reader.load_sheet(chosen, header_row=0, schema_sample_rows=None).to_polars()
    except Exception as exc:  # noqa: BLE001
        raise _polars_failure(exc, _LABELS["xlsx"]) from None
    trailing = data.columns[len(names) :]
    if trailing and data.select(pl.col(trailing).is_not_null().any()).row(0).count(True):
        raise IngestError(
            f"Column {len(names) + 1} has no name (its header cell is empty) but holds values. "
            "Give it a name.",
            code="empty_column_name",
        )
    data = data.select(data.columns[: len(names)])
    data.columns = names
    frame = _blank_strings_to_null(data.lazy(), data.schema).collect()
    # A date-time column whose values all fall at midnight is a column of dates.
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime) and frame.height:
            col = frame.get_column(name)
            if bool((col.dt.time() == datetime.time(0)).all(ignore_nulls=True)):
                frame = frame.with_columns(pl.col(name).dt.date())
    whole = _whole_number_columns(frame)
    frame = frame.with_columns(pl.col(name).cast(pl.Int64) for name in whole)
    before = frame.height
    frame = _drop_empty_rows(frame.lazy()).collect()
    if frame.height == 0:
        raise IngestError(
            f"The sheet '{chosen}' has a header row but no data rows.", code="no_data_rows"
        )
    frame.write_parquet(temporary)
    warnings = _dropped_rows_warning(before - frame.height)
    if len(sheets) > 1:
        warnings.insert(
            0,
            f"The workbook has {len(sheets)} sheets; only '{chosen}' was read. Upload again "
            "choosing another sheet if needed.",
        )
    return IngestResult(
        format="xlsx",
        rows=frame.height,
        columns=tuple(names),
        delimiter=None,
        encoding=None,
        sheet=chosen,
        warnings=tuple(warnings),
    )


_UNSUPPORTED_TYPES = (pl.List, pl.Array, pl.Struct, pl.Object, pl.Binary)


def _check_parquet_footer(src: Path, limits: IngestLimits) -> None:
    try:
        footer = containers.parquet_footer(src)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise _polars_failure(exc, _LABELS["parquet"]) from None
    check_columns(footer.columns, limits)
    bound = limits.max_parquet_expanded_bytes
    if bound is not None and footer.expanded_bytes > bound:
        raise IngestError(
            f"The Parquet file is {human_size(src.stat().st_size)} but its "
            f"{footer.rows:,} rows × {footer.columns:,} columns expand to at least "
            f"{human_size(footer.expanded_bytes)}; the limit is {human_size(bound)}. "
            "Upload fewer rows or columns.",
            code="expands_too_much",
        )


def _convert_parquet(src: Path, temporary: Path, limits: IngestLimits) -> IngestResult:
    with src.open("rb") as handle:
        handle.seek(-4, os.SEEK_END)
        tail = handle.read(4)
    if tail != b"PAR1":
        raise IngestError(
            "The Parquet file is incomplete: it does not end with the PAR1 marker. It may have "
            "been cut off while copying or uploading.",
            code="corrupt",
        )
    _check_parquet_footer(src, limits)
    try:
        schema = pl.read_parquet_schema(src)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise _polars_failure(exc, _LABELS["parquet"]) from None
    names = _check_names(list(schema))
    if names != list(schema):
        schema = pl.Schema(dict(zip(names, schema.values(), strict=True)))
    warnings: list[str] = []
    casts: list[pl.Expr] = []
    for name, dtype in schema.items():
        if isinstance(dtype, _UNSUPPORTED_TYPES):
            raise IngestError(
                f"Column '{name}' holds {dtype} values (nested or binary data), which cannot be "
                "de-identified here. Flatten it or remove it, then upload again.",
                code="unsupported_column_type",
                column=name,
            )
        if isinstance(dtype, pl.Categorical | pl.Enum | pl.Time | pl.Duration):
            casts.append(pl.col(name).cast(pl.String))
            warnings.append(f"Column '{name}' ({dtype}) is stored as text.")
    frame = pl.scan_parquet(src)
    if names != frame.collect_schema().names():
        frame = frame.rename(dict(zip(frame.collect_schema().names(), names, strict=True)))
    frame = frame.with_columns(casts) if casts else frame
    frame = _blank_strings_to_null(frame, frame.collect_schema())
    try:
        total = int(frame.select(pl.len()).collect().item())
        _drop_empty_rows(frame).sink_parquet(temporary)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise _polars_failure(exc, _LABELS["parquet"]) from None
    rows = _count_rows(temporary)
    if rows == 0:
        raise IngestError("The Parquet file has columns but no data rows.", code="no_data_rows")
    return IngestResult(
        format="parquet",
        rows=rows,
        columns=tuple(names),
        delimiter=None,
        encoding=None,
        sheet=None,
        warnings=tuple(warnings + _dropped_rows_warning(total - rows)),
    )


def _stat_reader(fmt: str) -> Callable[..., Any]:
    import pyreadstat

    readers: dict[str, Callable[..., Any]] = {
        "sas7bdat": pyreadstat.read_sas7bdat,
        "xpt": pyreadstat.read_xport,
        "sav": pyreadstat.read_sav,
        "zsav": pyreadstat.read_sav,
        "por": pyreadstat.read_por,
        "dta": pyreadstat.read_dta,
    }
    return readers[fmt]


def _code_text(code: Any) -> str:
    if isinstance(code, float) and code.is_integer():
        return str(int(code))
    return str(code)


def _value_label_warning(labels: dict[str, dict[Any, str]]) -> list[str]:
    if not labels:
        return []
    parts = []
    for name, mapping in list(labels.items())[:10]:
        shown = ", ".join(
            f"{_code_text(code)} = {text}" for code, text in list(mapping.items())[:6]
        )
        more = ", …" if len(mapping) > 6 else ""
        parts.append(f"{name} ({shown}{more})")
    extra = f" and {len(labels) - 10} more" if len(labels) > 10 else ""
    return [
        "Value labels were found; the codes are stored, not the labels: "
        + "; ".join(parts)
        + extra
        + "."
    ]


def _convert_statistical(
    src: Path,
    fmt: str,
    temporary: Path,
    scratch: Path,
    encoding: str | None,
    limits: IngestLimits,
) -> IngestResult:
    import pyreadstat

    reader = _stat_reader(fmt)
    what = _LABELS[fmt]
    options: dict[str, Any] = {}
    if encoding and fmt != "por":
        options["encoding"] = encoding
    try:
        _, meta = reader(src, metadataonly=True, **options)
    except Exception as exc:  # noqa: BLE001 - pyreadstat raises ReadstatError and others
        raise _polars_failure(exc, what) from None
    check_columns(len(meta.column_names), limits)
    names = _check_names(list(meta.column_names))
    parts: list[Path] = []
    whole: set[str] | None = None
    try:
        chunks = pyreadstat.read_file_in_chunks(
            reader, src, chunksize=_CHUNK_ROWS, output_format="polars", **options
        )
        for index, (chunk, _) in enumerate(chunks):
            frame: pl.DataFrame = chunk
            frame.columns = names
            part_whole = _whole_number_columns(frame.drop_nulls()) | {
                name
                for name, dtype in frame.schema.items()
                if dtype in (pl.Float32, pl.Float64)
                and frame.get_column(name).null_count() == frame.height
            }
            whole = part_whole if whole is None else whole & part_whole
            part = scratch / f"part-{index:06d}.parquet"
            frame.write_parquet(part)
            parts.append(part)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _polars_failure(exc, what) from None
    if not parts:
        raise IngestError(f"The file ({what}) has variables but no rows.", code="no_data_rows")
    frame_lazy = pl.concat([pl.scan_parquet(part) for part in parts], how="vertical_relaxed")
    schema = frame_lazy.collect_schema()
    whole = {name for name in (whole or set()) if schema[name] in (pl.Float32, pl.Float64)}
    frame_lazy = frame_lazy.with_columns(pl.col(name).cast(pl.Int64) for name in whole)
    frame_lazy = _blank_strings_to_null(frame_lazy, schema)
    total = sum(pl.scan_parquet(part).select(pl.len()).collect().item() for part in parts)
    _drop_empty_rows(frame_lazy).sink_parquet(temporary)
    rows = _count_rows(temporary)
    if rows == 0:
        raise IngestError(f"The file ({what}) has variables but no rows.", code="no_data_rows")
    labels = dict(getattr(meta, "variable_value_labels", {}) or {})
    warnings = _value_label_warning(labels) + _dropped_rows_warning(int(total) - rows)
    file_encoding = getattr(meta, "file_encoding", None)
    return IngestResult(
        format=fmt,
        rows=rows,
        columns=tuple(names),
        delimiter=None,
        encoding=encoding or (str(file_encoding) if file_encoding else None),
        sheet=None,
        warnings=tuple(warnings),
    )


def convert_to_parquet(
    src: Path,
    filename: str,
    dest: Path,
    *,
    encoding: str | None = None,
    delimiter: str | None = None,
    sheet: str | None = None,
    limits: IngestLimits | None = None,
) -> IngestResult:
    """Check `src` (uploaded as `filename`) and write it to `dest` as Parquet.

    `encoding` and `delimiter` override detection for text files (`encoding` is also passed
    to the SAS, SPSS and Stata readers); `sheet` picks an Excel sheet by name (default:
    the first); `limits` bound the width and expansion (checked before the full read).
    Raises `IngestError`; on any failure `dest` is left untouched.
    """
    limits = limits or IngestLimits()
    fmt = detect_format(src, filename)
    with _atomic_destination(dest) as (temporary, scratch):
        if fmt in _TEXT_FORMATS:
            return _convert_text(src, fmt, temporary, scratch, encoding, delimiter, limits)
        if fmt == "xlsx":
            return _convert_xlsx(src, temporary, sheet, limits)
        if fmt == "parquet":
            return _convert_parquet(src, temporary, limits)
        return _convert_statistical(src, fmt, temporary, scratch, encoding, limits)
