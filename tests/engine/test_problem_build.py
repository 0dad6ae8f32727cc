"""The search problem's arrays from bare codes (``search/problem.py`` and
``search/kernels/problem.py``): rows per value summed over tuples in any number (the
partial sums taken in turn), and a code outside its lookup refused, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.search.problem import QuasiLookup, build_problem


def _lookup(name: str, values: int) -> QuasiLookup:
    # level 1 pairs values (0,1) (2,3) ...; level 2 all in one
    return QuasiLookup.from_maps(
        name, [np.arange(values), np.arange(values) // 2, np.zeros(values, dtype=np.int64)]
    )


@pytest.mark.parametrize("tuples", [0, 1, 3, 4, 5, 9])
def test_rows_per_value_at_every_level(tuples: int) -> None:
    codes = np.array([0, 1, 0, 2, 0, 3, 2, 1, 0][:tuples], dtype=np.int64)
    counts = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9][:tuples], dtype=np.int64)
    problem = build_problem(["q"], [codes], counts, [_lookup("q", 4)], distinct=False)
    level0 = [int(counts[codes == v].sum()) for v in range(4)]
    assert problem.frequencies[0][0].tolist() == level0
    assert problem.frequencies[0][1].tolist() == [level0[0] + level0[1], level0[2] + level0[3]]
    assert problem.frequencies[0][2].tolist() == [sum(level0)]
    assert problem.rows == int(counts.sum())


def test_rows_per_value_by_hand() -> None:
    # values 0,1,0,2,0 with 1,2,3,4,5 rows: value 0 holds 1+3+5, value 1 2, value 2 4
    codes = np.array([0, 1, 0, 2, 0])
    problem = build_problem(["q"], [codes], np.array([1, 2, 3, 4, 5]), [_lookup("q", 4)])
    assert problem.frequencies[0][0].tolist() == [9, 2, 4, 0]
    assert problem.frequencies[0][1].tolist() == [11, 4]


def test_a_code_outside_its_lookup_is_refused() -> None:
    with pytest.raises(EngineInputError, match="column 'b': a code is outside its hierarchy"):
        build_problem(
            ["a", "b"],
            [np.array([0, 1, 2, 3, 0]), np.array([0, 1, 4, 0, 1])],
            np.ones(5, dtype=np.int64),
            [_lookup("a", 4), _lookup("b", 4)],
        )


def test_frequencies_are_slices_of_one_array_made_when_read() -> None:
    """``flat_frequencies`` holds every QI's rows per value at every level in order (what
    the rare rows' pass reads), and ``frequencies`` are its slices, made when first read
    (issue #26: a search without suppression reads none)."""
    codes = [np.array([0, 1, 0, 2, 0]), np.array([3, 3, 1, 0, 2])]
    problem = build_problem(
        ["a", "b"], codes, np.array([1, 2, 3, 4, 5]), [_lookup("a", 4), _lookup("b", 4)]
    )
    assert "frequencies" not in vars(problem)
    a = [[9, 2, 4, 0], [11, 4], [15]]
    b = [[4, 3, 5, 3], [7, 8], [15]]
    assert problem.flat_frequencies.tolist() == [v for level in a + b for v in level]
    assert [[f.tolist() for f in per_qi] for per_qi in problem.frequencies] == [a, b]
    assert all(
        np.shares_memory(f, problem.flat_frequencies)
        for per_qi in problem.frequencies
        for f in per_qi
    )
