"""Input shapes, validation messages, suggestions, derived QIs and date levels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.errors import EngineInputError, HierarchyError
from apps.engine.longitudinal import (
    DateSpec,
    EventCountSpec,
    EventTable,
    from_long_table,
    from_tables,
    looks_longitudinal,
    measure,
    prepare,
    suggest_levels,
)
from apps.engine.longitudinal.dates import interval_levels
from apps.engine.longitudinal.formulas import (
    anchor_level_for_shift,
    event_count_label,
    parse_power,
    top_code,
)
from tests.engine.longitudinal.helpers import long_table


def frame(**columns: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame(columns, schema={c: pl.String for c in columns})


def test_suggest_levels_from_the_data() -> None:
    data = frame(
        pid=["1", "1", "2", "3", "3"],
        sex=["F", "F", "M", "F", "F"],
        code=["A", "B", "A", "C", "C"],
        ward=["x", "x", None, "y", None],
    )
    suggestions = {
        s.column: s for s in suggest_levels(data, person="pid", columns=["sex", "code", "ward"])
    }
    assert suggestions["sex"].level == "person" and suggestions["sex"].varying_persons == 0
    assert suggestions["code"].level == "event" and suggestions["code"].varying_persons == 1
    assert suggestions["ward"].level == "event"  # missing on one row of person 3
    assert suggestions["code"].persons == 3


def test_looks_longitudinal_flags_repeated_identifiers() -> None:
    data = frame(
        mrn=["a", "a", "b", "b", "c", "d"],
        name=["Ann", "Bob", "Cy", "Di", "Ed", "Flo"],
    )
    hints = looks_longitudinal(data, identifiers=["mrn", "name"])
    assert [h.column for h in hints] == ["mrn"]
    assert hints[0].distinct == 4 and hints[0].rows == 6
    assert hints[0].rows_per_value == pytest.approx(1.5)


def test_several_event_tables_share_the_persons() -> None:
    visits = frame(pid=["1", "2", "2"], diag=["A", "A", "B"])
    drugs = frame(pid=["1", "3"], drug=["X", "X"])
    persons = frame(pid=["1", "2", "3", "4"], sex=["F", "F", "F", "F"])
    data = from_tables(
        persons=persons,
        person_key="pid",
        person_quasi=["sex"],
        events=[
            EventTable("visits", visits, "pid", ("diag",)),
            EventTable("drugs", drugs, "pid", ("drug",)),
        ],
    )
    assert data.persons == 4 and data.events == 5
    assert data.events_per_person().tolist() == [2, 2, 1, 0]
    # power 1: person 1 holds {A, X}: A is held by 1 and 2, X by 1 and 3 -> 2
    risk = measure(prepare(data), power=1)
    assert risk.counts.tolist() == [2, 1, 2, 4]


def test_same_event_column_in_two_tables_must_be_renamed() -> None:
    one = frame(pid=["1"], date=["2020-01-01"])
    two = frame(pid=["1"], date=["2020-02-01"])
    with pytest.raises(EngineInputError, match="'date'.*several event tables"):
        from_tables(
            persons=None,
            person_key="pid",
            person_quasi=[],
            events=[EventTable("a", one, "pid", ("date",)), EventTable("b", two, "pid", ("date",))],
        )


def test_person_table_refusals() -> None:
    events = [EventTable("e", frame(pid=["1"], code=["A"]), "pid", ("code",))]
    with pytest.raises(EngineInputError, match=r"several rows for person\(s\) '2'"):
        from_tables(
            persons=frame(pid=["1", "2", "2"]), person_key="pid", person_quasi=[], events=events
        )
    with pytest.raises(EngineInputError, match="1 row.*no person id"):
        from_tables(
            persons=frame(pid=["1", None]), person_key="pid", person_quasi=[], events=events
        )
    with pytest.raises(EngineInputError, match="'age' is in no table"):
        from_tables(persons=frame(pid=["1"]), person_key="pid", person_quasi=["age"], events=events)
    with pytest.raises(EngineInputError, match="has no column"):
        from_tables(persons=frame(id=["1"]), person_key="pid", person_quasi=[], events=events)


def test_person_level_column_read_from_the_events() -> None:
    persons = frame(pid=["1", "2", "3"])
    events = frame(pid=["1", "1", "2"], sex=["F", "F", "M"], code=["A", "B", "A"])
    data = from_tables(
        persons=persons,
        person_key="pid",
        person_quasi=["sex"],
        events=[EventTable("e", events, "pid", ("code",))],
    )
    assert data.person_values["sex"].to_list() == ["F", "M", None]
    varying = frame(pid=["1", "1"], sex=["F", "M"], code=["A", "B"])
    with pytest.raises(EngineInputError, match=r"'sex' varies within person\(s\) '1'"):
        from_tables(
            persons=persons,
            person_key="pid",
            person_quasi=["sex"],
            events=[EventTable("e", varying, "pid", ("code",))],
        )


def test_varying_message_lists_many_persons_with_a_count() -> None:
    rows = [(str(i), s) for i in range(30) for s in ("F", "M")]
    data = long_table(rows, ("pid", "sex"))
    with pytest.raises(EngineInputError, match=r"'0', '1', '2'.*\(30 in all\)"):
        from_long_table(data, person="pid", person_quasi=["sex"], event_quasi=[])


def test_names_must_be_distinct_and_not_derived() -> None:
    data = frame(pid=["1"], a=["x"], event_count=["3"])
    with pytest.raises(EngineInputError, match="both person-level and event-level"):
        from_long_table(data, person="pid", person_quasi=["a"], event_quasi=["a"])
    long = from_long_table(data, person="pid", person_quasi=["event_count"], event_quasi=[])
    with pytest.raises(EngineInputError, match="derived"):
        prepare(long, event_count=EventCountSpec())


# --------------------------------------------------------------------------- derived QIs


@pytest.mark.parametrize(
    ("count", "level", "top", "label"),
    [
        (0, 0, None, "0"),
        (5, 1, None, "4-7"),
        (20, 1, None, "16+"),
        (1, 2, None, "1"),
        (3, 2, None, "2+"),
        (3, 3, None, "*"),
        (12, 0, 12, "12+"),
        (30, 0, 12, "12+"),
        (9, 1, 12, "8+"),
        (5, 1, 12, "4-7"),
        (1, 0, 1, "1+"),
        (1, 1, 1, "1+"),
        (5, 2, 1, "1+"),
        (0, 2, 1, "0"),
    ],
)
def test_event_count_labels(count: int, level: int, top: int | None, label: str) -> None:
    assert event_count_label(count, level, top) == label


def test_event_count_top_code_is_the_95th_percentile() -> None:
    assert top_code(np.array([1] * 19 + [30])) == 1
    assert top_code(np.array(list(range(1, 101)))) == 95
    assert top_code(np.array([0, 0, 0])) == 1
    rows = [(str(i), "A") for i in range(20) for _ in range(1 if i < 18 else 9)]
    data = from_long_table(
        long_table(rows, ("pid", "code")), person="pid", person_quasi=[], event_quasi=[]
    )
    problem = prepare(data, event_count=EventCountSpec())
    assert problem.event_count_top == 9  # 18 persons with 1 event, 2 with 9: P95 = 9
    assert problem.dimensions[0].lookup.labels[0] == ("1", "9+")
    assert problem.dimensions[0].lookup.labels[1] == ("1", "8+")


def test_interval_levels_bin_by_floor_of_days_over_width() -> None:
    codes, levels = interval_levels(np.array([0, 6, 7, 29, 30, 400, -1], dtype=np.int64))
    assert levels.labels[0] == ("0", "6", "7", "29", "30", "400", None)
    assert levels.labels[1] == ("0-6", "7-13", "28-34", "399-405", None)  # 7 days
    assert levels.labels[2] == ("0-29", "30-59", "390-419", None)  # 30 days
    assert levels.labels[4] == ("0-364", "365-729", None)
    assert levels.labels[5] == ("*",)
    assert levels.domain_size == 730
    assert levels.maps[2][codes].tolist() == [0, 0, 0, 0, 1, 2, 3]
    assert [int(x[0]) for x in levels.leaves[1:5]] == [7, 30, 90, 365]


@pytest.mark.parametrize(
    ("days", "level"), [(1, 1), (15, 1), (16, 2), (182, 2), (183, 3), (913, 3), (914, 4)]
)
def test_anchor_level_for_a_shift_range(days: int, level: int) -> None:
    assert anchor_level_for_shift(days) == level


def test_dates_must_be_dates_and_shift_needs_anchored() -> None:
    data = from_long_table(
        frame(pid=["1", "2"], admission=["2020-01-01", "01/02/2020"]),
        person="pid",
        person_quasi=[],
        event_quasi=["admission"],
    )
    with pytest.raises(EngineInputError, match="'admission' must hold dates.*'01/02/2020'"):
        prepare(data, dates=DateSpec(("admission",)))
    with pytest.raises(EngineInputError, match="anchored"):
        DateSpec(("admission",), "absolute", 30)
    with pytest.raises(EngineInputError, match="not event-level"):
        prepare(data, dates=DateSpec(("discharge",)))


def test_hierarchy_that_misses_values_is_named() -> None:
    data = from_long_table(
        frame(pid=["1"], code=["Z"]), person="pid", person_quasi=[], event_quasi=["code"]
    )
    with pytest.raises(HierarchyError, match="'Z'"):
        prepare(data, hierarchies={"code": "icd10"})


@pytest.mark.parametrize(
    ("text", "power"), [("1", 1), ("10", 10), ("all", "all"), ("ALL", "all"), (3, 3)]
)
def test_power_values(text: object, power: object) -> None:
    assert parse_power(text) == power


@pytest.mark.parametrize("text", ["0", "11", "-1", "three", "2.5", True, None])
def test_power_refusals(text: object) -> None:
    with pytest.raises(EngineInputError, match="adversary power"):
        parse_power(text)


def test_no_persons_and_only_missing_values() -> None:
    empty = frame(pid=[], code=[])
    with pytest.raises(EngineInputError, match="no persons"):
        from_long_table(empty, person="pid", person_quasi=[], event_quasi=["code"])
    with pytest.raises(EngineInputError, match="no persons"):
        from_tables(persons=frame(pid=[]), person_key="pid", person_quasi=[], events=[])
    data = from_tables(
        persons=frame(pid=["1", "2"], sex=[None, None]),
        person_key="pid",
        person_quasi=["sex"],
        events=[],
    )
    assert measure(prepare(data), power=1).counts.tolist() == [2, 2]
