"""Hierarchy files given on the command line (``--hierarchy COL=FILE``) and their messages,
and the one message of a hierarchy that does not cover the data, for the command line and
the web app alike.

Every refusal names the column and the file, and the line where the file is wrong: a file
that is not UTF-8, an empty file, a line with another number of values than the first, a
separator that splits no line, a level that is not coarser than the one below (a value
put under two groups, two values exchanged), a value listed twice. The values of a
hierarchy file are not personal data and are shown as they are; values of the data may be
(a rare postcode, a name typed in the wrong column), so a message shows at most
:data:`SHOWN_VALUES` of them, each cut to :data:`VALUE_CHARS` characters, with how many
there are in all.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from apps.engine.errors import EngineInputError, HierarchyError
from apps.engine.hierarchies import Hierarchy
from apps.engine.hierarchies.arx import sniff_arx_separator

#: Data values named in a message, at most, and their characters, at most.
SHOWN_VALUES = 3
VALUE_CHARS = 20
#: Separators a hierarchy file may be written with.
SEPARATORS = (";", ",", "\t", "|")


def shown_values(values: list[str]) -> str:
    """The first :data:`SHOWN_VALUES` values, each cut to :data:`VALUE_CHARS` characters,
    and how many more there are: ``'42', '43', '44' and 7 more``."""
    cut = [v if len(v) <= VALUE_CHARS else v[: VALUE_CHARS - 1] + "…" for v in values]
    listed = ", ".join(repr(v) for v in cut[:SHOWN_VALUES])
    more = len(values) - SHOWN_VALUES
    return f"{listed} and {more:,} more" if more > 0 else listed


def uncovered_message(column: str, missing: list[str], source: str) -> str:
    """The hierarchy of ``column`` (``source``: "file h_age.csv", "the text or file
    given") does not cover ``missing``, values of the data: how many, the first few."""
    count = len(missing)
    return (
        f"hierarchy of '{column}' ({source}) does not cover {count:,} value"
        f"{'s' if count != 1 else ''} of the data: {shown_values(missing)}; add "
        f"{'them' if count != 1 else 'it'} to the hierarchy, or correct the data"
    )


def uncovered(hierarchy: Hierarchy, values: Iterable[pl.Series]) -> list[str]:
    """Values of the data (as the engine reads them: as text, missing values aside) that
    are not leaves of the hierarchy, in the order they first appear."""
    seen: list[str] = []
    for series in values:
        text = series.cast(pl.String).drop_nulls().unique(maintain_order=True).to_list()
        seen.extend(text)
    return hierarchy.uncovered(seen)


def check_covered(
    hierarchy: Hierarchy, column: str, values: Iterable[pl.Series], source: str
) -> None:
    """Refuse (:func:`uncovered_message`) a hierarchy that leaves a value of the data out."""
    missing = uncovered(hierarchy, values)
    if missing:
        raise HierarchyError(uncovered_message(column, missing, source))


# --------------------------------------------------------------------------- reading a file


def _named(file: Path, column: str, option: str) -> str:
    return (
        f"hierarchy file {file} ({option} {column}=…)"
        if option == "--hierarchy"
        else (f"hierarchy file {file} ({option}, column '{column}')")
    )


def _lines(text: str, sep: str) -> list[tuple[int, tuple[str, ...]]]:
    """The file's rows with their line numbers (blank lines skipped)."""
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    out = []
    for row in reader:
        if any(cell.strip() for cell in row):
            out.append((reader.line_num, tuple(row)))
    return out


def _other_separator(text: str, sep: str) -> str | None:
    """A separator other than ``sep`` that splits every line into the same number (at
    least 2) of values, when ``sep`` splits none."""
    for candidate in SEPARATORS:
        if candidate == sep:
            continue
        widths = {len(row) for _, row in _lines(text, candidate)}
        if len(widths) == 1 and widths.pop() >= 2:
            return candidate
    return None


def _detail(message: str, column: str) -> str:
    prefix = f"hierarchy of {column!r}"
    detail = message[len(prefix) :].lstrip(": ") if message.startswith(prefix) else message
    return detail


def _first_wrong_line(lines: list[tuple[int, tuple[str, ...]]], column: str) -> tuple[int, str]:
    """The first line whose rows, with those before it, no longer form a hierarchy, and
    why: the shortest failing prefix, found by bisection (a prefix that fails stays failing
    when lines are added: every check is about lines read together)."""
    rows = [row for _, row in lines]
    low, high = 1, len(rows)  # the whole file fails; find the shortest prefix that does
    reason = ""
    while low < high:
        middle = (low + high) // 2
        try:
            Hierarchy(column, tuple(rows[:middle]))
        except HierarchyError:
            high = middle
        else:
            low = middle + 1
    try:
        Hierarchy(column, tuple(rows[:low]))
    except HierarchyError as exc:
        reason = _detail(str(exc), column)
    return lines[low - 1][0], reason


def decoded(raw: bytes, named: str) -> str:
    """A hierarchy file's text (UTF-8, a byte-order mark dropped), or a refusal naming the
    file (``named``) and the first line that is not UTF-8."""
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise EngineInputError(
            f"{named}, line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the "
            "file as UTF-8"
        ) from None


def read_hierarchy_file(
    path: str | Path, column: str, *, sep: str | None = None, option: str = "--hierarchy"
) -> Hierarchy:
    """A hierarchy file in ARX's format (one line per value of the column, the value then
    its generalizations, ``;`` or the file's own separator when ``sep`` is None), refused
    with a message naming the file, the column and the line (module docstring)."""
    file = Path(path)
    named = _named(file, column, option)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise EngineInputError(f"{named}: no such file") from None
    except OSError as exc:
        raise EngineInputError(f"{named}: cannot be read ({exc.strerror or exc})") from None
    return parse_hierarchy_text(decoded(raw, named), column, named=named, sep=sep)


def parse_hierarchy_text(
    text: str, column: str, *, named: str, sep: str | None = None, cli: bool = True
) -> Hierarchy:
    """A hierarchy from the text of a file in ARX's format (:func:`read_hierarchy_file`),
    refused with a message beginning with ``named`` (the file, or the web page's words)
    and naming the line; ``cli``: a wrong separator is answered with the option that
    sets it, else with the separator to write."""
    if sep is not None and len(sep) != 1:
        raise EngineInputError(f"{named}: the separator must be one character, not {sep!r}")
    text = text.lstrip("\ufeff")
    chosen = sniff_arx_separator(text) if sep is None else sep
    lines = _lines(text, chosen)
    if not lines:
        raise EngineInputError(
            f"{named}: the file is empty; it needs one line per value of '{column}': the "
            f"value, then its generalization at each level (e.g. 'F{chosen}*')"
        )
    first_line, first = lines[0]
    if all(len(row) == 1 for _, row in lines):
        other = _other_separator(text, chosen)
        if other is not None:
            fix = f"give --hierarchy-sep {other!r}" if cli else f"separate the values by {chosen!r}"
            raise EngineInputError(
                f"{named}: no line is split by the separator {chosen!r}, but every line is by "
                f"{other!r}; {fix}"
            )
    for line, row in lines[1:]:
        if len(row) != len(first):
            raise EngineInputError(
                f"{named}, line {line}: {len(row)} value{'s' if len(row) != 1 else ''}, but "
                f"line {first_line} has {len(first)} (separator {chosen!r}); every line needs "
                "the value and one generalization per level"
            )
    try:
        return Hierarchy(column, tuple(row for _, row in lines))
    except HierarchyError:
        line, reason = _first_wrong_line(lines, column)
        raise HierarchyError(f"{named}, line {line}: {reason}") from None


__all__ = [
    "SHOWN_VALUES",
    "VALUE_CHARS",
    "check_covered",
    "decoded",
    "parse_hierarchy_text",
    "read_hierarchy_file",
    "shown_values",
    "uncovered",
    "uncovered_message",
]
