from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.errors import EngineInputError, HierarchyError
from apps.engine.frame import encode_file
from apps.engine.hierarchies import (
    Hierarchy,
    categorical_hierarchy,
    date_hierarchy,
    format_arx_text,
    hierarchy_from_rows,
    interval_hierarchy,
    parse_arx_text,
    parse_interval,
    prefix_hierarchy,
    read_arx_csv,
    suppression_hierarchy,
    write_arx_csv,
)
from apps.engine.hierarchies.compiled import level_maps
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT_COLUMNS, ARX_DIR

AGES = Hierarchy(
    "age",
    (
        ("25", "25-29", "20-39", "*"),
        ("27", "25-29", "20-39", "*"),
        ("31", "30-34", "20-39", "*"),
        ("45", "45-49", "40-59", "*"),
    ),
)


def test_height_and_generalize() -> None:
    assert AGES.height == 3
    assert AGES.generalize("27", 1) == "25-29"
    assert AGES.generalize(None, 2) is None and AGES.generalize(None, 3) == "*"
    with pytest.raises(HierarchyError, match="levels 0..3"):
        AGES.generalize("27", 4)


def test_lookup_maps_labels_leaves() -> None:
    dictionary = pl.Series("age", ["25", "31", "45", None])  # as frame.encode builds it
    lookup = AGES.lookup(dictionary)
    assert lookup.column == "age" and lookup.domain_size == 4 and lookup.height == 3
    assert lookup.maps[0].tolist() == [0, 1, 2, 3]
    assert lookup.maps[1].tolist() == [0, 1, 2, 3]  # 25-29, 30-34, 45-49, missing
    assert lookup.labels[1] == ("25-29", "30-34", "45-49", None)
    assert lookup.leaves[1].tolist() == [2, 1, 1, 1]  # 25-29 covers 25 and 27
    assert lookup.maps[2].tolist() == [0, 0, 1, 2]
    assert lookup.labels[2] == ("20-39", "40-59", None)
    assert lookup.leaves[2].tolist() == [3, 1, 1]
    assert lookup.maps[3].tolist() == [0, 0, 0, 0]  # missing joins "*" at the top only
    assert lookup.labels[3] == ("*",) and lookup.leaves[3].tolist() == [4]
    assert all(m.dtype == np.uint32 for m in lookup.maps)
    codes = pl.Series("age", [2, 0, 3], dtype=pl.UInt32)
    assert lookup.generalize(codes, 2).to_list() == [1, 0, 2]


def test_missing_value_stays_apart_when_top_is_not_single() -> None:
    two_tops = Hierarchy("x", (("a", "A"), ("b", "B")))
    lookup = two_tops.lookup(pl.Series(["a", "b", None]))
    assert lookup.labels[1] == ("A", "B", None)


def test_top_is_single_value_counts_the_top_level_labels() -> None:
    # (read off the compiled hierarchy: the labels of the top level counted once)
    assert Hierarchy("x", (("a", "A", "*"), ("b", "B", "*"))).top_is_single_value
    assert Hierarchy("x", (("a", "all"), ("b", "all"))).top_is_single_value
    assert not Hierarchy("x", (("a", "A"), ("b", "B"))).top_is_single_value
    assert not Hierarchy("x", (("a", "A", "*"), ("b", "B", "+"))).top_is_single_value
    assert not Hierarchy("x", (("a",), ("b",))).top_is_single_value  # (no level above)
    assert Hierarchy("x", (("a", "*"),)).top_is_single_value


def test_lookup_lists_uncovered_values() -> None:
    values = pl.Series("age", ["25", *[str(i) for i in range(100, 125)]])
    with pytest.raises(HierarchyError) as info:
        AGES.lookup(values)
    message = str(info.value)
    assert "does not cover 25 value(s)" in message
    assert "'100'" in message and "'119'" in message and "'120'" not in message  # first 20
    assert "(25 in all)" in message


def test_level_maps_flags_values_that_are_not_leaves() -> None:
    """level_maps says whether a position is -2 (a value the hierarchy does not hold),
    found in its own pass (issue #26: the look-up no longer scans the positions for it),
    and takes such a value as missing, as before."""
    compiled = hierarchy_from_rows("s", [["a", "ab", "*"], ["b", "ab", "*"]]).compiled
    args = (compiled.codes, compiled.sizes, compiled.leaves, compiled.leaf_at, True)
    known = level_maps(np.array([0, 1, -1], dtype=np.int64), *args)
    unknown = level_maps(np.array([0, 1, -2], dtype=np.int64), *args)
    assert known[4] is False and unknown[4] is True
    for a, b in zip(known[:4], unknown[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    assert level_maps(np.array([1, 0], dtype=np.int64), *args)[4] is False


# --------------------------------------------------------------------------- validation


def test_non_functional_level_is_named() -> None:
    with pytest.raises(
        HierarchyError, match=r"level 2 is not a function of level 1: 'A' -> 'X' and 'Y'"
    ):
        Hierarchy("c", (("a", "A", "X"), ("b", "A", "Y")))


def test_range_like_labels_of_an_import_are_opaque_text() -> None:
    # ARX accepts these group labels of a categorical variable: a hierarchy is a
    # functional mapping and labels are text, so '4-6', '4-7', '7-9' are three groups.
    rows = (
        ("a", "4-6", "low", "*"),
        ("b", "4-7", "low", "*"),
        ("c", "7-9", "high", "*"),
        ("d", "7-9", "high", "*"),
    )
    hierarchy = parse_arx_text("\n".join(";".join(r) for r in rows), "grade")
    assert hierarchy.level_labels(1) == ("4-6", "4-7", "7-9")
    lookup = hierarchy.lookup(pl.Series(["a", "b", "c", "d"]))
    assert lookup.maps[1].tolist() == [0, 1, 2, 2]
    assert lookup.leaves[1].tolist() == [1, 1, 2]
    # the same for other interval-looking labels: "[0, 10[" and "[5, 15[" are two groups
    Hierarchy("n", (("1", "[0, 10[", "*"), ("12", "[5, 15[", "*"), ("95", "90+", "*")))


def test_interval_builder_refuses_a_top_label_that_overlaps_its_intervals() -> None:
    # The builder's labels are intervals by construction: a custom top code reading
    # "30-50" would overlap the interval 30-39 at level 1.
    with pytest.raises(
        HierarchyError, match=r"overlapping intervals at level 1: '30-39' and '30-50'"
    ):
        interval_hierarchy("age", ["31", "45"], [10], top=40, top_label="30-50")
    # touching half-open intervals and integer ranges do not overlap
    h = interval_hierarchy("w", ["0.5", "10", "25.5"], [10], top=20)
    assert [row[1] for row in h.rows] == ["[0, 10[", "[10, 20[", "20+"]


def test_shape_and_duplicate_leaves() -> None:
    with pytest.raises(HierarchyError, match="row 2 has 2 values, expected 3"):
        Hierarchy("c", (("a", "A", "*"), ("b", "*")))
    with pytest.raises(HierarchyError, match="lists a value twice: 'a'"):
        Hierarchy("c", (("a", "A"), ("a", "B")))
    with pytest.raises(HierarchyError, match="no rows"):
        Hierarchy("c", ())


@pytest.mark.parametrize(
    ("label", "low", "high", "closed"),
    [
        ("20-24", 20, 24, True),
        ("[20, 25[", 20, 25, False),
        ("<18", float("-inf"), 18, False),
        ("90+", 90, float("inf"), True),
    ],
)
def test_parse_interval(label: str, low: float, high: float, closed: bool) -> None:
    interval = parse_interval(label)
    assert interval is not None
    assert (interval.low, interval.high, interval.high_closed) == (low, high, closed)


def test_dates_and_words_are_not_intervals() -> None:
    assert parse_interval("2020-03") is None  # a month, not 2020..3
    assert parse_interval("Married") is None


# --------------------------------------------------------------------------- ARX files


def test_arx_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ages.csv"
    write_arx_csv(AGES, path)
    assert path.read_text().splitlines()[0] == "25;25-29;20-39;*"
    assert read_arx_csv(path, "age") == AGES
    text = format_arx_text(AGES, sep=",")
    assert parse_arx_text(text, "age", sep=",") == AGES


@pytest.mark.parametrize("column", ADULT_COLUMNS)
def test_adult_hierarchies_load_and_cover_the_data(column: str, tmp_path: Path) -> None:
    source = ARX_DIR / f"adult_hierarchy_{column}.csv"
    require(source)
    hierarchy = read_arx_csv(source, column)
    write_arx_csv(hierarchy, tmp_path / "copy.csv")
    assert (tmp_path / "copy.csv").read_text() == source.read_text().rstrip("\n") + "\n"
    encoded = encode_file(ARX_DIR / "adult.csv", [column])
    lookup = hierarchy.lookup(encoded.dictionaries[0])
    assert lookup.labels[-1] == ("*",)


def test_adult_age_lookup_by_hand() -> None:
    source = ARX_DIR / "adult_hierarchy_age.csv"
    require(source)
    hierarchy = read_arx_csv(source, "age")
    assert (hierarchy.height, len(hierarchy.rows)) == (4, 100)
    lookup = hierarchy.lookup(pl.Series(["17", "39", "90"]))
    # ARX's file puts 1-5 in "0-4", 86-90 in "85-89": labels are taken as they are.
    assert [lookup.labels[1][g] for g in lookup.maps[1]] == ["15-19", "35-39", "85-89"]
    assert lookup.leaves[1].tolist() == [5, 5, 5] and lookup.domain_size == 100


def test_arx_file_errors(tmp_path: Path) -> None:
    with pytest.raises(EngineInputError, match="not found"):
        read_arx_csv(tmp_path / "none.csv", "x")
    empty = tmp_path / "empty.csv"
    empty.write_text("\n")
    with pytest.raises(HierarchyError, match="no rows"):
        read_arx_csv(empty, "x")


# --------------------------------------------------------------------------- builders


def test_interval_builder_with_top_and_bottom_codes() -> None:
    ages = [str(a) for a in (5, 17, 18, 22, 23, 37, 38, 89, 90, 104)]
    h = interval_hierarchy("age", ages, [5, 10, 20], bottom=18, top=90)
    rows = {row[0]: row[1:] for row in h.rows}
    assert rows["5"] == ("<18", "<18", "<18", "*")
    assert rows["17"] == ("<18", "<18", "<18", "*")
    assert rows["18"] == ("18-22", "18-27", "18-37", "*")
    assert rows["23"] == ("23-27", "18-27", "18-37", "*")
    assert rows["38"] == ("38-42", "38-47", "38-57", "*")
    assert rows["89"] == ("88-89", "88-89", "78-89", "*")  # clipped at the top code
    assert rows["90"] == rows["104"] == ("90+", "90+", "90+", "*")
    assert h.leaves == tuple(ages)  # sorted numerically


def test_interval_builder_decimals_and_errors() -> None:
    h = interval_hierarchy("w", ["0.5", "1.2", "2.7"], [1.5], add_top=False)
    assert [row[1] for row in h.rows] == ["[0, 1.5[", "[0, 1.5[", "[1.5, 3["]
    with pytest.raises(HierarchyError, match="not a multiple"):
        interval_hierarchy("age", ["1"], [5, 7])
    with pytest.raises(HierarchyError, match="not numbers: 'abc'"):
        interval_hierarchy("age", ["1", "abc"], [5])


def test_date_builder() -> None:
    h = date_hierarchy("visit", ["2021-03-14", "2017-12-31", None])
    assert h.rows == (
        ("2017-12-31", "2017-12", "2017", "2015-2019", "2010-2019", "*"),
        ("2021-03-14", "2021-03", "2021", "2020-2024", "2020-2029", "*"),
    )
    short = date_hierarchy("d", ["14/03/2021"], levels=("year", "10-year"), date_format="%d/%m/%Y")
    assert short.rows == (("14/03/2021", "2021", "2020-2029", "*"),)
    with pytest.raises(HierarchyError, match="not dates: 'soon'"):
        date_hierarchy("d", ["2021-01-01", "soon"])
    with pytest.raises(HierarchyError, match="finest to coarsest"):
        date_hierarchy("d", ["2021-01-01"], levels=("year", "month"))


def test_prefix_builder() -> None:
    h = prefix_hierarchy("postal", ["K1A 0B1", "K2P 1L4", "M5V 3L9"])
    assert h.rows[0] == ("K1A 0B1", "K1A", "K", "*")
    masked = prefix_hierarchy("postal", ["K1A 0B1"], (3, 1), mask_char="*")
    assert masked.rows == (("K1A 0B1", "K1A****", "K******", "*"),)
    with pytest.raises(HierarchyError, match="decrease"):
        prefix_hierarchy("postal", ["K1A"], (1, 3))


def test_categorical_builder() -> None:
    values = ["Programmer", "Database Administrator", "Banker", "Legal Counsel"]
    levels = [
        {
            "IT": ["Programmer", "Database Administrator"],
            "Finance": ["Banker"],
            "Law": ["Legal Counsel"],
        },
        {"Technical": ["IT"], "Professional": ["Finance", "Law"]},
    ]
    h = categorical_hierarchy("occupation", values, levels)
    assert h.rows[0] == ("Programmer", "IT", "Technical", "*")
    assert h.rows[2] == ("Banker", "Finance", "Professional", "*")
    with pytest.raises(HierarchyError, match="not in any group: 'Legal Counsel'"):
        categorical_hierarchy("occupation", values, [levels[0] | {"Law": []}])
    kept = categorical_hierarchy(
        "occupation", values, [{"IT": ["Programmer"]}], keep_ungrouped=True
    )
    assert kept.rows[2] == ("Banker", "Banker", "*")
    with pytest.raises(HierarchyError, match="in two groups"):
        categorical_hierarchy("o", ["a"], [{"A": ["a"], "B": ["a"]}])


def test_suppression_builder() -> None:
    assert suppression_hierarchy("sex", ["F", "M", None]).rows == (("F", "*"), ("M", "*"))


def _lookup_by_definition(
    rows: list[list[str]], values: list[str | None]
) -> tuple[list[list[int]], list[list[str | None]], list[list[int]]]:
    """The look-up arrays as the docstring of ``Hierarchy.lookup`` defines them, in plain
    Python: per level, each generalized value present numbered in order of first
    appearance in the rows, the missing value its own group last unless it joins a
    single top value."""
    height = len(rows[0]) - 1
    row_of = {row[0]: row for row in rows}
    top_single = len({row[-1] for row in rows}) == 1
    maps, labels, leaves = [list(range(len(values)))], [list(values)], [[1] * len(values)]
    for level in range(1, height + 1):
        order = list(dict.fromkeys(row[level] for row in rows))
        joins = level == height and top_single
        present = {row_of[v][level] for v in values if v is not None}
        if joins and None in values:
            present.add(rows[0][level])
        ordered = [g for g in order if g in present]
        number = {g: i for i, g in enumerate(ordered)}
        own = None in values and not joins
        maps.append(
            [
                number[row_of[v][level]]
                if v is not None
                else (len(ordered) if own else number[rows[0][level]])
                for v in values
            ]
        )
        labels.append([*ordered, *([None] if own else [])])
        leaves.append(
            [sum(1 for row in rows if row[level] == g) for g in ordered] + ([1] if own else [])
        )
    return maps, labels, leaves


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_lookup_matches_its_definition(leaves: int, height: int, seed: int, missing: bool) -> None:
    """Random tree hierarchies (a single top or several; long and short labels) and
    random dictionaries of some of their leaves, with or without the missing value."""
    rng = np.random.default_rng(seed)
    single_top = bool(rng.random() < 0.5)
    rows = []
    for i in range(leaves):
        row = [f"leaf {i}" if i % 3 else f"a longer leaf label number {i}"]
        for level in range(1, height + 1):
            top = level == height and single_top
            row.append("*" if top else f"group {level}.{i >> level}")
        rows.append(row)
    hierarchy = hierarchy_from_rows("c", rows)
    chosen = sorted(rng.choice(leaves, int(rng.integers(0, leaves + 1)), replace=False))
    values: list[str | None] = [rows[i][0] for i in chosen] + ([None] if missing else [])
    lookup = hierarchy.lookup(pl.Series("c", values, dtype=pl.String))
    maps, labels, counts = _lookup_by_definition(rows, values)
    assert [m.tolist() for m in lookup.maps] == maps
    assert [list(lab) for lab in lookup.labels] == labels
    assert [c.tolist() for c in lookup.leaves] == counts
