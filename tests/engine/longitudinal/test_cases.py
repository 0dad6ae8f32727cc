"""LONGITUDINAL.md §5 test cases through the engine API (values computed by hand there)."""

from __future__ import annotations

import numpy as np
import pytest

from apps.engine.criteria import KAnonymity, MaxRisk
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal import (
    ALL,
    DateSpec,
    EventCountSpec,
    exhaustive_search,
    measure,
    optimal_search,
    prepare,
)
from tests.engine.longitudinal.helpers import arx, long_data, two_tables


def counts(problem, levels=None, power=1):  # type: ignore[no-untyped-def]
    return measure(problem, levels=levels, power=power, by_power=None).counts.tolist()


# --------------------------------------------------------------------------- TC1


def tc1():  # type: ignore[no-untyped-def]
    rows = [
        ("P1", "F", "1970"),
        ("P1", "F", "1970"),
        ("P1", "F", "1970"),
        ("P2", "M", "1980"),
        ("P3", "M", "1980"),
        ("P3", "M", "1980"),
    ]
    return long_data(rows, ("pid", "sex", "birth"), person_quasi=("sex", "birth"))


@pytest.mark.parametrize("power", [1, 2, ALL])
def test_tc1_counts_persons_not_rows(power: object) -> None:
    risk = measure(prepare(tc1()), power=power)  # type: ignore[arg-type]
    assert risk.persons == 3 and risk.events == 6
    assert risk.counts.tolist() == [1, 2, 2]
    assert risk.max_risk == 1.0
    assert risk.average_risk == pytest.approx(2 / 3)
    assert risk.min_class_size == 1  # k-check with k = 2 fails
    # the row-based answer (k = 3, average 2/6) is what must not come out
    assert risk.average_risk != pytest.approx(2 / 6)


def test_tc1_event_count_makes_everyone_unique() -> None:
    hierarchy = arx("event_count", "1;1;*\n2;2;*\n3;3+;*\n")
    problem = prepare(tc1(), event_count=EventCountSpec(), hierarchies={"event_count": hierarchy})
    for level in (0, 1):
        risk = measure(problem, levels={"event_count": level}, power=1)
        assert risk.counts.tolist() == [1, 1, 1]
        assert risk.average_risk == 1.0


# --------------------------------------------------------------------------- TC2


def tc2():  # type: ignore[no-untyped-def]
    sets = {"P1": "AB", "P2": "AC", "P3": "BC", "P4": "ABC"}
    rows = [(p, "F", c) for p, codes in sets.items() for c in codes]
    return prepare(
        long_data(rows, ("pid", "sex", "code"), person_quasi=("sex",), event_quasi=("code",))
    )


@pytest.mark.parametrize(
    ("power", "expected", "max_risk", "average"),
    [
        (1, [3, 3, 3, 3], 1 / 3, 1 / 3),
        (2, [2, 2, 2, 2], 0.5, 0.5),
        (3, [2, 2, 2, 1], 1.0, 0.625),
        (ALL, [1, 1, 1, 1], 1.0, 1.0),
    ],
)
def test_tc2_power_and_superset_rule(
    power: object, expected: list[int], max_risk: float, average: float
) -> None:
    risk = measure(tc2(), power=power)  # type: ignore[arg-type]
    assert risk.persons == 4 and risk.events == 9
    assert risk.counts.tolist() == expected
    assert risk.max_risk == pytest.approx(max_risk)
    assert risk.average_risk == pytest.approx(average)


def test_tc2_k_checks() -> None:
    problem = tc2()
    assert measure(problem, power=1).min_class_size == 3  # k = 2 passes, k = 4 fails
    assert measure(problem, power=2).min_class_size == 2  # k = 2 passes, k = 3 fails
    assert measure(problem, power=3).min_class_size == 1  # fails


def test_tc2_by_power_reports_one_to_five_and_all() -> None:
    risk = measure(tc2(), power=3)
    assert list(risk.by_power) == ["1", "2", "3", "4", "5", "all"]
    assert risk.by_power["1"].max_risk == pytest.approx(1 / 3)
    assert risk.by_power["2"].average_risk == pytest.approx(0.5)
    assert risk.by_power["3"].average_risk == pytest.approx(0.625)
    # p >= the largest feature set: same as p = 3 (superset rule); "all" is exact equality
    assert risk.by_power["5"].average_risk == pytest.approx(0.625)
    assert risk.by_power["all"].min_class_size == 1


# --------------------------------------------------------------------------- TC4

TC4_HIERARCHY = """I21.0;I21;I20-I25
I21.4;I21;I20-I25
I25.1;I25;I20-I25
E11.9;E11;E08-E13
E11.6;E11;E08-E13
"""


def tc4(hierarchy: object = None):  # type: ignore[no-untyped-def]
    sets = {
        "P1": ("I21.0", "E11.9"),
        "P2": ("I21.4", "E11.6"),
        "P3": ("I25.1", "E11.9"),
        "P4": ("I25.1", "E11.6"),
    }
    rows = [(p, c) for p, codes in sets.items() for c in codes]
    data = long_data(rows, ("pid", "diag"), event_quasi=("diag",))
    return prepare(data, hierarchies={"diag": hierarchy or arx("diag", TC4_HIERARCHY)})


def test_tc4_levels_and_powers() -> None:
    problem = tc4()
    level0 = measure(problem, levels={"diag": 0}, power=1)
    assert level0.counts.tolist() == [1, 1, 2, 2]
    assert level0.max_risk == 1.0 and level0.average_risk == pytest.approx(0.75)
    assert counts(problem, {"diag": 0}, 2) == [1, 1, 1, 1]
    assert counts(problem, {"diag": 1}, 1) == [2, 2, 2, 2]
    assert counts(problem, {"diag": 1}, 2) == [2, 2, 2, 2]
    for power in (1, 2):
        risk = measure(problem, levels={"diag": 2}, power=power)
        assert risk.counts.tolist() == [4, 4, 4, 4] and risk.max_risk == 0.25


@pytest.mark.parametrize("hierarchy", ["test", "icd10"])
def test_tc4_search_target_half_returns_level_one(hierarchy: str) -> None:
    problem = tc4(None if hierarchy == "test" else "icd10")
    result = optimal_search(problem, MaxRisk(0.5), power=2)
    assert result.levels == {"diag": 1}
    assert result.solution is not None
    assert result.solution.suppressed_persons == 0 and result.solution.suppressed_events == 0
    best, _ = exhaustive_search(problem, MaxRisk(0.5), power=2)
    assert best is not None and best.levels == {"diag": 1}


def test_tc4_icd10_levels_are_category_block_chapter() -> None:
    problem = tc4("icd10")
    lookup = problem.dimensions[0].lookup
    assert lookup.labels[1] == ("E11", "I21", "I25")
    assert lookup.labels[2] == ("E10-E14", "I20-I25")
    assert lookup.labels[3] == ("E00-E90", "I00-I99")
    assert lookup.labels[4] == ("*",)


# --------------------------------------------------------------------------- TC6

TC6 = [
    ("P1", "2020-01-10"),
    ("P1", "2020-02-09"),
    ("P2", "2020-03-05"),
    ("P2", "2020-04-04"),
    ("P3", "2020-01-20"),
    ("P3", "2020-03-20"),
]


def tc6(mode: str, shift: int | None = None):  # type: ignore[no-untyped-def]
    data = long_data(TC6, ("pid", "admission"), event_quasi=("admission",))
    return prepare(data, dates=DateSpec(("admission",), mode, shift))  # type: ignore[arg-type]


def test_tc6_absolute_month() -> None:
    problem = tc6("absolute")
    month = {"admission": 1}
    risk = measure(problem, levels=month, power=1)
    assert risk.counts.tolist() == [1, 1, 2]
    assert risk.max_risk == 1.0 and risk.average_risk == pytest.approx(5 / 6)
    assert counts(problem, month, 2) == [1, 1, 1]
    assert problem.dimensions[0].lookup.labels[1] == ("2020-01", "2020-02", "2020-03", "2020-04")


def test_tc6_anchored_intervals() -> None:
    problem = tc6("anchored")
    assert problem.names == ("anchor", "admission")
    thirty = {"anchor": 2, "admission": 2}  # anchor year, ⌊d/30⌋
    risk = measure(problem, levels=thirty, power=1)
    assert risk.counts.tolist() == [2, 2, 1]
    assert risk.average_risk == pytest.approx(2 / 3)
    assert counts(problem, thirty, 2) == [2, 2, 1]
    ninety = {"anchor": 2, "admission": 3}
    for power in (1, 2):
        risk = measure(problem, levels=ninety, power=power)
        assert risk.counts.tolist() == [3, 3, 3] and risk.max_risk == pytest.approx(1 / 3)


def test_tc6_shifted_dates_measure_the_anchor_at_the_shift_granularity() -> None:
    problem = tc6("anchored", shift=30)  # ±30 days: 61 possible dates, wider than a month
    risk = measure(problem, levels={"admission": 2}, power=1)
    assert risk.levels == {"anchor": 2, "admission": 2}
    assert risk.counts.tolist() == [2, 2, 1]
    with pytest.raises(EngineInputError, match="at least 2"):
        measure(problem, levels={"anchor": 1})


# --------------------------------------------------------------------------- TC8

TC8_HIERARCHY = "a1;A;*\na2;A;*\nb1;B;*\nb2;B;*\n"


def tc8():  # type: ignore[no-untyped-def]
    sets = {
        "T1": ("a1", "b1"),
        "T2": ("a2", "b1"),
        "T3": ("a1", "b2"),
        "T4": ("a2", "b2"),
        "T5": ("b1",),
    }
    rows = [(p, c) for p, items in sets.items() for c in items]
    data = long_data(rows, ("pid", "item"), event_quasi=("item",))
    return prepare(data, hierarchies={"item": arx("item", TC8_HIERARCHY)})


def test_tc8_km_anonymity_verdicts() -> None:
    problem = tc8()
    assert counts(problem, {"item": 0}, 1) == [2, 2, 2, 2, 3]  # k^1 holds
    assert counts(problem, {"item": 0}, 2) == [1, 1, 1, 1, 3]  # pairs unique: FAIL
    assert counts(problem, {"item": 1}, 2) == [4, 4, 4, 4, 5]  # A and B: PASS
    result = optimal_search(problem, KAnonymity(2), power=2)
    assert result.levels == {"item": 1}


# --------------------------------------------------------------------------- TC9


def tc9(event_count: bool = False):  # type: ignore[no-untyped-def]
    data = two_tables(
        [("P1", "F", "1970"), ("P2", "F", "1970"), ("P3", "F", "1970")],
        ("pid", "sex", "birth"),
        [("P1", "A"), ("P2", "A")],
        ("pid", "code"),
        person_quasi=("sex", "birth"),
        event_quasi=("code",),
    )
    if not event_count:
        return prepare(data)
    hierarchy = arx("event_count", "0;0\n1;1\n2;2+\n3;2+\n")
    return prepare(data, event_count=EventCountSpec(), hierarchies={"event_count": hierarchy})


@pytest.mark.parametrize("power", [1, 2])
def test_tc9_person_without_events(power: int) -> None:
    risk = measure(tc9(), power=power)
    assert risk.persons == 3 and risk.events == 2
    assert risk.counts.tolist() == [2, 2, 3]
    assert risk.max_risk == 0.5
    assert risk.average_risk == pytest.approx((0.5 + 0.5 + 1 / 3) / 3)
    assert risk.min_class_size >= 2  # k = 2 passes


def test_tc9_event_count_isolates_the_person_without_events() -> None:
    risk = measure(tc9(event_count=True), power=1)
    assert risk.counts.tolist() == [2, 2, 1]
    assert risk.max_risk == 1.0


def test_tc9_varying_person_level_column_is_refused_naming_person_and_column() -> None:
    rows = [("P1", "F", "A"), ("P1", "M", "B"), ("P2", "F", "A")]
    with pytest.raises(EngineInputError, match=r"'sex'.*'P1'"):
        long_data(rows, ("pid", "sex", "code"), person_quasi=("sex",), event_quasi=("code",))


def test_tc9_orphan_event_rows_are_refused() -> None:
    with pytest.raises(EngineInputError, match=r"not in the person table: 'P9'"):
        two_tables(
            [("P1", "F")],
            ("pid", "sex"),
            [("P1", "A"), ("P9", "B")],
            ("pid", "code"),
            person_quasi=("sex",),
            event_quasi=("code",),
        )


def test_counts_are_in_id_order_numeric_ids_numerically() -> None:
    rows = [("10", "A"), ("9", "A"), ("9", "B"), ("100", "C")]
    data = long_data(rows, ("pid", "code"), event_quasi=("code",))
    assert data.ids.to_list() == ["9", "10", "100"]
    assert np.array_equal(measure(prepare(data), power=1).counts, [1, 2, 1])
