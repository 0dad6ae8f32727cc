from __future__ import annotations

from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.hierarchies.mapping import collapse, level_mapping


def test_collapse_ranges_text_and_cap() -> None:
    assert collapse(["19", "17", "18", "23", "25", "24"]) == "17-19, 23-25"
    assert collapse(["2.5", "3.5"]) == "2.5, 3.5"
    assert collapse(["Ottawa", "Barrie", "Toronto"]) == "Barrie, Ottawa, Toronto"
    assert (
        collapse([str(v) for v in range(0, 40, 2)], max_parts=3) == "0, 2, 4, … (20 values in all)"
    )


def test_level_mapping_of_an_age_hierarchy() -> None:
    rows = [
        [str(age), f"{age // 10 * 10}-{age // 10 * 10 + 9}", "*"] for age in (17, 18, 19, 23, 25)
    ]
    mapping = level_mapping(hierarchy_from_rows("age", rows), 1)
    assert [(g.label, g.values, g.count) for g in mapping.groups] == [
        ("10-19", "17-19", 3),
        ("20-29", "23, 25", 2),
    ]
    top = level_mapping(hierarchy_from_rows("age", rows), 2)
    assert [(g.label, g.values) for g in top.groups] == [("*", "17-19, 23, 25")]
    assert (mapping.groups_total, mapping.values_total) == (2, 5)
