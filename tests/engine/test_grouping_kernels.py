"""The grouping kernels against plain-Python oracles: all three paths of grouping (direct
addressing, hash of the mixed-radix key, hash of the code tuple when the key exceeds 62 bits)
with one scratch array reused across calls as the search does, and the merging of equal
tuples before a search (``grouping.fewer_tuples``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.search import kernels
from apps.engine.search.classes import Scratch
from apps.engine.search.kernels import grouping, rare


def _oracle(codes: np.ndarray, sizes: np.ndarray, maps: list[np.ndarray | None]) -> Counter:
    """Group sizes keyed by mapped code tuple, with plain Python."""
    out: Counter = Counter()
    for i in range(codes.shape[1]):
        key = tuple(
            int(codes[j, i]) if maps[j] is None else int(maps[j][codes[j, i]])
            for j in range(codes.shape[0])
        )
        out[key] += int(sizes[i])
    return out


def _group(
    codes: np.ndarray,
    sizes: np.ndarray,
    maps: list[np.ndarray | None],
    radix: list[int],
    k: int,
    scratch: Scratch,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts, offsets, at = [], [], 0
    for m in maps:
        if m is None:
            offsets.append(-1)
        else:
            offsets.append(at)
            parts.append(m.astype(np.uint32))
            at += len(m)
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    work, epoch = scratch.take(codes.shape[1])
    return kernels.roll_up_group(
        np.ascontiguousarray(codes, dtype=np.uint32),
        sizes.astype(np.int64),
        flat,
        np.array(offsets, dtype=np.int64),
        np.array(radix, dtype=np.int64),
        k,
        work,
        epoch,
    )


def _check(
    codes: np.ndarray,
    sizes: np.ndarray,
    maps: list[np.ndarray | None],
    radix: list[int],
    k: int,
    scratch: Scratch,
) -> None:
    out, out_sizes, summary = _group(codes, sizes, maps, radix, k, scratch)
    expected = _oracle(codes, sizes, maps)
    got = Counter(
        {tuple(int(c) for c in out[:, g]): int(out_sizes[g]) for g in range(out.shape[1])}
    )
    assert len(got) == out.shape[1]  # no tuple twice
    assert got == expected
    released = [s for s in expected.values() if s >= k]
    assert summary[kernels.CLASSES] == len(expected)
    assert summary[kernels.RELEASED] == len(released)
    assert summary[kernels.SUPPRESSED_ROWS] == sum(s for s in expected.values() if s < k)
    assert summary[kernels.MIN_RELEASED] == (min(released) if released else 0)
    assert summary[kernels.RELEASED_SQUARES] == sum(s * s for s in released)
    # groups come in the order of their first source row
    firsts = []
    for key in (tuple(int(c) for c in out[:, g]) for g in range(out.shape[1])):
        firsts.append(
            next(
                i
                for i in range(codes.shape[1])
                if tuple(
                    int(codes[j, i]) if maps[j] is None else int(maps[j][codes[j, i]])
                    for j in range(codes.shape[0])
                )
                == key
            )
        )
    assert firsts == sorted(firsts)


@st.composite
def tables(draw: Any, wide: bool) -> tuple[np.ndarray, np.ndarray, list, list[int], int]:
    d = draw(st.integers(1, 6 if wide else 4))
    m = draw(st.integers(0, 300))
    domain = [draw(st.integers(1, 1 << 14 if wide else 12)) for _ in range(d)]
    codes = np.array(
        [[draw(st.integers(0, domain[j] - 1)) if m else 0 for _ in range(m)] for j in range(d)],
        dtype=np.uint32,
    ).reshape(d, m)
    if m and not wide:  # repeat some rows so that groups merge
        codes[:, : m // 2] = codes[:, m - m // 2 :][:, : m // 2]
    sizes = np.array([draw(st.integers(1, 9)) for _ in range(m)], dtype=np.int64)
    maps: list[np.ndarray | None] = []
    radix = []
    for j in range(d):
        if draw(st.booleans()):
            maps.append(None)
            radix.append(domain[j])
        else:
            width = draw(st.integers(1, domain[j]))
            maps.append(
                np.array([draw(st.integers(0, width - 1)) for _ in range(domain[j])])
                if domain[j] <= 64
                else np.arange(domain[j]) % width
            )
            radix.append(width)
    return codes, sizes, maps, radix, draw(st.integers(1, 6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(wide=False))
def test_grouping_matches_the_oracle_on_small_key_ranges(case: Any) -> None:
    _check(*case, Scratch())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(wide=True))
def test_grouping_matches_the_oracle_on_wide_key_ranges(case: Any) -> None:
    _check(*case, Scratch())


def test_each_grouping_path_and_a_reused_scratch() -> None:
    rng = np.random.default_rng(3)
    scratch = Scratch()  # shared: stale entries of earlier calls must be ignored
    m = 2_000
    # direct addressing: span 6 * 7 = 42
    dense = rng.integers(0, 6, (2, m)).astype(np.uint32)
    dense[1] %= 7
    # hashed key: span 1000**2 > 4 m
    hashed = rng.integers(0, 1000, (2, m)).astype(np.uint32)
    # code tuple: five columns of 2**13 values, span 2**65 > 2**62
    wide = rng.integers(0, 50, (5, m)).astype(np.uint32)
    wide[:, m // 2 :] = wide[:, : m // 2]
    sizes = rng.integers(1, 5, m)
    assert grouping._span(np.array([1 << 13] * 5, dtype=np.int64)) == -1
    for _ in range(3):
        _check(dense, sizes, [None, None], [6, 7], 3, scratch)
        _check(hashed, sizes, [None, None], [1000, 1000], 2, scratch)
        _check(wide, sizes, [None] * 5, [1 << 13] * 5, 4, scratch)
        _check(hashed, sizes, [None, np.arange(1000) // 100], [1000, 10], 5, scratch)


def test_scratch_epochs_wrap_around() -> None:
    scratch = Scratch()
    codes = np.array([[0, 1, 0, 1]], dtype=np.uint32)
    sizes = np.array([1, 2, 3, 4])
    _check(codes, sizes, [None], [2], 1, scratch)
    scratch._epoch = (1 << 31) - 2
    for _ in range(4):  # crosses the limit: the array is renewed, epochs restart at 1
        _check(codes, sizes, [None], [2], 1, scratch)
    assert scratch._epoch < 10


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_fewer_tuples_merges_equal_rows_in_order_of_first_appearance(
    n: int, d: int, seed: int
) -> None:
    """``rare._fewer_tuples``: the distinct rows with their summed counts, in order of
    first appearance (a plain-Python oracle), codes of one-value QIs included."""
    rng = np.random.default_rng(seed)
    radix = rng.integers(1, 4, d).astype(np.int64)
    codes = np.stack([rng.integers(0, r, n) for r in radix]).astype(np.uint8).reshape(d, n)
    counts = rng.integers(1, 9, n).astype(np.int64)
    want: dict[tuple[int, ...], int] = {}
    for i in range(n):
        key = tuple(int(v) for v in codes[:, i])
        want[key] = want.get(key, 0) + int(counts[i])
    got_codes, got_counts = rare._fewer_tuples(codes, counts, radix)
    assert [tuple(int(v) for v in got_codes[:, g]) for g in range(len(got_counts))] == list(want)
    assert got_counts.tolist() == list(want.values())


def test_fewer_tuples_hand_computed() -> None:
    codes = np.array([[1, 0, 1, 1], [2, 2, 2, 0]], dtype=np.uint8)
    counts = np.array([3, 1, 4, 2], dtype=np.int64)
    got_codes, got_counts = rare._fewer_tuples(codes, counts, np.array([2, 3], dtype=np.int64))
    assert got_codes.tolist() == [[1, 0, 1], [2, 2, 0]]
    assert got_counts.tolist() == [7, 1, 2]


def test_tuples_merged_only_when_their_key_range_is_small() -> None:
    """``rare._merges_enough``: the key range (the product of the radices above 1) at
    most ``FEWER_RANGE`` (500) times the tuples; a range past 62 bits never."""
    assert rare.FEWER_RANGE == 500
    merges = rare._merges_enough
    assert merges(np.array([20, 1, 14], dtype=np.int64), 1)  # 280 <= 500
    assert merges(np.array([500, 10], dtype=np.int64), 10)  # 5,000 <= 5,000
    assert not merges(np.array([500, 10], dtype=np.int64), 9)  # 5,000 > 4,500
    assert not merges(np.array([1 << 31, 1 << 31, 4], dtype=np.int64), 1 << 40)  # (overflow)
