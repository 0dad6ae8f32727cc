"""CSV and tab-separated text: encoding and delimiter detection, a line-by-line check with
exact line numbers, then conversion by polars' streaming engine."""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import charset_normalizer
import polars as pl

from apps.datasets.ingest.common import (
    LABELS,
    IngestError,
    IngestLimits,
    IngestResult,
    blank_strings_to_null,
    check_columns,
    check_names,
    count_rows,
    drop_empty_rows,
    dropped_rows_warning,
    human_size,
    reading_failure,
)
from apps.datasets.ingest.detect import read_head

_SNIFF_BYTES = 1 << 18
_CHUNK_BYTES = 1 << 24

_DELIMITERS = (",", ";", "\t", "|")
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}


# Python's csv module refuses values over 128 KiB by default; clinical notes can be longer.
# Much longer than this is a quote that never closes, swallowing the rest of the file.
_MAX_FIELD_CHARS = 16 * 1024 * 1024

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
    _check_byte_order_mark(read_head(path, 4), chosen)


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
    head = read_head(path, _SNIFF_BYTES)
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
            trailing = len(header) - len(check_names(header, drop_trailing_empty=True))
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


def convert_text(
    src: Path,
    fmt: str,
    temporary: Path,
    scratch: Path,
    encoding: str | None,
    delimiter: str | None,
    limits: IngestLimits,
) -> IngestResult:
    chosen_encoding, chosen_delimiter = sniff_text(src, encoding=encoding, delimiter=delimiter)
    head = read_head(src, _SNIFF_BYTES)
    width, complete = _header_width(_decode_head(head, chosen_encoding), chosen_delimiter)
    check_columns(width, limits, at_least=not complete)
    utf8 = _as_utf8(src, chosen_encoding, scratch)
    scan = _scan_structure(utf8, chosen_encoding, chosen_delimiter, limits)
    names = check_names(scan.header)
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
    frame = drop_empty_rows(
        blank_strings_to_null(frame, pl.Schema(dict.fromkeys(names, pl.String)))
    )
    try:
        frame.sink_parquet(temporary)
    except pl.exceptions.PolarsError as exc:
        raise reading_failure(exc, LABELS[fmt]) from None
    rows = count_rows(temporary)
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
    warnings += dropped_rows_warning(scan.empty_records)
    return IngestResult(
        format=fmt,
        rows=rows,
        columns=tuple(names),
        delimiter=chosen_delimiter,
        encoding=chosen_encoding,
        sheet=None,
        warnings=tuple(warnings),
    )
