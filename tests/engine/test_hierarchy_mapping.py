"""What each released value contains, as the report prints it: values held by fewer than k
records are never printed (issue #22), the others most frequent first."""

from __future__ import annotations

import pytest

from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.hierarchies.mapping import contents_in_words, level_mapping

AGES = [[str(age), f"{age // 10 * 10}-{age // 10 * 10 + 9}", "*"] for age in (17, 18, 19, 23, 25)]


def test_numbers_held_by_k_records_or_more_read_as_ranges_the_rest_are_counted() -> None:
    counts = {"17": 5, "18": 6, "19": 5, "23": 2, "25": 9}
    mapping = level_mapping(hierarchy_from_rows("age", AGES), 1, counts=counts, min_records=5)
    assert [(g.label, g.values, g.count, g.records) for g in mapping.groups] == [
        ("10-19", "17-19", 3, 16),
        ("20-29", "25; 1 value held by fewer than 5 records, not listed", 2, 11),
    ]
    top = level_mapping(hierarchy_from_rows("age", AGES), 2, counts=counts, min_records=5)
    assert [(g.label, g.values) for g in top.groups] == [
        ("*", "17-19, 25; 1 value held by fewer than 5 records, not listed")
    ]
    assert (mapping.groups_total, mapping.values_total, mapping.min_records) == (2, 5, 5)


def test_categories_most_frequent_first_with_their_records() -> None:
    rows = [
        ["Canada", "North America"],
        ["Mexico", "North America"],
        ["United-States", "North America"],
        ["Bermuda", "North America"],
        ["Aruba", "North America"],
    ]
    counts = {"Canada": 121, "Mexico": 51, "United-States": 29170, "Bermuda": 3, "Aruba": 1}
    (group,) = level_mapping(
        hierarchy_from_rows("country", rows), 1, counts=counts, min_records=20
    ).groups
    assert group.values == (
        "United-States (29,170), Canada (121), Mexico (51); "
        "2 values held by fewer than 20 records each, not listed"
    )
    assert (group.count, group.records) == (5, 29346)


def test_a_long_list_is_capped_with_its_reason() -> None:
    pairs = [(f"C{i:02d}", 100 - i) for i in range(15)]
    text = contents_in_words(pairs, min_records=10, max_parts=3)
    assert text == (
        "C00 (100), C01 (99), C02 (98), … (the 3 most frequent of 15 values held by 10 or "
        "more records: the report lists at most 3)"
    )


def test_kept_rare_values_and_values_not_in_the_data() -> None:
    """Level 0 releases the original values: a value held by fewer than k records is not
    printed even as the released value. A value of the hierarchy the data lacks is left out."""
    rows = [["K1P 0A0", "K1P"], ["K1P 0E1", "K1P"], ["M5V 2T6", "M5V"], ["M5V 3L9", "M5V"]]
    counts = {"K1P 0A0": 30, "K1P 0E1": 2, "M5V 2T6": 1}
    kept = level_mapping(hierarchy_from_rows("postal", rows), 0, counts=counts, min_records=20)
    assert [(g.label, g.records) for g in kept.groups] == [
        ("K1P 0A0", 30),
        (None, 2),
        (None, 1),
    ]
    fsa = level_mapping(hierarchy_from_rows("postal", rows), 1, counts=counts, min_records=20)
    assert [(g.label, g.values, g.count) for g in fsa.groups] == [
        ("K1P", "K1P 0A0 (30); 1 value held by fewer than 20 records, not listed", 2),
        ("M5V", "1 value held by fewer than 20 records, not listed", 1),
    ]
    assert fsa.values_total == 3


def test_groups_capped_by_records() -> None:
    rows = [[str(i), f"g{i % 4}"] for i in range(40)]
    counts = {str(i): 1 + i % 4 for i in range(40)}
    mapping = level_mapping(
        hierarchy_from_rows("x", rows), 1, counts=counts, min_records=1, max_groups=2
    )
    assert [(g.label, g.records) for g in mapping.groups] == [("g3", 40), ("g2", 30)]
    assert mapping.groups_total == 4


def test_the_class_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="class threshold"):
        level_mapping(hierarchy_from_rows("age", AGES), 1, counts={}, min_records=0)
