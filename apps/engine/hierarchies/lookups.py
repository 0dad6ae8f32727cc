"""The look-ups of a table's columns in their hierarchies, in one compiled call.

A search looks every quasi-identifier's dictionary up in its hierarchy: each value found
among the leaves (``textcodes.find_texts``), then its code at every level, numbering only
the generalized values present (``compiled.level_maps``). :func:`lookup_columns` does
that for all the columns at once: the hierarchies' arrays are handed over by address
(each compiled hierarchy's :attr:`~.compiled.CompiledHierarchy.addresses`, rows of one
array) and the dictionaries' views one after the other (``textcodes.TableViews``), and
the call returns every column's maps, generalized values and leaves in three flat arrays,
of which each column's are slices (a compiled call's unboxing of each array it receives
and boxing of each it returns cost more than the look-up of a small column). The search
problem takes the flat arrays as they are (``search/problem.py``: :class:`LookupBatch`).

Measured on ARX's data sets, A/B against the column-by-column look-ups and problem build
(99d0980), alternating processes on a loaded machine (2 cores, load 5-6), medians of 200-300
protocol runs (perf_counter; thread time agrees), look-ups + problem: adult_subset 0.18-0.19
ms -> 0.11-0.12 ms (look-ups 0.082-0.088 -> 0.065-0.067, problem 0.098-0.106 -> 0.048-0.050),
fars_subset 0.22-0.29 -> 0.16-0.24, adult 0.37-0.43 -> 0.31-0.35. On cup_subset the
look-ups are the compiled work itself (its ZIP hierarchy has 100,000 leaves): 0.68-0.94 ms
either way, the problem 0.34-0.42 -> 0.25-0.26 ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt
import polars as pl
from numba import njit, types
from numba.extending import intrinsic
from numba.np.numpy_support import carray
from numpy.typing import NDArray

from apps.engine.hierarchies import compiled as ch
from apps.engine.hierarchies.compiled import CompiledHierarchy, LevelLabels, level_maps
from apps.engine.textcodes import TableViews, joined_views, text_views
from apps.engine.textcodes.index import _find, _merge


class Hierarchy(Protocol):
    """What a look-up reads of a hierarchy (:class:`~.model.Hierarchy`, which calls
    :func:`lookup_columns` for its own look-up, so this module does not import it): its
    column, its rows, its compiled arrays, and the check that names the values it does
    not cover."""

    @property
    def column(self) -> str: ...

    @property
    def rows(self) -> tuple[tuple[str, ...], ...]: ...

    @property
    def compiled(self) -> CompiledHierarchy: ...

    def check_covers(self, values: Iterable[str | None]) -> None: ...


CodeArray = npt.NDArray[np.uint32]
CountArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class LookupBatch:
    """The look-ups of some columns made together (:func:`lookup_columns`), as the search
    problem reads them: every column's maps one after the other (``maps``; column ``j``'s
    map to level ``L`` from ``maps_at[j, L]``, 0 past its height), the values at each
    level (``level_values``, 0 past its height), the heights and the most values of a
    level of any column (``most``)."""

    columns: tuple[str, ...]
    maps: NDArray[np.uint32]
    maps_at: NDArray[np.int64]
    level_values: NDArray[np.int64]
    heights: NDArray[np.int64]
    most: int


@dataclass(frozen=True)
class GeneralizationLookup:
    """Code-to-code maps of one column's hierarchy, compiled for one dictionary.

    `maps[L][code]` is the generalized code at level L of the original value
    `code`; `labels[L][gcode]` its text (None for the missing value); `leaves[L][gcode]`
    how many hierarchy leaves that generalized value covers (Loss, Precision).
    ``batch``: the look-ups made with this one, in flat arrays (:class:`LookupBatch`).
    """

    column: str
    maps: tuple[CodeArray, ...]
    labels: Sequence[Sequence[str | None]]  # (a LevelLabels: a level is made when read)
    leaves: tuple[CountArray, ...]
    domain_size: int
    batch: LookupBatch | None = field(default=None, repr=False, compare=False)

    @property
    def height(self) -> int:
        return len(self.maps) - 1

    def generalize(self, codes: pl.Series, level: int) -> pl.Series:
        """Map a column of original codes to its codes at `level` (one gather)."""
        mapped = self.maps[level][codes.to_numpy()]
        return pl.Series(codes.name, mapped, dtype=pl.UInt32)


def _pointer_to(kind: Any) -> Callable[[np.int64], Any]:
    """A compiled function that makes an address a pointer to ``kind`` (for ``carray``)."""
    pointer = cast(Any, types.CPointer)(kind)

    @intrinsic
    def at(typingctx: Any, address: Any) -> Any:
        signature = pointer(types.int64)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

        return signature, codegen

    return cast(Callable[[np.int64], Any], at)


_int32_at = _pointer_to(types.int32)
_int64_at = _pointer_to(types.int64)
_uint64_at = _pointer_to(types.uint64)


@njit(cache=True, nogil=True)
def _positions(
    row: NDArray[np.int64], qviews: NDArray[np.uint64], qbases: NDArray[np.int64],
    qnulls: NDArray[np.bool_],
) -> NDArray[np.int64]:  # fmt: skip
    """``find_texts`` of one column's values in the leaves of the hierarchy at ``row``
    (its :attr:`~.compiled.CompiledHierarchy.addresses`): the same choice between the walk
    of the sorted keys and the hash table, on the same conditions."""
    n_rows = row[ch.ROWS]
    n = len(qviews)
    missing = 0
    for i in range(len(qnulls)):
        if qnulls[i]:
            missing += 1
    values = n - (1 if missing else 0)
    missing_last = missing == 0 or (missing == 1 and qnulls[n - 1])
    if row[ch.HIGH] != 0 and 8 * values >= n_rows and missing_last:
        high = carray(_uint64_at(row[ch.HIGH]), (n_rows,))
        low = carray(_uint64_at(row[ch.LOW]), (n_rows,))
        order = carray(_int64_at(row[ch.ORDER]), (n_rows,))
        out, merged = _merge(qviews, values, high, low, order)
        if merged:
            return out
    table = carray(_int64_at(row[ch.TABLE]), (row[ch.TABLE_N],))
    hashes = carray(_uint64_at(row[ch.HASHES]), (n_rows,))
    views = carray(_uint64_at(row[ch.TEXTS]), (n_rows, 2))
    bases = carray(_int64_at(row[ch.BASES]), (row[ch.BASES_N],))
    return _find(table, hashes, views, bases, qviews, qbases, qnulls)


@njit(cache=True, nogil=True)
def _look_up(
    rows: NDArray[np.int64],
    qviews: NDArray[np.uint64],
    qbases: NDArray[np.int64],
    base_at: NDArray[np.int64],
    qnulls: NDArray[np.bool_],
    starts: NDArray[np.int64],
) -> tuple[NDArray[np.uint32], NDArray[np.int64], NDArray[np.int64]]:
    """The look-ups of the first ``d`` columns of the views (``rows``: their hierarchies'
    addresses, ``[d x ADDRESS_WORDS]``).

    Returns ``(maps, facts, found)``. ``maps``: column ``j``'s codes at level ``L`` from
    ``maps_at[j, L]`` (as ``level_maps``' ``maps``, row after row, column after column).
    ``found``: ``[2 x m]``, the generalized values' label numbers (``present``) and leaves,
    column ``j``'s level ``L`` at ``level_at[j, L] .. level_at[j, L + 1]``. ``facts``: the
    width ``w`` (the most levels of a column), the most values of any level, then
    ``maps_at`` (``[d x w]``), ``level_values`` (``[d x w]``), ``level_at``
    (``[d x (w + 1)]``, the end repeated past the height), whether each column has a
    value that is not a leaf, and each column's height."""
    d = len(rows)
    width = 1
    size = 0
    bound = 0
    for j in range(d):
        h = rows[j, ch.HEIGHT]
        n = starts[j + 1] - starts[j]
        width = max(width, h + 1)
        size += (h + 1) * n
        bound += n * (h + 1) + h + 1
    maps_at, values_at, level_at = 2, 2 + d * width, 2 + 2 * d * width
    uncovered_at = level_at + d * (width + 1)
    heights_at = uncovered_at + d
    facts = np.zeros(heights_at + d, dtype=np.int64)
    facts[0] = width
    out = np.empty(size, dtype=np.uint32)
    found = np.empty((2, bound), dtype=np.int64)
    cursor = 0
    placed = 0
    most = 0
    for j in range(d):
        row = rows[j]
        h, n_rows = row[ch.HEIGHT], row[ch.ROWS]
        a, b = starts[j], starts[j + 1]
        n = b - a
        qnulls_j = qnulls[a:b] if len(qnulls) else qnulls[0:0]
        positions = _positions(row, qviews[a:b], qbases[base_at[j] :], qnulls_j)
        codes = carray(_int32_at(row[ch.CODES]), (h, n_rows))
        sizes = carray(_int64_at(row[ch.SIZES]), (h,))
        leaves = carray(_int64_at(row[ch.LEAVES]), (row[ch.LEAVES_N],))
        leaf_at = carray(_int64_at(row[ch.LEAF_AT]), (h + 1,))
        top_single = h > 0 and sizes[h - 1] == 1
        maps, present, offsets, covers, uncovered = level_maps(
            positions, codes, sizes, leaves, leaf_at, top_single
        )
        for level in range(h + 1):
            facts[maps_at + j * width + level] = cursor
            out[cursor : cursor + n] = maps[level]
            cursor += n
            count = offsets[level + 1] - offsets[level]
            facts[values_at + j * width + level] = count
            most = max(most, count)
        for level in range(width + 1):
            facts[level_at + j * (width + 1) + level] = placed + offsets[min(level, h + 1)]
        m = offsets[h + 1]
        found[0, placed : placed + m] = present
        found[1, placed : placed + m] = covers
        placed += m
        facts[uncovered_at + j] = 1 if uncovered else 0
        facts[heights_at + j] = h
    facts[1] = most
    return out, facts, found[:, :placed].copy()


def lookup_columns(
    hierarchies: Sequence[Hierarchy],
    dictionaries: Sequence[pl.Series],
    views: TableViews | None = None,
) -> list[GeneralizationLookup]:
    """The look-ups of the first ``len(hierarchies)`` dictionaries in their hierarchies
    (the same as :meth:`Hierarchy.lookup <.model.Hierarchy.lookup>` of each), in one
    compiled call (module docstring). ``views``: the dictionaries' views when their
    encoding kept them (``EncodedData.views``), else read from polars. A value that is not
    a leaf raises ``HierarchyError`` naming the column and the values."""
    d = len(hierarchies)
    if views is None:
        views = joined_views([text_views(dictionaries[j]) for j in range(d)])
    rows = (
        np.concatenate([h.compiled.addresses for h in hierarchies]).reshape(d, -1)
        if d
        else np.zeros((0, ch.ADDRESS_WORDS), dtype=np.int64)
    )
    maps, facts, found = _look_up(
        rows, views.views, views.bases, views.base_at, views.nulls, views.starts
    )
    known = facts.tolist()
    width, most = known[0], known[1]
    maps_at = facts[2 : 2 + d * width].reshape(d, width)
    level_values = facts[2 + d * width : 2 + 2 * d * width].reshape(d, width)
    level_at = facts[2 + 2 * d * width : 2 + 2 * d * width + d * (width + 1)].reshape(d, width + 1)
    tail = known[2 + 2 * d * width + d * (width + 1) :]
    uncovered, heights = tail[:d], tail[d:]
    for j in range(d):
        if uncovered[j]:
            hierarchies[j].check_covers(dictionaries[j].to_list())  # (raises, naming them)
    batch = LookupBatch(
        tuple([h.column for h in hierarchies]),
        maps,
        maps_at,
        level_values,
        facts[2 + 2 * d * width + d * (width + 1) + d :],
        most,
    )
    present, covers = found[0], found[1]
    starts = views.starts.tolist()
    bounds = level_at.tolist()
    found_lookups = []
    at = 0
    for j, hierarchy in enumerate(hierarchies):
        h, n = heights[j], starts[j + 1] - starts[j]
        ends = bounds[j]
        found_lookups.append(
            GeneralizationLookup(
                hierarchy.column,
                tuple(maps[at : at + (h + 1) * n].reshape(h + 1, n)),
                LevelLabels(
                    dictionaries[j], hierarchy.compiled.labels, present, level_at[j, : h + 2]
                ),
                tuple([covers[ends[level] : ends[level + 1]] for level in range(h + 1)]),
                len(hierarchy.rows),
                batch,
            )
        )
        at += (h + 1) * n
    return found_lookups
