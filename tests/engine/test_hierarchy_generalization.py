"""A hierarchy only ever merges groups: a label names the same values, or more, at every
level it appears on; a value is never renamed to another value of the column."""

from __future__ import annotations

import pytest

from apps.engine.errors import HierarchyError
from apps.engine.hierarchies import Hierarchy, categorical_hierarchy, parse_arx_text
from tests.engine.benchmark_data import require
from tests.engine.conftest import ARX_DIR


def test_swapping_two_values_is_not_a_generalization() -> None:
    with pytest.raises(HierarchyError, match=r"level 1 turns 'A' into 'B' but 'B' into 'A'"):
        Hierarchy("code", (("A", "B", "*"), ("B", "A", "*")))


def test_renaming_a_value_to_another_value_is_refused() -> None:
    # A, B and C grouped under C is a generalization; D released as A is not.
    with pytest.raises(HierarchyError, match=r"level 1 turns 'A' into 'C' but 'D' into 'A'"):
        parse_arx_text("A;C;*\nB;C;*\nC;C;*\nD;A;*\n", "code")


def test_a_label_reused_for_other_values_at_a_higher_level_is_refused() -> None:
    rows = (("a", "G1", "G2", "*"), ("b", "G2", "G1", "*"), ("c", "G2", "G1", "*"))
    with pytest.raises(HierarchyError, match=r"level 2 turns 'G1' into 'G2' but 'G2' into 'G1'"):
        Hierarchy("code", rows)


def test_categorical_groups_named_after_each_other_are_refused() -> None:
    with pytest.raises(HierarchyError, match="turns"):
        categorical_hierarchy("job", ["Dev", "IT"], [{"Dev": ["IT"], "IT": ["Dev"]}])


def test_a_group_may_carry_the_name_of_one_of_its_members() -> None:
    hierarchy = categorical_hierarchy(
        "job", ["IT", "Dev", "Nurse"], [{"IT": ["IT", "Dev"]}], keep_ungrouped=True
    )
    assert [hierarchy.generalize(v, 1) for v in ("IT", "Dev", "Nurse")] == ["IT", "IT", "Nurse"]
    kept = Hierarchy("code", (("A", "A", "AB", "*"), ("B", "AB", "AB", "*")))
    assert kept.height == 3


@pytest.mark.parametrize(
    "levels",
    [
        "IT: Dev",
        {"IT": ["Dev"]},
        [["IT", "Dev"]],
        [{"IT": "Dev"}],
        [{"IT": [1, 2]}],
        [{3: ["Dev"]}],
        None,
    ],
)
def test_categorical_levels_must_be_a_list_of_groups(levels: object) -> None:
    with pytest.raises(HierarchyError, match="categorical hierarchy of 'job'.*list"):
        categorical_hierarchy("job", ["Dev", "IT"], levels, keep_ungrouped=True)  # type: ignore[arg-type]


def test_the_benchmark_hierarchies_are_generalizations() -> None:
    require(ARX_DIR / "adult_hierarchy_age.csv")
    for path in sorted(ARX_DIR.glob("adult_hierarchy_*.csv")):
        column = path.stem.removeprefix("adult_hierarchy_")
        assert parse_arx_text(path.read_text(), column).height >= 1
