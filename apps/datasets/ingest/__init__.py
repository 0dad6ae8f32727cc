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

The package is split by format, as pandas' io is: common (error, result, limits, names,
frame helpers), detect (the format from extension and first bytes), text, excel, parquet
and statistical (SAS, SPSS, Stata). Callers import from `apps.datasets.ingest` only.
"""

from __future__ import annotations

from pathlib import Path

from apps.datasets.ingest.common import (
    EXCEL_MAX_ROWS,
    FORMATS_BY_EXTENSION,
    TEXT_FORMATS,
    IngestError,
    IngestLimits,
    IngestResult,
    atomic_destination,
    check_columns,
    check_size,
    human_size,
)
from apps.datasets.ingest.detect import detect_format
from apps.datasets.ingest.excel import convert_xlsx
from apps.datasets.ingest.parquet import convert_parquet
from apps.datasets.ingest.statistical import convert_statistical
from apps.datasets.ingest.text import check_encoding_choice, convert_text, sniff_text

__all__ = [
    "EXCEL_MAX_ROWS",
    "FORMATS_BY_EXTENSION",
    "TEXT_FORMATS",
    "IngestError",
    "IngestLimits",
    "IngestResult",
    "check_columns",
    "check_encoding_choice",
    "check_size",
    "convert_to_parquet",
    "detect_format",
    "human_size",
    "sniff_text",
]


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
    with atomic_destination(dest) as (temporary, scratch):
        if fmt in TEXT_FORMATS:
            return convert_text(src, fmt, temporary, scratch, encoding, delimiter, limits)
        if fmt == "xlsx":
            return convert_xlsx(src, filename, temporary, sheet, limits)
        if fmt == "parquet":
            return convert_parquet(src, filename, temporary, limits)
        return convert_statistical(src, filename, fmt, temporary, scratch, encoding, limits)
