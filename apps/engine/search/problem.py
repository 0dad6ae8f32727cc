"""The search problem in primitive arrays: distinct QI tuples, their counts, lookups.

The search never touches raw rows. It works on the compressed table of distinct
quasi-identifier tuples (one row per tuple, one code per QI, and the number of
rows holding the tuple) and, per QI, the lookup arrays of its generalization hierarchy
(``maps[L][code]`` = generalized code at level ``L``; ``leaves[L][gcode]`` = hierarchy
leaves the generalized value covers). These are exactly the arrays of Engine I's
``GeneralizationLookup`` (docs/engine-contract.md); :func:`problem_from_encoded` adapts
``EncodedData`` + lookups, :func:`build_problem` takes bare arrays (tests, benchmarks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import LookupBatch
from apps.engine.search.kernels.grouping import LevelMaps
from apps.engine.search.kernels.problem import problem_arrays

U32 = NDArray[np.uint32]
I64 = NDArray[np.int64]
#: Codes of a table, ``[d x rows]``: row ``j`` holds the codes of QI ``j``, in the
#: narrowest unsigned type that holds every code of every level (:func:`code_dtype`).
Codes = NDArray[np.unsignedinteger[Any]]
_T = TypeVar("_T")


class LookupLike(Protocol):
    """What the search needs from a ``GeneralizationLookup`` (Engine I, hierarchies.py)."""

    @property
    def column(self) -> str: ...
    @property
    def maps(self) -> tuple[NDArray[np.uint32], ...]: ...
    @property
    def leaves(self) -> tuple[NDArray[np.integer], ...]: ...
    @property
    def domain_size(self) -> int: ...


class EncodedLike(Protocol):
    """What the search needs from ``EncodedData`` (Engine I, frame.py)."""

    @property
    def quasi(self) -> tuple[str, ...]: ...
    @property
    def tuples(self) -> pl.DataFrame: ...
    @property
    def rows(self) -> int: ...


@dataclass(frozen=True, eq=False)
class QuasiLookup:
    """Lookup arrays of one quasi-identifier's hierarchy (contract: GeneralizationLookup)."""

    column: str
    maps: tuple[U32, ...]  # maps[L][code] -> generalized code at level L (maps[0] = identity)
    leaves: tuple[I64, ...]  # leaves[L][gcode] -> number of hierarchy leaves covered
    domain_size: int  # |H_j|: leaves of the hierarchy
    labels: tuple[tuple[str | None, ...], ...] | None = None  # labels[L][gcode], if known

    @property
    def height(self) -> int:
        """Levels above the leaves; valid levels are 0..height."""
        return len(self.maps) - 1

    def values_at(self, level: int) -> int:
        """Number of distinct generalized codes at ``level``."""
        return len(self.leaves[level])

    @classmethod
    def from_maps(cls, column: str, maps: Sequence[NDArray[np.integer]]) -> QuasiLookup:
        """A hierarchy given by its level maps alone (``maps[0]`` = the identity over the
        leaves), each generalized value covering the leaves that map to it."""
        return cls(
            column,
            tuple(np.asarray(m, dtype=np.uint32) for m in maps),
            tuple(np.bincount(np.asarray(m, dtype=np.int64)).astype(np.int64) for m in maps),
            len(maps[0]),
        )


@dataclass(frozen=True, eq=False)
class SearchProblem:
    """Compressed data + lookups + per-level marginal frequencies, ready for the search.

    ``frequencies[j][L][g]`` = rows whose QI ``j`` generalizes to code ``g`` at level ``L``
    (over all ``rows``). ``flat_maps[map_offsets[j, a, b] + code]`` maps a level-``a``
    code of QI ``j`` to level ``b > a`` (all lookup arrays in one array for the compiled
    roll-up; offset -2 where no such map exists). Maps from levels above 0 exist only
    when every hierarchy is *consistent* (each generalized value has one parent), which
    is what makes classes merge when going up the lattice, so roll-up, predictive
    tagging and monotone bounds are valid (``kernels/problem.py``).
    """

    quasi: tuple[str, ...]
    codes: Codes  # [d x distinct tuples], row j = QI j (dtype: code_dtype(lookups))
    counts: I64
    lookups: tuple[QuasiLookup, ...]
    rows: int
    consistent: bool
    flat_maps: U32
    map_offsets: I64  # [d x (H+1) x (H+1)], H = the greatest height
    level_values: I64  # [d x (H+1)]: values_at(level) of QI j (0 above its height)
    #: Every ``frequencies[j][L]`` in one array, QI by QI, level by level (they are its
    #: slices, from ``frequency_at[j, L]``): what the compiled passes over all of them
    #: read (``bounds.py``).
    flat_frequencies: I64
    frequency_at: I64  # [d x (H+1)]
    distinct: bool = False  # no two tuples are equal (build_problem)
    #: What a search of this problem computes that later searches of it can reuse
    #: (lattices, the bottom node's classes, rare rows under a ``k``, working memory):
    #: computed by the first search that needs it and reused by the solves of the
    #: Pareto front. Holds nothing that refers back to the problem, so dropping the
    #: problem frees it all at once.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def memoized(self, key: Any, make: Callable[[], _T]) -> _T:
        """``memo[key]``, made by ``make()`` on first use."""
        try:
            found: _T = self.memo[key]
        except KeyError:
            found = self.memo.setdefault(key, make())
        return found

    @cached_property
    def maps(self) -> LevelMaps:
        """``flat_maps``, ``map_offsets`` and ``level_values`` in one bundle (kernels)."""
        return LevelMaps(self.flat_maps, self.map_offsets, self.level_values)

    @cached_property
    def frequencies(self) -> tuple[tuple[I64, ...], ...]:
        """``frequencies[j][L]``: slices of :attr:`flat_frequencies`, made when first
        read (a protocol run's search without suppression reads none: 54 slices on
        adult_subset)."""
        # (as Python ints: slicing by numpy scalars costs more than the slices)
        starts, sizes = self.frequency_at.tolist(), self.level_values.tolist()
        flat = self.flat_frequencies
        return tuple(
            [
                tuple(
                    [
                        flat[starts[j][level] : starts[j][level] + sizes[j][level]]
                        for level in range(len(lk.maps))
                    ]
                )
                for j, lk in enumerate(self.lookups)
            ]
        )

    @property
    def dimensions(self) -> int:
        return len(self.quasi)

    @cached_property
    def heights(self) -> tuple[int, ...]:
        return tuple(lk.height for lk in self.lookups)


_U32 = np.dtype(np.uint32)
_I64 = np.dtype(np.int64)


def _as_array(values: Any, dtype: np.dtype[Any]) -> Any:
    """``np.asarray(values, dtype)``, without its cost (more than this test) when
    ``values`` is such an array already: every map and leaf count of every level of
    every column, in every protocol run."""
    if type(values) is np.ndarray and values.dtype is dtype:
        return values
    return np.asarray(values, dtype)


def _as_lookup(lk: LookupLike) -> QuasiLookup:
    maps = tuple([_as_array(m, _U32) for m in lk.maps])
    leaves = tuple([_as_array(v, _I64) for v in lk.leaves])
    if len(maps) != len(leaves) or not maps:
        raise EngineInputError(f"hierarchy of {lk.column!r}: maps and leaves disagree")
    first = len(maps[0])
    for m in maps:
        if len(m) != first:
            raise EngineInputError(f"hierarchy of {lk.column!r}: levels map different values")
    labels = getattr(lk, "labels", None)
    return QuasiLookup(lk.column, maps, leaves, int(lk.domain_size), labels)


def code_dtype(lookups: Sequence[QuasiLookup]) -> np.dtype[Any]:
    """The narrowest unsigned integer type that holds every code of every level of
    every hierarchy (``uint8`` up to 256 values, then ``uint16``, else ``uint32``)."""
    most = max((lk.values_at(level) for lk in lookups for level in range(lk.height + 1)), default=0)
    return _narrowest(most)


#: Code types from the narrowest, with the most values each holds (a constant: ``np.iinfo``
#: costs more than the rest of choosing).
_WIDTHS = ((np.dtype(np.uint8), 1 << 8), (np.dtype(np.uint16), 1 << 16))


def _narrowest(most: int) -> np.dtype[Any]:
    for dtype, values in _WIDTHS:
        if most <= values:
            return dtype
    return np.dtype(np.uint32)


@dataclass(frozen=True, eq=False)
class _LookupArrays:
    """What a problem takes from its lookups alone (made before its tuples are read):
    the lookups, each QI's height and values per level, and every map in one array
    (QI ``j``'s map to level ``L`` from ``maps_at[j, L]``)."""

    lookups: tuple[QuasiLookup, ...]
    heights: I64
    level_values: I64
    maps_at: I64
    every_map: U32
    dtype: np.dtype[Any]  # (code_dtype of the lookups)


def _lookup_arrays(lookups: Sequence[LookupLike]) -> _LookupArrays:
    lks = tuple([_as_lookup(lk) for lk in lookups])
    width = max([len(lk.maps) for lk in lks], default=1)
    # (rows of Python ints, made into arrays at once: numpy's element writes cost more)
    values: list[list[int]] = []
    starts: list[list[int]] = []
    parts: list[U32] = []
    at = 0
    for lk in lks:
        # (every map of a lookup has as many values as its first: _as_lookup)
        levels, n = len(lk.maps), len(lk.maps[0])
        pad = [0] * (width - levels)
        values.append([len(v) for v in lk.leaves] + pad)
        starts.append([*range(at, at + levels * n, n)] if n else [at] * levels)
        starts[-1] += pad
        parts.extend(lk.maps)
        at += levels * n
    heights = np.array([len(lk.maps) - 1 for lk in lks], dtype=np.int64)
    level_values = np.array(values, dtype=np.int64).reshape(len(lks), width)
    maps_at = np.array(starts, dtype=np.int64).reshape(len(lks), width)
    every_map = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    dtype = _narrowest(max([max(v) for v in values], default=0))
    return _LookupArrays(lks, heights, level_values, maps_at, every_map, dtype)


def _batch_arrays(lookups: Sequence[LookupLike]) -> _LookupArrays | None:
    """:func:`_lookup_arrays` of look-ups made together (``hierarchies.lookup_columns``),
    in this order: read off their flat arrays (``LookupBatch``), which are already in
    the layout of the problem's, with no pass over their columns' levels. None when the
    look-ups were not made together, or not in this order."""
    batch = getattr(lookups[0], "batch", None) if lookups else None
    if not isinstance(batch, LookupBatch) or len(batch.columns) != len(lookups):
        return None
    made = [getattr(lk, "batch", None) for lk in lookups]
    if any(b is not batch for b in made) or [lk.column for lk in lookups] != list(batch.columns):
        return None
    # (the look-ups' arrays are of the problem's types, their levels agree: made so)
    lks = tuple(
        [
            QuasiLookup(
                lk.column,
                lk.maps,
                cast(tuple[I64, ...], lk.leaves),
                lk.domain_size,
                getattr(lk, "labels", None),
            )
            for lk in lookups
        ]
    )
    return _LookupArrays(
        lks, batch.heights, batch.level_values, batch.maps_at, batch.maps, _narrowest(batch.most)
    )


def build_problem(
    quasi: Sequence[str],
    codes: Sequence[NDArray[np.integer]] | NDArray[np.integer],
    counts: NDArray[np.integer],
    lookups: Sequence[LookupLike],
    *,
    distinct: bool = False,
) -> SearchProblem:
    """Validate bare arrays and precompute marginals and inter-level maps.

    ``distinct``: the caller guarantees that no two tuples are equal (as after a
    group-by), so the bottom node's classes are the tuples themselves, in their order.

    ``codes`` is either a ``[tuples x d]`` matrix or one array per QI. Tuples need not be
    distinct (duplicates simply form the same class), but distinct is what makes it fast.
    """
    return _build(quasi, codes, counts, _lookup_arrays(lookups), distinct)


def _build(
    quasi: Sequence[str],
    codes: Sequence[NDArray[np.integer]] | NDArray[np.integer],
    counts: NDArray[np.integer],
    prepared: _LookupArrays,
    distinct: bool,
) -> SearchProblem:
    quasi_t = tuple(quasi)
    lks = prepared.lookups
    cnt = np.ascontiguousarray(counts, dtype=np.int64)
    if isinstance(codes, np.ndarray) and codes.ndim == 2:
        cols = np.ascontiguousarray(codes.T, dtype=np.uint32)
    elif len(codes):
        if len({len(c) for c in codes}) > 1:
            raise EngineInputError("code columns differ in length")
        cols = np.ascontiguousarray(np.stack([np.asarray(c) for c in codes]), dtype=np.uint32)
    else:
        cols = np.zeros((0, len(cnt)), dtype=np.uint32)
    if not (len(quasi_t) == len(cols) == len(lks)):
        raise EngineInputError("quasi-identifiers, code columns and hierarchies differ in number")
    if cols.shape[1] != len(cnt):
        for name, col in zip(quasi_t, cols, strict=True):
            raise EngineInputError(f"column {name!r}: {len(col)} codes for {len(cnt)} counts")
    # Narrow codes (usually one byte per QI): roll-ups read and write far fewer bytes.
    cols = cols.astype(prepared.dtype)
    level_values = prepared.level_values
    freq, freq_at, flat, offsets, consistent, bad, bad_level = problem_arrays(
        cols, cnt, prepared.every_map, prepared.maps_at, level_values, prepared.heights
    )
    if bad >= 0:
        if bad_level < 0:
            raise EngineInputError(
                f"column {quasi_t[bad]!r}: a code is outside its hierarchy lookup"
            )
        raise EngineInputError(
            f"hierarchy of {lks[bad].column!r}: level {bad_level} maps to a code without a label"
        )
    return SearchProblem(
        quasi=quasi_t,
        codes=cols,
        counts=cnt,
        lookups=lks,
        rows=int(cnt.sum()),
        consistent=bool(consistent),
        flat_maps=flat,
        map_offsets=offsets,
        level_values=level_values,
        flat_frequencies=freq,
        frequency_at=freq_at,
        distinct=distinct,
    )


def problem_from_encoded(encoded: EncodedLike, lookups: Sequence[LookupLike]) -> SearchProblem:
    """Adapter: Engine I's ``EncodedData`` + one ``GeneralizationLookup`` per QI.

    Lookups are matched to QIs by column name, so their order does not matter. What
    the problem takes from the lookups alone is made first (read off their flat arrays
    when they were made together: :func:`_batch_arrays`), then the tuples are read
    (encoded in memory, their grouping may still be under way in another thread).
    """
    by_name = {lk.column: lk for lk in lookups}
    missing = [q for q in encoded.quasi if q not in by_name]
    if missing:
        raise EngineInputError(f"no hierarchy for quasi-identifier(s): {', '.join(missing)}")
    ordered = [by_name[q] for q in encoded.quasi]
    prepared = _batch_arrays(ordered) or _lookup_arrays(ordered)
    arrays = getattr(encoded, "arrays", None)
    cols: Sequence[NDArray[np.integer]] | NDArray[np.integer]
    if arrays is not None:  # (encoded in memory: no table to go through)
        # (``[d x tuples]`` seen as the ``[tuples x d]`` matrix: its rows are the
        # columns already, not copied)
        cols, counts = arrays[0].T, arrays[1]
    else:
        tuples = encoded.tuples
        cols = [tuples.get_column(q).to_numpy() for q in encoded.quasi]
        counts = tuples.get_column("count").to_numpy()
    # (the tuples of a group-by: distinct)
    return _build(encoded.quasi, cols, counts, prepared, distinct=True)


def lattice_tops(problem: SearchProblem, max_levels: Mapping[str, int] | None) -> list[int]:
    """Per-QI highest level searched: the hierarchy height, or a lower user maximum."""
    tops = list(problem.heights)
    for name, level in (max_levels or {}).items():
        if name not in problem.quasi:
            raise EngineInputError(f"maximum level given for {name!r}, not a quasi-identifier")
        j = problem.quasi.index(name)
        if level < 0:
            raise EngineInputError(f"maximum level of {name!r} must be >= 0, got {level}")
        tops[j] = min(tops[j], int(level))
    return tops
