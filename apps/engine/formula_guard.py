"""Spreadsheet formula injection ("CSV injection") neutralised in released text files.

A recipient who opens a released CSV in Excel, LibreOffice Calc or Google Sheets has every
cell that starts with ``=``, ``+``, ``-`` or ``@`` read as a formula — ``=HYPERLINK(…)``
sends data elsewhere on a click, ``=cmd|…`` (DDE) runs a program — and a leading tab or
carriage return lets such a cell slip past a check on the first visible character. The
OWASP guidance (OWASP, "CSV Injection") is to prefix such cells with a single quote, which
every spreadsheet shows as text and never evaluates.

Only text columns are touched: a numeric column is written as numbers (``-5`` in an
integer or decimal column stays ``-5``). In a text column, a cell that is a plain signed
number (``-5``, ``+3.25``, ``-1,234.5``, ``-2e3``) is left as it is too: a spreadsheet reads
it as a number and runs nothing, and data uploaded as CSV is kept as text, so prefixing
would turn every negative amount of such a release into text (``defusedcsv`` makes the same
exception). Anything more — ``-2+3``, ``-5%``, ``+A1`` — is prefixed. Parquet files are never
altered; the guard is for the copy people open in a spreadsheet, and is switched off per
release for analysis pipelines that need the raw values.
"""

from __future__ import annotations

import polars as pl

# = + - @, tab (0x09) and carriage return (0x0D) as the first character (OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_STARTS_A_FORMULA = r"^[=+\-@\t\r]"
_PLAIN_NUMBER = r"^[+-]?(?:\d+(?:,\d{3})*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"
PREFIX = "'"


def is_text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def starts_a_formula(column: str) -> pl.Expr:
    """True where the cell's text begins with a character that makes it a formula and is
    not a plain signed number."""
    text = pl.col(column).cast(pl.String)
    return (text.str.contains(_STARTS_A_FORMULA) & ~text.str.contains(_PLAIN_NUMBER)).fill_null(
        False
    )


def formula_guarded(column: str) -> pl.Expr:
    """The text column with ``'`` prefixed to every cell that would start a formula; other
    cells (and nulls) unchanged."""
    text = pl.col(column).cast(pl.String)
    return (
        pl.when(starts_a_formula(column)).then(pl.lit(PREFIX) + text).otherwise(text).alias(column)
    )


def guard_formulas(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """The frame with every text column guarded, and the number of cells prefixed per
    column (columns with none left out)."""
    if not any(is_text(dtype) for dtype in frame.schema.values()):
        return frame, {}
    guarded, counts = guard_formulas_lazy(frame.lazy())
    return guarded.collect(), counts


def guard_formulas_lazy(frame: pl.LazyFrame) -> tuple[pl.LazyFrame, dict[str, int]]:
    """`guard_formulas` for a release too large to hold: the counts come from one
    streaming aggregate (memory independent of the rows), and the guarded frame stays a
    query, to be written with ``sink_csv`` batch by batch."""
    text = [name for name, dtype in frame.collect_schema().items() if is_text(dtype)]
    if not text:
        return frame, {}
    counts = (
        frame.select(starts_a_formula(c).sum().alias(c) for c in text)
        .collect(engine="streaming")
        .row(0, named=True)
    )
    guarded = frame.with_columns(formula_guarded(c) for c in text if counts[c])
    return guarded, {c: int(n) for c, n in counts.items() if n}
