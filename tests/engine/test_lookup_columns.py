"""The look-ups of all a table's columns in one compiled call (hierarchies/lookups.py) and
the problem read off their flat arrays (search/problem.py ``_batch_arrays``): the same
arrays as the column-by-column look-up and the problem built from plain look-ups, and
the definition, on random hierarchies and tables (missing values, non-ASCII and long
texts, values no hierarchy covers, hierarchies of height 0 and 1)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine import frame
from apps.engine.errors import HierarchyError
from apps.engine.frame import encode
from apps.engine.hierarchies import Hierarchy, hierarchy_from_rows, lookup_columns
from apps.engine.hierarchies.compiled import LevelLabels, level_maps
from apps.engine.search.problem import (
    QuasiLookup,
    SearchProblem,
    build_problem,
    problem_from_encoded,
)
from apps.engine.search.protocol import _lookups
from apps.engine.textcodes import find_texts

LONG = "a value longer than twelve bytes"


def base_lookup(hierarchy: Hierarchy, dictionary: pl.Series) -> tuple[Any, ...]:
    """The column-by-column look-up of the base (99d0980's ``Hierarchy.lookup``): the
    values found among the leaves, then ``level_maps``; (maps, labels, leaves)."""
    compiled = hierarchy.compiled
    positions = find_texts(compiled.index, dictionary)
    maps, present, offsets, leaves, uncovered = level_maps(
        positions,
        compiled.codes,
        compiled.sizes,
        compiled.leaves,
        compiled.leaf_at,
        hierarchy.top_is_single_value,
    )
    if uncovered:
        hierarchy.check_covers(dictionary.to_list())
    bounds = offsets.tolist()
    labels = LevelLabels(dictionary, compiled.labels, present, offsets)
    return (
        tuple(maps),
        [labels[level] for level in range(len(labels))],
        [leaves[a:b] for a, b in pairwise(bounds)],
    )


def defined_lookup(hierarchy: Hierarchy, dictionary: list[str | None]) -> tuple[Any, ...]:
    """The look-up by its definition: at level ``L`` each value's generalized value,
    numbered in the hierarchy's row order among those present, the missing value a group
    of its own (last, one leaf) except at a single top value, which it joins."""
    maps, labels, leaves = [], [], []
    for level in range(hierarchy.height + 1):
        if level == 0:
            texts: list[str | None] = list(dictionary)
            maps.append(list(range(len(dictionary))))
            labels.append(tuple(texts))
            leaves.append([1] * len(dictionary))
            continue
        of = [hierarchy.generalize(v, level) for v in dictionary]
        order = [row[level] for row in hierarchy.rows]
        present = sorted({x for x in of if x is not None}, key=order.index)
        numbered: list[str | None] = [*present, *([None] if None in of else [])]
        maps.append([numbered.index(x) for x in of])
        labels.append(tuple(numbered))
        leaves.append([order.count(x) if x is not None else 1 for x in numbered])
    return maps, labels, leaves


def plain(lookup: Any) -> QuasiLookup:
    """A look-up as plain arrays (no batch: the problem is built column by column)."""
    return QuasiLookup(
        lookup.column,
        tuple(np.array(m) for m in lookup.maps),
        tuple(np.array(v) for v in lookup.leaves),
        lookup.domain_size,
    )


FIELDS = (
    "codes",
    "counts",
    "flat_maps",
    "map_offsets",
    "level_values",
    "flat_frequencies",
    "frequency_at",
)


def assert_same_problem(got: SearchProblem, expected: SearchProblem) -> None:
    assert got.quasi == expected.quasi and got.rows == expected.rows
    assert got.consistent == expected.consistent and got.distinct == expected.distinct
    for name in FIELDS:
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    for a, b in zip(got.lookups, expected.lookups, strict=True):
        assert a.column == b.column and a.domain_size == b.domain_size
        for x, y in zip((*a.maps, *a.leaves), (*b.maps, *b.leaves), strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


TEXTS = st.text(alphabet="abé€ 🙂\x00", min_size=0, max_size=3) | st.sampled_from(
    [LONG, LONG + "é", "x" * 13, ""]
)


@st.composite
def hierarchies(draw: st.DrawFn, column: str) -> Hierarchy:
    """A random valid hierarchy: leaves, then levels each a grouping of the one below,
    its top a single value or not."""
    leaves = draw(st.lists(TEXTS, min_size=1, max_size=8, unique=True))
    height = draw(st.integers(0, 3))
    rows = [[leaf] for leaf in leaves]
    below = list(range(len(leaves)))  # each row's group at the level below
    for level in range(1, height + 1):
        groups = max(below) + 1
        up = draw(st.lists(st.integers(0, max(groups - 1, 0)), min_size=groups, max_size=groups))
        if level == height and draw(st.booleans()):
            up = [0] * groups  # a single top value
        below = [up[g] for g in below]
        for row, g in zip(rows, below, strict=True):
            row.append(f"L{level}-{g}" + ("é" if g % 2 else LONG[: g % 14]))
    return hierarchy_from_rows(column, rows)


@st.composite
def tables(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, Hierarchy], bool]:
    """Columns of values drawn from their hierarchies' leaves (some missing, some not
    leaves when ``uncovered``)."""
    d = draw(st.integers(1, 4))
    quasi = [f"q{j}" for j in range(d)]
    hs = {q: draw(hierarchies(q)) for q in quasi}
    n = draw(st.integers(1, 30))
    uncovered = draw(st.booleans()) and draw(st.booleans())
    columns = {}
    for q in quasi:
        pool: list[str | None] = [*hs[q].leaves, None]
        if uncovered:
            pool.append("not a leaf é")
        columns[q] = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    data = pl.DataFrame({q: pl.Series(q, columns[q], dtype=pl.String) for q in quasi})
    missed = any(v is not None and v not in hs[q].leaves for q in quasi for v in columns[q])
    return data, hs, missed


def check_table(data: pl.DataFrame, hs: dict[str, Hierarchy], missed: bool) -> None:
    quasi = list(hs)
    encoded = encode(data, quasi)
    dictionaries = encoded.dictionaries
    if missed:
        with pytest.raises(HierarchyError) as base:
            for q, dictionary in zip(quasi, dictionaries, strict=True):
                base_lookup(hs[q], dictionary)
        with pytest.raises(HierarchyError) as ours:
            _lookups(encoded, quasi, hs)
        assert str(ours.value) == str(base.value)
        assert "does not cover" in str(ours.value) and "'not a leaf é'" in str(ours.value)
        return
    found = _lookups(encoded, quasi, hs)
    assert encoded.views is None  # (let go of)
    for q, dictionary, lookup in zip(quasi, dictionaries, found, strict=True):
        maps, labels, leaves = base_lookup(hs[q], dictionary)
        assert lookup.column == q and lookup.domain_size == len(hs[q].rows)
        assert len(lookup.maps) == len(maps) == hs[q].height + 1
        for a, b in zip(lookup.maps, maps, strict=True):
            assert a.dtype == np.uint32
            np.testing.assert_array_equal(a, b)
        for a, b in zip(lookup.leaves, leaves, strict=True):
            assert a.dtype == np.int64
            np.testing.assert_array_equal(a, b)
        assert list(lookup.labels) == labels
        defined = defined_lookup(hs[q], dictionary.to_list())
        assert [m.tolist() for m in lookup.maps] == defined[0]
        assert list(lookup.labels) == defined[1]
        assert [v.tolist() for v in lookup.leaves] == defined[2]
    # the same without the encoding's views (read from the dictionaries)
    again = lookup_columns([hs[q] for q in quasi], dictionaries)
    for a, b in zip(again, found, strict=True):
        for x, y in zip((*a.maps, *a.leaves), (*b.maps, *b.leaves), strict=True):
            np.testing.assert_array_equal(x, y)
    problem = problem_from_encoded(encoded, found)
    assert problem.lookups[0].labels is found[0].labels  # (read off the batch)
    codes, counts = encoded.arrays  # type: ignore[misc]
    expected = build_problem(quasi, codes.T, counts, [plain(lk) for lk in found], distinct=True)
    assert_same_problem(problem, expected)
    # look-ups in another order than the problem's QIs: matched by name, built as before
    shuffled = problem_from_encoded(encoded, found[::-1])
    assert_same_problem(shuffled, expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_lookups_and_problem_are_those_of_the_column_by_column_build(
    table: tuple[pl.DataFrame, dict[str, Hierarchy], bool],
) -> None:
    check_table(*table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_the_same_with_the_columns_coded_one_by_one(
    table: tuple[pl.DataFrame, dict[str, Hierarchy], bool],
) -> None:
    """The encoding of larger tables (each column coded on its own, its views joined)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(frame, "PARALLEL_ROWS", 0)
        check_table(*table)


def test_two_columns_worked_out_by_hand() -> None:
    # age: leaves 25, 27, 31 (30-34), 45; data: 45, 25, missing, 31 (27 absent)
    ages = hierarchy_from_rows(
        "age",
        [
            ["25", "25-29", "*"],
            ["27", "25-29", "*"],
            ["31", "30-34", "*"],
            ["45", "45-49", "*"],
        ],
    )
    # town: a long label, two tops (the missing value stays apart at every level)
    towns = hierarchy_from_rows("town", [[LONG, "north"], ["Zürich", "south"], ["x", "south"]])
    data = pl.DataFrame(
        {
            "age": ["45", "25", None, "31", "45"],
            "town": ["Zürich", LONG, LONG, None, "Zürich"],
        }
    )
    encoded = encode(data, ["age", "town"])
    assert [d.to_list() for d in encoded.dictionaries] == [
        ["25", "31", "45", None],
        ["Zürich", LONG, None],  # (by bytes: "Z" before "a")
    ]
    age, town = _lookups(encoded, ["age", "town"], {"age": ages, "town": towns})
    assert [m.tolist() for m in age.maps] == [[0, 1, 2, 3], [0, 1, 2, 3], [0, 0, 0, 0]]
    assert list(age.labels) == [("25", "31", "45", None), ("25-29", "30-34", "45-49", None), ("*",)]
    assert [v.tolist() for v in age.leaves] == [[1, 1, 1, 1], [2, 1, 1, 1], [4]]
    assert [m.tolist() for m in town.maps] == [[0, 1, 2], [1, 0, 2]]  # north first (row order)
    assert list(town.labels) == [("Zürich", LONG, None), ("north", "south", None)]
    assert [v.tolist() for v in town.leaves] == [[1, 1, 1], [1, 2, 1]]
    problem = problem_from_encoded(encoded, [age, town])
    assert problem.consistent and problem.rows == 5
    # heights 2 and 1: the maps of every level one after the other, 0 past a height
    assert problem.level_values.tolist() == [[4, 4, 1], [3, 3, 0]]
    assert problem.frequencies[0][1].tolist() == [1, 1, 2, 1]  # 25-29, 30-34, 45-49, missing
    assert problem.frequencies[1][1].tolist() == [2, 2, 1]  # north, south, missing
    assert problem.codes.dtype == np.uint8


def test_an_uncovered_value_is_named_with_its_column() -> None:
    ages = hierarchy_from_rows("age", [["25", "*"], ["27", "*"]])
    sexes = hierarchy_from_rows("sex", [["F", "*"], ["M", "*"]])
    data = pl.DataFrame({"age": ["25", "27"], "sex": ["F", "X"]})
    with pytest.raises(HierarchyError, match=r"hierarchy of 'sex' does not cover 1 value\(s\)"):
        _lookups(encode(data, ["age", "sex"]), ["age", "sex"], {"age": ages, "sex": sexes})
