"""Exact dictionary codes of text columns, in compiled passes over Arrow string views.

A polars String column is stored as Arrow *string views*: 16 bytes per value, its length
and then, up to 12 bytes, the value itself (zero-padded), else its first 4 bytes and where
the rest lies in a data buffer. Two values of at most 12 bytes are therefore equal exactly
when their views are, and comparing longer values reads their bytes. That lets one
compiled pass give every value of a column a code (a hash table over the views in which
values are compared exactly, so no hash collision can merge two values), another sort the
distinct values by their bytes (the order of polars' string sort), and a third find
values in a prepared index (a hierarchy's leaves): no Python per value (ARX's
``Dictionary`` does the like with a Java hash map of strings).

Everything is checked against polars (unique, sort, look-ups) on random texts, short
and long, with missing values, in ``tests/engine/test_textcodes.py``.
By concern: :mod:`.views` (reading the views, hashing, equality), :mod:`.codes` (codes of
first appearance, grouped rows), :mod:`.order` (the string order, sorted dictionaries) and
:mod:`.index` (look-ups in prepared texts), :mod:`.dictionary` (a column's codes and sorted
dictionary in one compiled call, dictionaries made into Series at once), :mod:`.table` (every
column of a small table coded, its dictionaries made and its rows grouped in one compiled
call). Compiled code is cached on disk per module (``cache=True``).
"""

from apps.engine.textcodes.codes import dense_codes, group_rows
from apps.engine.textcodes.dictionary import (
    ColumnCodes,
    code_column,
    dictionary_codes,
    dictionary_series,
    encode_text,
)
from apps.engine.textcodes.index import TextIndex, find_texts, text_index
from apps.engine.textcodes.order import sorted_order
from apps.engine.textcodes.table import CodedTable, code_table
from apps.engine.textcodes.views import INLINE, TableViews, TextViews, joined_views, text_views

#: The modules holding compiled functions (the preload and its tests walk them).
MODULES = ("views", "codes", "order", "index", "dictionary", "table")

__all__ = [
    "CodedTable",
    "ColumnCodes",
    "INLINE",
    "MODULES",
    "TableViews",
    "TextIndex",
    "TextViews",
    "code_column",
    "code_table",
    "dense_codes",
    "dictionary_codes",
    "dictionary_series",
    "encode_text",
    "find_texts",
    "group_rows",
    "joined_views",
    "sorted_order",
    "text_index",
    "text_views",
]
