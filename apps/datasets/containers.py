"""What a compressed upload holds, measured without expanding it.

A 490 KB workbook can expand to 168 MB of sheet XML and three million rows, and readers
such as calamine (behind fastexcel) hold a whole sheet in memory. So before a reader sees
an .xlsx or a Parquet file, the ingest package compares these measurements with its limits:

- an .xlsx is a ZIP archive: its central directory states every part's expanded size
  (`zip_expanded_size`), read without inflating anything;
- a sheet's rows are counted by inflating its XML as a stream and keeping nothing
  (`sheet_rows`): memory stays at one chunk, and the count stops at the limit;
- a Parquet footer states the columns, rows and size of the column data before compression
  (`parquet_footer`); that size is still dictionary- and run-length-encoded (a million
  repeats of one value take a few bytes), so the decoded size is taken as at least 8 bytes
  a value (`ParquetFooter.expanded_bytes`).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

__all__ = ["ParquetFooter", "parquet_footer", "sheet_parts", "sheet_rows", "zip_expanded_size"]

_CHUNK = 1 << 20
# A row element, with or without a namespace prefix ("<row ", "<x:row>", "<row/>").
_ROW = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row[\s/>]")
# The number a row element states for itself (r="123"), and a sheet's <dimension ref="A1:C9">.
_ROW_NUMBER = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row\s[^>]*?\br=\"(\d+)\"")
_DIMENSION = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?dimension\s[^>]*?\bref=\"[A-Z]*\d*:?[A-Z]*(\d+)\""
)
# A tag is never longer than this: what is carried over from one chunk to the next.
_CARRY = 4096


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


def sheet_rows(path: Path, part: str, *, stop_above: int) -> int:
    """How many rows the sheet part spans: the larger of the row elements counted and the
    highest row number stated (a row numbered 3 000 000 makes a reader allocate them all).

    Inflates the part as a stream, one chunk at a time, and returns as soon as the count
    passes `stop_above` (so a bomb is measured only as far as needed to refuse it).
    """
    rows = 0
    highest = 0
    carry = b""
    with zipfile.ZipFile(path) as archive, archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            buffer = carry + chunk
            # Tags hold no "<" after their first byte, so every tag starting before the last
            # "<" ends before it: scan up to there, carry the rest to the next chunk.
            cut = buffer.rfind(b"<")
            if cut < 0 or len(buffer) - cut > _CARRY:
                cut = len(buffer)
            scanned, carry = buffer[:cut], buffer[cut:]
            rows += len(_ROW.findall(scanned))
            for pattern in (_ROW_NUMBER, _DIMENSION):
                for number in pattern.findall(scanned):
                    highest = max(highest, int(number))
            if max(rows, highest) > stop_above:
                break
        else:
            rows += len(_ROW.findall(carry))
    return max(rows, highest)


# The fewest bytes a value takes once decoded (a 64-bit number; text takes more).
DECODED_VALUE_BYTES = 8


@dataclass(frozen=True)
class ParquetFooter:
    columns: int
    rows: int
    uncompressed_bytes: int  # encoded, before compression

    @property
    def expanded_bytes(self) -> int:
        """A lower bound of the decoded size: the encoded size, or 8 bytes a value."""
        return max(self.uncompressed_bytes, self.rows * self.columns * DECODED_VALUE_BYTES)


def parquet_footer(path: Path) -> ParquetFooter:
    """Columns, rows and the uncompressed size of the column data, as the footer states them."""
    metadata = pq.read_metadata(path)
    uncompressed = sum(
        metadata.row_group(group).column(column).total_uncompressed_size
        for group in range(metadata.num_row_groups)
        for column in range(metadata.row_group(group).num_columns)
    )
    return ParquetFooter(
        columns=int(metadata.num_columns),
        rows=int(metadata.num_rows),
        uncompressed_bytes=int(uncompressed),
    )
