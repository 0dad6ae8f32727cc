"""What drives the risk: leave-one-out figures, distinction/separation, and minimal sample
uniques with SUDA weights, on a small data set checked by hand; and on adult the drivers
tell the quasi-identifiers apart."""

from __future__ import annotations

import polars as pl
import pytest

from apps.engine.drivers import (
    distinction,
    leave_one_out,
    minimal_sample_uniques,
    separation,
    suda_weight,
)
from apps.engine.frame import encode

# Six records on three quasi-identifiers:
#   r1 (30, F, A)  r2 (30, F, A)  r3 (30, M, A)  r4 (40, M, A)  r5 (40, M, B)  r6 (50, F, B)
ROWS = {
    "age": ["30", "30", "30", "40", "40", "50"],
    "sex": ["F", "F", "M", "M", "M", "F"],
    "region": ["A", "A", "A", "A", "B", "B"],
}


def encoded():  # type: ignore[no-untyped-def]
    return encode(pl.DataFrame(ROWS), ["age", "sex", "region"])


def test_distinction_and_separation_by_hand() -> None:
    data = encoded()
    assert distinction(data, "age") == pytest.approx(3 / 6)
    assert distinction(data, "region") == pytest.approx(2 / 6)
    # age: 3 x 30, 2 x 40, 1 x 50 -> same-value ordered pairs 3*2 + 2*1 = 8 of 6*5 = 30.
    assert separation(data, "age") == pytest.approx(1 - 8 / 30)
    # sex: 3 F, 3 M -> 6 + 6 = 12 of 30.
    assert separation(data, "sex") == pytest.approx(1 - 12 / 30)


def test_leave_one_out_by_hand() -> None:
    by = {d.left_out: d for d in leave_one_out(encoded(), target=0.5)}
    # Without age: (F,A) x2, (M,A) x2, (M,B) x1, (F,B) x1 -> uniques 2, average 4/6.
    assert (by["age"].uniques, by["age"].average_risk) == (2, pytest.approx(4 / 6))
    assert by["age"].records_at_risk == 2  # classes of 1: risk 1 > 0.5
    # Without sex: (30,A) x3, (40,A), (40,B), (50,B) -> uniques 3.
    assert (by["sex"].uniques, by["sex"].records_at_risk) == (3, 3)
    # Without region: (30,F) x2, (30,M), (40,M) x2, (50,F) -> uniques 2.
    assert by["region"].uniques == 2 and by["region"].max_risk == 1.0


def test_minimal_sample_uniques_by_hand() -> None:
    # Unique on all three: r3, r4, r5, r6 (r1/r2 share (30,F,A)).
    # Size 1: age 50 -> r6 {age}; region: A x4, B x2 -> none; sex: none.
    # Size 2 (not containing a size-1 MSU of the same record):
    #   {age,sex}: (30,M) r3 unique, (40,M) x2, (50,F) r6 (already {age}) -> r3
    #   {age,region}: (30,A) x3, (40,A) r4, (40,B) r5, (50,B) r6 (has {age}) -> r4, r5
    #   {sex,region}: (F,A) x2, (M,A) x2, (M,B) r5, (F,B) r6 -> r5, r6
    # r6's {sex,region} is minimal too (neither sex nor region alone singles it out).
    msu = minimal_sample_uniques(encoded(), max_size=3)
    assert msu.records_unique == 4 and msu.records_with_msu == 4
    assert msu.by_size == {1: 1, 2: 5}
    assert msu.combinations == [
        (("age",), 1),
        (("age", "region"), 2),
        (("sex", "region"), 2),
        (("age", "sex"), 1),
    ]
    # SUDA weights with d = 3, M = 3: size 1 -> (3-1)(3-2) = 2, size 2 -> (3-2) = 1.
    assert (suda_weight(1, 3, 3), suda_weight(2, 3, 3), suda_weight(3, 3, 3)) == (2, 1, 1)
    # Scores: total = 2*1 + 1*5 = 7; age in {age} (2) + {age,region} (2) + {age,sex} (1) = 5.
    assert msu.contributions["age"] == pytest.approx(5 / 7)
    assert msu.contributions["region"] == pytest.approx(4 / 7)  # {age,region} 2 + {sex,region} 2
    assert msu.contributions["sex"] == pytest.approx(3 / 7)  # {sex,region} 2 + {age,sex} 1
    assert msu.msu_counts == {"age": 4, "sex": 3, "region": 4}


def test_drivers_tell_the_quasi_identifiers_of_adult_apart(adult_path) -> None:  # type: ignore[no-untyped-def]
    """On adult every "max risk without X" is 1 (the old chart: all bars equal); records at
    risk and MSUs differ per variable. Checked against counts made with csv + Counter."""
    import csv
    import itertools
    from collections import Counter

    from apps.engine.reading import read_table
    from tests.engine.conftest import adult_class_sizes

    quasi = ["age", "education", "marital-status", "native-country", "race", "sex", "workclass"]
    data = encode(read_table(adult_path), quasi)
    drivers = leave_one_out(data, target=0.1)
    assert {d.max_risk for d in drivers} == {1.0}
    for d in drivers:
        sizes = adult_class_sizes(tuple(q for q in quasi if q != d.left_out))
        assert d.records_at_risk == sum(s for s in sizes if 1 / s > 0.1)
    assert len({d.records_at_risk for d in drivers}) == len(quasi)

    msu = minimal_sample_uniques(data, max_size=2)
    with adult_path.open(newline="", encoding="utf-8") as handle:
        records = [tuple(r[q] for q in quasi) for r in csv.DictReader(handle, delimiter=";")]
    full = Counter(records)
    uniques = [r for r in records if full[r] == 1]
    counters = {
        s: Counter(tuple(r[j] for j in s) for r in records)
        for size in (1, 2)
        for s in itertools.combinations(range(len(quasi)), size)
    }
    expected: Counter[int] = Counter()
    for r in uniques:
        singles = {s for s in counters if len(s) == 1 and counters[s][(r[s[0]],)] == 1}
        expected[1] += len(singles)
        for s in counters:
            unique_on_pair = len(s) == 2 and counters[s][tuple(r[j] for j in s)] == 1
            if unique_on_pair and not any((j,) in singles for j in s):
                expected[2] += 1
    assert msu.records_unique == len(uniques)
    assert msu.by_size == {size: n for size, n in sorted(expected.items()) if n}
    assert len(set(msu.contributions.values())) > 1
