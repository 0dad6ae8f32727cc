"""ARX hierarchy CSV files: one row per original value, `;`-separated, no header.

Column 0 is the original value and column i its value at level i (the format of
the ARX Data Anonymization Tool and of the benchmark files under data/arx/).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from apps.engine.errors import EngineInputError, HierarchyError
from apps.engine.hierarchies.model import Hierarchy

#: Separators tried when a hierarchy file has no ``;`` (ARX's own) at all.
_OTHER_SEPARATORS = (",", "\t", "|")


def sniff_arx_separator(text: str) -> str:
    """``;`` (ARX's separator) unless no row holds one and every row splits into the same
    number (at least 2) of cells on one of ``,``, tab, ``|``: a hierarchy saved by a
    spreadsheet with commas is then read as such instead of as one-value rows."""
    if ";" in text:
        return ";"
    for candidate in _OTHER_SEPARATORS:
        reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=candidate)
        widths = {len(row) for row in reader if any(cell.strip() for cell in row)}
        if len(widths) == 1 and widths.pop() >= 2:
            return candidate
    return ";"


def parse_arx_text(text: str, column: str, *, sep: str | None = ";") -> Hierarchy:
    """Read a hierarchy from the text of an ARX CSV (blank lines ignored); ``sep=None``
    sniffs the separator (:func:`sniff_arx_separator`)."""
    if sep is None:
        sep = sniff_arx_separator(text)
    if len(sep) != 1:
        raise HierarchyError(f"hierarchy of {column!r}: separator must be one character")
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=sep)
    rows = tuple(tuple(row) for row in reader if any(cell.strip() for cell in row))
    if not rows:
        raise HierarchyError(f"hierarchy of {column!r}: the file has no rows")
    return Hierarchy(column, rows)


def format_arx_text(hierarchy: Hierarchy, *, sep: str = ";") -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator="\n")
    writer.writerows(hierarchy.rows)
    return buffer.getvalue()


def read_arx_csv(path: str | Path, column: str, *, sep: str | None = ";") -> Hierarchy:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise EngineInputError(f"hierarchy file not found: {file}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineInputError(f"cannot read hierarchy file {file}: {exc}") from exc
    return parse_arx_text(text, column, sep=sep)


def write_arx_csv(h: Hierarchy, path: str | Path, *, sep: str = ";") -> None:
    Path(path).write_text(format_arx_text(h, sep=sep), encoding="utf-8")
