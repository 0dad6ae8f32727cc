"""Codes of text columns from their string views (``apps/engine/textcodes.py``), held to
polars on random texts: short ones (held in the view), long ones (in data buffers, some
sharing their first bytes and length), missing values, several chunks and slices."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.frame import encode
from apps.engine.textcodes import encode_text, find_texts, group_rows, text_index
from apps.engine.textcodes.codes import INITIAL_SLOTS

# Bytes that make views differ only past a value's end (NUL), multi-byte UTF-8, and
# values that begin alike; lengths around the 12 bytes a view holds.
_ALPHABET = ["a", "b", "\x00", "z", "é", "0", "ab"]
texts = st.lists(st.sampled_from(_ALPHABET), max_size=22).map("".join)
columns = st.lists(st.one_of(texts, texts.map(lambda t: "common-prefix-" + t), st.none()))


def _series(values: list[str | None], cut: int | None, offset: int) -> pl.Series:
    series = pl.Series("x", values, dtype=pl.String)
    if cut is not None and 0 < cut < len(series):  # two chunks
        series = pl.concat([series[:cut], series[cut:]], rechunk=False)
    return series[offset:] if offset < len(series) else series


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns, st.none() | st.integers(0, 40), st.integers(0, 3))
def test_codes_and_dictionary_are_polars_unique_and_sort(
    values: list[str | None], cut: int | None, offset: int
) -> None:
    series = _series(values, cut, offset)
    codes, dictionary = encode_text(series)
    present = series.drop_nulls().unique().sort()
    expected = present.to_list() + ([None] if series.null_count() else [])
    assert dictionary.to_list() == expected
    assert [dictionary[int(c)] for c in codes] == series.to_list()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns, columns)
def test_find_texts_finds_exactly_the_indexed_values(
    indexed: list[str | None], asked: list[str | None]
) -> None:
    leaves = pl.Series("leaf", indexed, dtype=pl.String).drop_nulls().unique()
    index = text_index(leaves)
    series = pl.Series("q", [*asked, *leaves.to_list()[:3]], dtype=pl.String)
    positions = find_texts(index, series)
    known = leaves.to_list()
    for value, position in zip(series.to_list(), positions.tolist(), strict=True):
        if value is None:
            assert position == -1
        elif value in known:
            assert known[position] == value
        else:
            assert position == -2


def test_group_rows_counts_each_distinct_row_once() -> None:
    rng = np.random.default_rng(4)
    for radix in ([3, 4, 2], [1 << 21] * 3):  # a key of 5 bits; one past 62 bits (hashed)
        codes = np.stack([rng.integers(0, min(r, 3), 500) for r in radix]).astype(np.uint32)
        codes[:, 250:] = codes[:, :250]
        ranks = np.concatenate([np.arange(r, dtype=np.uint32)[::-1] for r in radix])
        at = np.concatenate([[0], np.cumsum(radix[:-1])]).astype(np.int64)
        out, counts = group_rows(codes, np.array(radix, dtype=np.int64), ranks, at)
        want: dict[tuple[int, ...], int] = {}
        for i in range(500):
            row = tuple(radix[j] - 1 - int(codes[j, i]) for j in range(3))
            want[row] = want.get(row, 0) + 1
        got = {tuple(int(v) for v in out[:, g]): int(counts[g]) for g in range(out.shape[1])}
        assert got == want


@pytest.mark.parametrize("rows", [0, 1, 7, 3000])
def test_encoding_in_memory_equals_the_streamed_group_by(rows: int) -> None:
    """A table in memory is encoded by the compiled passes, a lazy one by the streaming
    group-by: same dictionaries and the same tuples."""
    rng = np.random.default_rng(rows)
    words = ["x", "yy", "a long value of the column", "another long value", ""]
    frame = pl.DataFrame(
        {
            "a": [str(v) for v in rng.integers(0, 30, rows)],
            "b": [words[v] if v < len(words) else None for v in rng.integers(0, 6, rows)],
            "c": [f"{v:05d}" for v in rng.integers(0, 99_999, rows)],
        }
    )
    quasi = ["a", "b", "c"]
    fast, streamed = encode(frame, quasi), encode(frame.lazy(), quasi)
    assert [d.to_list() for d in fast.dictionaries] == [d.to_list() for d in streamed.dictionaries]
    assert fast.rows == streamed.rows == rows
    assert (
        fast.decoded()
        .sort(quasi, nulls_last=True)
        .equals(streamed.decoded().sort(quasi, nulls_last=True))
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet="ab\x00z0", max_size=12), max_size=60), st.data())
def test_sorted_values_are_found_by_walking_the_index(leaves: list[str], data: Any) -> None:
    """Short texts: a sorted dictionary (the missing value last) is matched against the
    index's sorted keys in one walk; the answer is the hash table's, value by value."""
    distinct = pl.Series("leaf", leaves, dtype=pl.String).unique()
    index = text_index(distinct)
    asked = data.draw(st.lists(st.text(alphabet="ab\x00z0", max_size=12), max_size=80))
    missing = data.draw(st.booleans())
    values = sorted(set(asked) | set(leaves[: len(leaves) // 2]), key=str.encode)
    series = pl.Series("q", [*values, *([None] if missing else [])], dtype=pl.String)
    got = find_texts(index, series)
    positions = {v: i for i, v in enumerate(distinct.to_list())}
    expected = [positions.get(v, -2) if v is not None else -1 for v in series.to_list()]
    assert got.tolist() == expected


def test_codes_of_many_long_values_alike_past_the_first_table() -> None:
    """More distinct values than the first hash table takes (it grows, the values
    rehashed), all long, of one length, with one prefix and one suffix: they differ in
    the middle bytes only, which the table's hash and the exact comparison must read."""
    count = 3 * INITIAL_SLOTS // 2
    rng = np.random.default_rng(26)
    values = [f"prefix-{v:07d}-same-suffix" for v in rng.integers(0, count, 4 * count)]
    values += ["prefix-", "prefix-0000000-same-suffiy", None]
    series = pl.Series("x", values, dtype=pl.String)
    codes, dictionary = encode_text(series)
    present = series.drop_nulls().unique().sort()
    assert dictionary.to_list() == [*present.to_list(), None]
    assert [dictionary[int(c)] for c in codes] == values
    assert len(present) > INITIAL_SLOTS // 2
