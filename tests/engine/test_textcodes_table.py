"""A small table's text columns coded, their dictionaries made and rows grouped in one
compiled call (``textcodes.code_table``, the in-memory encoding of ``frame.encode``), held
to the streaming group-by (``encode`` of a LazyFrame) and to the column-by-column passes
(``code_column``, ``dictionary_series``, ``group_rows``) on random tables: short values,
long ones (past the 12 bytes of a view), multi-byte UTF-8, missing values, columns in
several chunks and slices; and the columns handed over through Arrow's C data interface
are released on every path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.frame import encode
from apps.engine.textcodes import (
    code_column,
    code_table,
    dictionary_series,
    find_texts,
    group_rows,
    text_index,
)
from apps.engine.textcodes import table as table_module

_ALPHABET = ["a", "b", "\x00", "z", "é", "0", "ab", "日本"]
texts = st.lists(st.sampled_from(_ALPHABET), max_size=22).map("".join)
values = st.one_of(texts, texts.map(lambda t: "common-prefix-" + t), st.none())
LONG = "a long value past twelve bytes"


@st.composite
def tables(draw: st.DrawFn) -> pl.DataFrame:
    """1-4 String columns of one length, each maybe cut into chunks of its own, the
    table maybe a slice of a longer one."""
    width = draw(st.integers(1, 4))
    rows = draw(st.integers(0, 40))
    skip = draw(st.integers(0, 3))
    columns = []
    for j in range(width):
        pool = draw(st.lists(values, min_size=1, max_size=8))
        picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=rows + skip))
        series = pl.Series(f"c{j}", [pool[i] for i in picks[: rows + skip]], dtype=pl.String)
        cuts = sorted(draw(st.lists(st.integers(1, max(1, rows + skip - 1)), max_size=2)))
        if rows + skip > 1 and cuts:
            bounds = [0, *cuts, rows + skip]
            series = pl.concat(
                [series[a:b] for a, b in zip(bounds, bounds[1:], strict=False)], rechunk=False
            )
        columns.append(series)
    return pl.DataFrame(columns)[skip:]


def _column_by_column(
    columns: Sequence[pl.Series],
) -> tuple[np.ndarray, np.ndarray, list[pl.Series]]:
    """What ``frame._encode_in_memory`` did before ``code_table``: each column coded on
    its own, then the rows grouped."""
    d, n = len(columns), len(columns[0])
    codes = np.empty((d, n), dtype=np.uint32)
    done = [code_column(series, codes[j]) for j, series in enumerate(columns)]
    radix = np.array([len(c.rank) for c in done], dtype=np.int64)
    rank_at = np.concatenate([[0], np.cumsum(radix)[:-1]]).astype(np.int64)
    grouped, counts = group_rows(codes, radix, np.concatenate([c.rank for c in done]), rank_at)
    return grouped, counts, dictionary_series(done)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_one_call_equals_the_streamed_group_by_and_the_column_passes(
    frame: pl.DataFrame,
) -> None:
    quasi = frame.columns
    columns = frame.get_columns()
    coded = code_table(columns)
    assert coded is not None
    # the column-by-column passes: the same arrays, in the same order
    grouped, counts, dictionaries = _column_by_column(columns)
    assert np.array_equal(coded.grouped, grouped)
    assert np.array_equal(coded.counts, counts)
    for made, want in zip(coded.dictionaries, dictionaries, strict=True):
        assert made.name == want.name and made.dtype == pl.String
        assert made.to_list() == want.to_list()
    # the streaming group-by: the same dictionaries and tuples
    fast, streamed = encode(frame, quasi), encode(frame.lazy(), quasi)
    assert [d.to_list() for d in fast.dictionaries] == [d.to_list() for d in streamed.dictionaries]
    assert fast.rows == streamed.rows == frame.height
    assert (
        fast.decoded()
        .sort(quasi, nulls_last=True)
        .equals(streamed.decoded().sort(quasi, nulls_last=True))
    )
    # the views kept for the look-ups are those of the dictionaries' values
    assert fast.views is not None
    assert len(fast.views) == len(fast.dictionaries)
    for j, dictionary in enumerate(fast.dictionaries):
        views = fast.views.column(j)
        assert len(views) == len(dictionary)
        assert views.nulls.tolist() == ([False] * (len(dictionary) - 1) + [True]
                                        if dictionary.null_count() else [])  # fmt: skip
        assert not views.views.flags.writeable
        present = dictionary.drop_nulls()
        found = find_texts(text_index(present), dictionary, views)
        expected = list(range(len(present))) + [-1] * dictionary.null_count()
        assert found.tolist() == expected


def test_codes_ranks_and_dictionaries_worked_out_by_hand() -> None:
    # column a by bytes: "" < LONG < "b" < "é", missing last; column b: one long value
    # and "x", in two chunks; the last row is the first again
    a = pl.Series("a", ["b", None, "", "é", LONG, "b"], dtype=pl.String)
    b = pl.concat(
        [pl.Series("b", [LONG, "x", LONG]), pl.Series("b", ["x", LONG, LONG])], rechunk=False
    )
    assert b.n_chunks() == 2
    coded = code_table([a, b])
    assert coded is not None
    assert [d.to_list() for d in coded.dictionaries] == [["", LONG, "b", "é", None], [LONG, "x"]]
    assert coded.grouped.tolist() == [[2, 4, 0, 3, 1], [0, 1, 0, 1, 0]]
    assert coded.counts.tolist() == [2, 1, 1, 1, 1]
    # the dictionaries' views read their long values from their own bytes
    views = coded.views.column(0)
    assert views.nulls.tolist() == [False, False, False, False, True]
    assert coded.views.column(1).nulls.tolist() == []
    assert coded.views.starts.tolist() == [0, 5, 7]
    texts = views.keep[0]
    assert views.bases.tolist() == [texts.ctypes.data]
    assert bytes(texts).decode() == "" + LONG + "b" + "é" + LONG + "x"


def test_no_columns_rows_and_a_column_of_missing_values_only() -> None:
    empty = code_table([pl.Series("a", [], dtype=pl.String), pl.Series("b", [], pl.String)])
    assert empty is not None
    assert empty.grouped.shape == (2, 0) and empty.counts.tolist() == []
    assert [d.to_list() for d in empty.dictionaries] == [[], []]
    nothing = code_table([pl.Series("m", [None, None], dtype=pl.String)])
    assert nothing is not None
    assert nothing.dictionaries[0].to_list() == [None]
    assert nothing.grouped.tolist() == [[0]] and nothing.counts.tolist() == [2]


def _exported(columns: Sequence[pl.Series]) -> np.ndarray:
    exported = np.zeros((len(columns), table_module._WORDS), dtype=np.int64)
    exported[:, table_module._OWNER] = range(len(columns))
    at = exported.ctypes.data
    for p, series in enumerate(columns):
        words = table_module._WORDS
        series._export_arrow_to_c(at + 8 * words * p, at + 8 * (words * p + table_module._SCHEMA))
    return exported


def _released(exported: np.ndarray) -> bool:
    """Whether every exported structure was released (its ``release`` made null)."""
    return not exported[:, [table_module._ARRAY_RELEASE, table_module._SCHEMA_RELEASE]].any()


def test_the_exported_columns_are_released_on_every_path() -> None:
    text = pl.Series("t", ["x", LONG, None] * 3, dtype=pl.String)
    numbers = pl.Series("n", [1, 2, 3] * 3)
    done = _exported([text, text])
    assert not _released(done)
    assert table_module._code_table(done, 2, 9)[0][0] == table_module.DONE
    assert _released(done)
    # a column that is not string views: nothing coded, everything released
    refused = _exported([text, numbers])
    assert table_module._code_table(refused, 2, 9)[0][0] == table_module.NOT_VIEWS
    assert _released(refused)
    assert code_table([text, numbers]) is None
    # (released by hand, as code_table does when the call fails)
    dropped = _exported([text])
    table_module._release(dropped)
    assert _released(dropped)


def test_a_column_not_of_views_is_coded_column_by_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When ``code_table`` declines (None), the encoding codes the columns one by one:
    the same dictionaries and tuples."""
    import apps.engine.frame as frame_module

    frame = pl.DataFrame({"a": ["x", "y", None, "x"], "b": [LONG, "z", LONG, LONG]})
    once = encode(frame, ["a", "b"])
    monkeypatch.setattr(frame_module, "code_table", lambda columns: None)
    apart = encode(frame, ["a", "b"])
    assert [d.to_list() for d in once.dictionaries] == [d.to_list() for d in apart.dictionaries]
    assert once.arrays is not None and apart.arrays is not None
    for got, want in zip(once.arrays, apart.arrays, strict=True):
        assert np.array_equal(got, want)
