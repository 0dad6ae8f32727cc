"""A column's codes, sorted dictionary and views in one compiled call
(``textcodes.code_column``), the dictionaries made into Series at once
(``textcodes.dictionary_series``), the grouping of coded rows (``textcodes.group_rows``)
and the look-ups that read the views the encoding kept (``build_problem`` of the
search protocol): small inputs whose answers are worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import HierarchyError
from apps.engine.frame import encode
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.search.protocol import build_problem, table_encoder
from apps.engine.textcodes import code_column, dictionary_series, group_rows
from apps.engine.textcodes.codes import INITIAL_SLOTS

LONG = "a long value past twelve bytes"


def _coded(values: Sequence[str | None]) -> tuple[list[int], list[int], list[str | None]]:
    series = pl.Series("x", values, dtype=pl.String)
    codes = np.full(len(values), 99, dtype=np.uint32)
    coded = code_column(series, codes)
    (dictionary,) = dictionary_series([coded])
    assert dictionary.name == "x" and dictionary.dtype == pl.String
    return codes.tolist(), coded.rank.tolist(), dictionary.to_list()


def test_codes_by_first_appearance_ranks_by_bytes_missing_last() -> None:
    # first appearance: "b" 0, "" 1, "é" 2, LONG 3; the missing value after them, 4.
    # By bytes: "" < LONG ("a...") < "b" < "é" (0xC3 0xA9); missing last.
    codes, rank, dictionary = _coded(["b", None, "", "é", LONG, "b", "", None])
    assert codes == [0, 4, 1, 2, 3, 0, 1, 4]
    assert rank == [2, 0, 3, 1, 4]
    assert dictionary == ["", LONG, "b", "é", None]


def test_one_row_no_row_and_only_missing_values() -> None:
    assert _coded(["x"]) == ([0], [0, 1], ["x"])
    assert _coded([]) == ([], [0], [])
    assert _coded([None, None]) == ([0, 0], [0], [None])


def test_values_alike_in_their_first_twelve_bytes_stay_apart() -> None:
    # (the same length and first 4 bytes; one differs in its last byte only)
    a, b = "prefix-0000000-x", "prefix-0000000-y"
    codes, rank, dictionary = _coded([b, a, b, "prefix", a])
    assert codes == [0, 1, 0, 2, 1]
    assert rank == [2, 1, 0, 3]
    assert dictionary == ["prefix", a, b]


def test_many_distinct_values_grow_the_table_and_keep_first_appearance() -> None:
    count = INITIAL_SLOTS  # twice what the first table takes
    order = np.random.default_rng(3).permutation(count)
    values = [f"v{i:05d}" for i in order] * 2
    codes, rank, dictionary = _coded(values)
    assert codes == list(range(count)) * 2
    assert dictionary == [f"v{i:05d}" for i in range(count)]
    assert rank == [*order.tolist(), count]


def test_dictionaries_of_several_columns_cut_from_one_array() -> None:
    columns: dict[str, list[str | None]] = {
        "a": ["z", None, "y"],
        "b": [LONG, LONG, LONG],
        "c": [None, None, None],
    }
    coded = []
    for name, values in columns.items():
        codes = np.empty(3, dtype=np.uint32)
        coded.append(code_column(pl.Series(name, values, dtype=pl.String), codes))
    made = dictionary_series(coded)
    assert [s.name for s in made] == ["a", "b", "c"]
    assert [s.to_list() for s in made] == [["y", "z", None], [LONG], [None]]
    assert [s.null_count() for s in made] == [1, 0, 1]


def test_group_rows_counts_rows_in_order_of_first_appearance() -> None:
    # rows (0,2) (1,0) (0,2) (1,0) (0,1); ranks reverse column 0 and keep column 1
    codes = np.array([[0, 1, 0, 1, 0], [2, 0, 2, 0, 1]], dtype=np.uint32)
    ranks = np.array([1, 0, 0, 1, 2], dtype=np.uint32)
    out, counts = group_rows(
        codes, np.array([2, 3], dtype=np.int64), ranks, np.array([0, 2], dtype=np.int64)
    )
    assert out.tolist() == [[1, 0, 1], [2, 0, 1]]
    assert counts.tolist() == [2, 2, 1]
    empty, none = group_rows(
        np.zeros((2, 0), dtype=np.uint32),
        np.array([1, 1], dtype=np.int64),
        ranks,
        np.zeros(2, np.int64),
    )
    assert empty.shape == (2, 0) and none.tolist() == []


def _hierarchies() -> dict[str, object]:
    return {
        "t": hierarchy_from_rows(
            "t",
            [["", "blank", "*"], ["é", "accent", "*"], [LONG, "long", "*"], ["b", "accent", "*"]],
        )
    }


def test_look_ups_through_the_kept_views_equal_those_of_the_dictionary() -> None:
    frame = pl.DataFrame({"t": ["b", LONG, "", "é", None, "b"] * 1000})
    built = build_problem(table_encoder(frame), ["t"], _hierarchies())  # type: ignore[arg-type]
    hierarchy = _hierarchies()["t"]
    again = hierarchy.lookup(built.encoded.dictionaries[0])  # type: ignore[attr-defined]
    assert encode(frame, ["t"]).views is not None  # (kept for the look-ups, then let go of)
    assert built.encoded.views is None
    assert built.encoded.dictionaries[0].to_list() == ["", LONG, "b", "é", None]
    lookup = built.lookups[0]
    assert [m.tolist() for m in lookup.maps] == [m.tolist() for m in again.maps]
    # level 1 in the hierarchy's row order: blank 0, accent 1, long 2; missing own group
    assert lookup.maps[1].tolist() == [0, 2, 1, 1, 3]
    assert list(lookup.labels[1]) == ["blank", "accent", "long", None]
    assert built.problem.counts.tolist() == [2000, 1000, 1000, 1000, 1000]


def test_a_value_the_hierarchy_lacks_is_named_as_before() -> None:
    frame = pl.DataFrame({"t": ["b", "zz", "é", "zz"]})
    with pytest.raises(HierarchyError) as raised:
        build_problem(table_encoder(frame), ["t"], _hierarchies())  # type: ignore[arg-type]
    assert str(raised.value) == (
        "hierarchy of 't' does not cover 1 value(s) of the data: 'zz' (1 in all)"
    )
    encoded = encode(frame, ["t"])
    with pytest.raises(HierarchyError) as plain:
        _hierarchies()["t"].lookup(encoded.dictionaries[0])  # type: ignore[attr-defined]
    assert str(plain.value) == str(raised.value)


def test_long_values_differing_in_one_byte_anywhere_stay_apart() -> None:
    # 13 to 21 bytes (a slot holds all bytes of a value of at most 20), each pair
    # differing in one byte: in the first 4, in bytes 4-11, in the last 8, or only in
    # a byte covered by both of the last two words
    pairs = [
        ("aaaa-bbbbbbbbc", "aaab-bbbbbbbbc"),
        ("aaaa-bbbbbbbbc", "aaaa-bbbxbbbbc"),
        ("aaaa-bbbbbbbbcdefghij", "aaaa-bbbbbbbbcdefghiX"),
        ("0123456789abcdefghij", "0123456789abXdefghij"),
        ("0123456789abcdefghij", "01234X6789abcdefghij"),
        ("0123456789abcdefghijk", "0123456789abcdeXghijk"),
    ]
    for a, b in pairs:
        codes, rank, dictionary = _coded([a, b, a, b, b])
        assert codes == [0, 1, 0, 1, 1], (a, b)
        assert dictionary == sorted([a, b], key=str.encode)


def test_a_table_of_two_chunks_is_looked_up_as_the_same_table_in_one() -> None:
    # (the views of the second chunk's long values point into its own buffers)
    first = pl.DataFrame({"t": ["é", LONG, None, "b"] * 800})
    second = pl.DataFrame({"t": ["", LONG, "b", "é"] * 800})
    chunked = pl.concat([first, second], rechunk=False)
    assert chunked.get_column("t").n_chunks() == 2
    built = build_problem(table_encoder(chunked), ["t"], _hierarchies())  # type: ignore[arg-type]
    whole = build_problem(table_encoder(chunked.rechunk()), ["t"], _hierarchies())  # type: ignore[arg-type]
    assert built.encoded.dictionaries[0].to_list() == ["", LONG, "b", "é", None]
    assert [m.tolist() for m in built.lookups[0].maps] == [
        m.tolist() for m in whole.lookups[0].maps
    ]
    # first appearance: "é" LONG None "b" ""; rows 1600, 1600, 800, 1600, 800
    assert built.problem.counts.tolist() == whole.problem.counts.tolist()
    assert built.problem.counts.tolist() == [1600, 1600, 800, 1600, 800]
