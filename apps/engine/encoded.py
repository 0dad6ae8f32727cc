"""The encoded data set: a table reduced to its distinct quasi-identifier tuples with their
counts, each value replaced by a small integer code (``EncodedData``), the form every
risk figure, generalization and search reads. Every risk figure depends only on how many
rows share each combination of quasi-identifier values, so this table's size is the
number of distinct tuples, never the number of rows. Here too the one rule of its
dictionaries (the texts of the values, sorted, the missing value last) and the
constructor from a grouped table of codes. Made by ``apps.engine.frame`` (encoding) and
``apps.engine.packed``; contract: docs/engine-contract.md (encoded.py)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.textcodes import TableViews
from apps.engine.workers import Deferred

CODE_DTYPE = pl.UInt32


COUNT_COLUMN = "count"


class EncodedData:
    """A data set reduced to its distinct quasi-identifier tuples.

    `dictionaries[j][code]` is the value (a string, or None for the missing value)
    that code `code` stands for in column `quasi[j]` of `tuples`.  Rows of `tuples`
    come in no particular order; `tuples["count"]` sums to `rows`.

    Encoded in memory (``apps.engine.frame._encode_in_memory``), the tuples are held as arrays
    (`arrays`: codes ``[d x tuples]`` and counts), which the search reads directly; the
    `tuples` table is then made from them when first read. Their grouping may still be
    under way in another thread when this object is returned (the dictionaries are
    ready: a caller looks values up meanwhile); `arrays` waits for it. `views` then
    holds the dictionaries' string views, one after the other (read through the table's
    buffers, or on a small table through the dictionaries' own bytes:
    ``textcodes.code_table``), with which the hierarchies find the values of every column
    in one compiled call (``hierarchies.lookup_columns``) without reading them back from
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
        views: TableViews | None = None,
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


def from_tuples(
    quasi: tuple[str, ...], dictionaries: list[pl.Series], tuples: pl.DataFrame
) -> EncodedData:
    rows = int(tuples.get_column(COUNT_COLUMN).cast(pl.UInt64).sum()) if tuples.height else 0
    return EncodedData(quasi=quasi, dictionaries=tuple(dictionaries), tuples=tuples, rows=rows)


def sorted_dictionary(name: str, labels: pl.Series) -> pl.Series:
    present = labels.drop_nulls().unique().sort()
    missing = [None] if labels.null_count() else []
    return pl.Series(name, [*present.to_list(), *missing], dtype=pl.String)
