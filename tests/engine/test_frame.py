from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.encoded import EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode, encode_file
from apps.engine.reading import read_table, sniff_separator


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- read_table


def test_csv_values_stay_exact_strings_and_empty_is_missing(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "id;zip\n007;K1A\n8;\n")
    frame = read_table(path).collect()
    assert frame.schema == pl.Schema({"id": pl.String, "zip": pl.String})
    assert frame.get_column("id").to_list() == ["007", "8"]
    assert frame.get_column("zip").to_list() == ["K1A", None]


@pytest.mark.parametrize(
    ("header", "expected"), [("a;b;c", ";"), ("a,b", ","), ("a\tb", "\t"), ("a|b", "|"), ("a", ",")]
)
def test_sniff_separator(header: str, expected: str) -> None:
    assert sniff_separator(header) == expected


def test_tsv_and_given_separator(tmp_path: Path) -> None:
    assert read_table(write(tmp_path, "d.tsv", "a\tb\n1\t2\n")).collect().shape == (1, 2)
    assert read_table(write(tmp_path, "d.txt", "a|b\n1|2\n"), sep="|").collect().shape == (1, 2)


def test_extra_null_values(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "a\n?\nx\n")
    assert read_table(path, null_values=["?"]).collect()["a"].to_list() == [None, "x"]


@pytest.mark.parametrize(
    ("name", "text", "sep", "message"),
    [
        ("empty.csv", "", None, "empty file"),
        ("header.csv", "a;b\n\n", None, "no data rows"),
        ("bad.csv", "a;b\n1;2\n", ",", "bad separator"),
        ("long.csv", "a;b\n1;2\n", ";;", "bad separator"),
        ("data.xlsx", "whatever", None, "unsupported file format"),
    ],
)
def test_read_table_errors(
    tmp_path: Path, name: str, text: str, sep: str | None, message: str
) -> None:
    with pytest.raises(EngineInputError, match=message):
        read_table(write(tmp_path, name, text), sep=sep)


def test_missing_file() -> None:
    with pytest.raises(EngineInputError, match="file not found"):
        read_table("/nonexistent/data.csv")


def test_single_column_file_is_fine(tmp_path: Path) -> None:
    assert read_table(write(tmp_path, "one.csv", "age\n1\n2\n"), sep=",").collect().height == 2


def test_parquet_is_read_with_its_types(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pl.DataFrame({"age": [30, 31], "sex": ["F", "M"]}).write_parquet(path)
    assert read_table(path).collect_schema()["age"] == pl.Int64


# --------------------------------------------------------------------------- encode

# Five rows; by hand: (F,30) ×2, (F,None) ×1, (M,30) ×1, (M,41) ×1.
SMALL = pl.DataFrame(
    {
        "sex": ["F", "M", "F", "M", "F"],
        "age": ["30", "30", "30", "41", None],
        "other": ["a", "b", "c", "d", "e"],
    }
)


def test_encode_dictionaries_sorted_with_missing_last() -> None:
    encoded = encode(SMALL, ["sex", "age"])
    assert encoded.quasi == ("sex", "age")
    assert encoded.dictionaries[0].to_list() == ["F", "M"]
    assert encoded.dictionaries[1].to_list() == ["30", "41", None]  # null: its own code 2
    assert encoded.rows == 5
    assert encoded.distinct_tuples == 4


def test_encode_tuples_and_counts() -> None:
    encoded = encode(SMALL.lazy(), ["sex", "age"])
    assert encoded.tuples.schema["sex"] == pl.UInt32
    rows = sorted(encoded.tuples.iter_rows())
    assert rows == [(0, 0, 2), (0, 2, 1), (1, 0, 1), (1, 1, 1)]
    decoded = sorted(encoded.decoded().iter_rows(), key=str)
    assert ("F", None, 1) in decoded and ("F", "30", 2) in decoded


def test_encode_compares_values_as_strings() -> None:
    # Integers are grouped raw, then cast: 7 and 7 merge, the dictionary holds "7".
    frame = pl.DataFrame({"n": [7, 7, 10, None]})
    encoded = encode(frame, ["n"])
    assert encoded.dictionaries[0].to_list() == ["10", "7", None]  # string order
    assert sorted(encoded.tuples.iter_rows()) == [(0, 1), (1, 2), (2, 1)]


def test_encode_column_errors() -> None:
    with pytest.raises(EngineInputError, match="unknown quasi-identifier column"):
        encode(SMALL, ["sex", "nope"])
    with pytest.raises(EngineInputError, match="given twice"):
        encode(SMALL, ["sex", "sex"])
    with pytest.raises(EngineInputError, match="no quasi-identifier"):
        encode(SMALL, [])


def test_encode_empty_frame() -> None:
    encoded = encode(SMALL.clear(), ["sex"])
    assert encoded.rows == 0 and encoded.distinct_tuples == 0


def test_encode_adult_distinct_combinations(adult_path: Path) -> None:
    from tests.engine.conftest import ADULT_COLUMNS

    encoded = encode_file(adult_path, ADULT_COLUMNS)
    assert encoded.rows == 30_162
    assert encoded.distinct_tuples == 19_502  # the known figure (data/arx/README.md)
    assert [d.len() for d in encoded.dictionaries] == [2, 72, 5, 7, 16, 41, 7, 14, 2]


# --------------------------------------------------------------------------- packed path


def _canonical(encoded: EncodedData) -> list[tuple[object, ...]]:
    return sorted(encoded.decoded().iter_rows(), key=lambda row: tuple(str(v) for v in row))


def test_typed_columns_encode_like_their_texts() -> None:
    # Integers (negative too), booleans, dates, categoricals and enums take the packed-key
    # path; the result must equal encoding the same values as strings.
    typed = pl.DataFrame(
        {
            "i8": pl.Series([-3, 0, 3, None, -3, 3], dtype=pl.Int8),
            "u8": pl.Series([0, 255, 7, 7, None, 0], dtype=pl.UInt8),
            "flag": [True, False, None, True, True, False],
            "day": [
                date(2020, 1, 1),
                date(2020, 1, 31),
                None,
                date(2020, 1, 1),
                date(2021, 5, 2),
                None,
            ],
            "cat": pl.Series(["x", "yy", "x", None, "z", "x"], dtype=pl.Categorical),
            "enum": pl.Series(["hi", "lo", None, "lo", "hi", "hi"], dtype=pl.Enum(["lo", "hi"])),
        }
    )
    columns = typed.columns
    packed = encode(typed, columns)
    texts = encode(typed.select(pl.all().cast(pl.String)), columns)
    assert _canonical(packed) == _canonical(texts)
    assert [d.to_list() for d in packed.dictionaries] == [d.to_list() for d in texts.dictionaries]
    assert packed.dictionaries[0].to_list() == ["-3", "0", "3", None]
    assert packed.dictionaries[2].to_list() == ["false", "true", None]
    assert packed.dictionaries[3].to_list() == ["2020-01-01", "2020-01-31", "2021-05-02", None]


def test_wide_ranges_fall_back_to_grouping_on_columns() -> None:
    # 2^40 apart: too wide for a lookup array, so the general path is taken.
    frame = pl.DataFrame({"id": [1, 2**40, 1], "n": pl.Series([5, 5, 6], dtype=pl.UInt64)})
    encoded = encode(frame, ["id", "n"])
    assert encoded.dictionaries[0].to_list() == ["1", "1099511627776"]
    assert sorted(encoded.tuples.iter_rows()) == [(0, 0, 1), (0, 1, 1), (1, 0, 1)]


def test_parquet_categoricals(tmp_path: Path) -> None:
    path = tmp_path / "cats.parquet"
    frame = pl.DataFrame(
        {
            "sex": pl.Series(["F", "M", "F"], dtype=pl.Categorical),
            "age": pl.Series([30, 30, 30], dtype=pl.Int16),
        }
    )
    frame.write_parquet(path)
    encoded = encode(read_table(path), ["sex", "age"])
    assert [d.to_list() for d in encoded.dictionaries] == [["F", "M"], ["30"]]
    assert sorted(encoded.tuples.iter_rows()) == [(0, 0, 2), (1, 0, 1)]


def test_constant_and_missing_only_columns_keep_their_counts() -> None:
    frame = pl.DataFrame({"n": pl.Series([None, None, None], dtype=pl.Int32), "k": [5, 5, 5]})
    encoded = encode(frame, ["n", "k"])
    assert [d.to_list() for d in encoded.dictionaries] == [[None], ["5"]]
    assert encoded.tuples.rows() == [(0, 0, 3)]


def test_float_texts_that_coincide_are_one_value() -> None:
    encoded = encode(pl.DataFrame({"f": [0.0, -0.0, 1.5, None]}), ["f"])
    assert encoded.dictionaries[0].to_list() == ["0.0", "1.5", None]
    assert sorted(encoded.tuples.rows()) == [(0, 2), (1, 1), (2, 1)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-40, 300)),
            st.one_of(st.none(), st.sampled_from(["a", "b", "zz", "é"])),
            st.one_of(st.none(), st.booleans()),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_packed_encoding_equals_encoding_as_text(
    rows: list[tuple[int | None, str | None, bool | None]],
) -> None:
    typed = pl.DataFrame(
        rows,
        schema={"n": pl.Int16, "c": pl.Categorical, "b": pl.Boolean},
        orient="row",
    )
    packed = encode(typed, ["n", "c", "b"])
    texts = encode(typed.select(pl.all().cast(pl.String)), ["n", "c", "b"])
    assert _canonical(packed) == _canonical(texts)
    assert packed.rows == len(rows)


def test_columns_coded_by_two_threads_as_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table below ``PARALLEL_ROWS`` (50,000) is coded in the calling thread; with the
    threshold lowered the same table's columns are shared with a thread and the rows
    grouped in it: the same dictionaries, codes and counts."""
    import numpy as np

    import apps.engine.frame as frame_module

    assert frame_module.PARALLEL_ROWS == 50_000
    rng = np.random.default_rng(11)
    n = 6_000
    table = pl.DataFrame(
        {
            "short": [f"v{x}" for x in rng.integers(0, 40, n)],
            "long": [f"a long value number {x:03d}" for x in rng.integers(0, 25, n)],
            "gaps": [None if x == 0 else f"g{x}" for x in rng.integers(0, 5, n)],
        }
    )
    columns = ["short", "long", "gaps"]
    alone = encode(table, columns)
    monkeypatch.setattr(frame_module, "PARALLEL_ROWS", 1)
    shared = encode(table, columns)
    assert [d.to_list() for d in shared.dictionaries] == [d.to_list() for d in alone.dictionaries]
    assert alone.arrays is not None and shared.arrays is not None
    for got, want in zip(shared.arrays, alone.arrays, strict=True):
        assert np.array_equal(got, want)
    assert int(alone.arrays[1].sum()) == n
    assert alone.dictionaries[2].to_list()[-1] is None  # (missing last)
