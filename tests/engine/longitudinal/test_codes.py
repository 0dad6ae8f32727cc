"""Built-in ICD-10 and ICD-9-CM hierarchies: the range files and the levels of codes."""

from __future__ import annotations

import pytest

from apps.engine.errors import HierarchyError
from apps.engine.longitudinal.codes import (
    ICD9CM,
    ICD10,
    code_ranges,
    code_titles,
    icd9_parts,
    icd9cm_hierarchy,
    icd10_category,
    icd10_hierarchy,
)


def _key(system: str, category: str) -> tuple[int, int] | str:
    if system == ICD10:
        return category
    kind = {"V": 1, "E": 2}.get(category[0], 0)
    return kind, int(category[1:] if kind else category)


@pytest.mark.parametrize("system", [ICD10, ICD9CM])
def test_blocks_partition_their_chapters(system: str) -> None:
    ranges = code_ranges(system)
    chapters = [r for r in ranges if r.level == "chapter"]
    blocks = [r for r in ranges if r.level != "chapter"]
    assert len(chapters) == (22 if system == ICD10 else 19)
    for block in blocks:
        assert _key(system, block.start) <= _key(system, block.end), block
        holders = [
            c
            for c in chapters
            if _key(system, c.start) <= _key(system, block.start)
            and _key(system, block.end) <= _key(system, c.end)
        ]
        assert len(holders) == 1, block
    ordered = sorted(blocks, key=lambda b: _key(system, b.start))
    for left, right in zip(ordered, ordered[1:], strict=False):
        assert _key(system, left.end) < _key(system, right.start), (left, right)


def test_icd10_chapters_and_a_few_blocks() -> None:
    titles = code_titles(ICD10)
    assert titles["I20-I25"] == "Ischaemic heart diseases"
    assert titles["E10-E14"] == "Diabetes mellitus"
    assert titles["S00-T98"].startswith("Injury, poisoning")
    assert titles["V01-Y98"] == "External causes of morbidity and mortality"
    assert len([r for r in code_ranges(ICD10) if r.level == "block"]) > 250


@pytest.mark.parametrize(
    ("code", "category"),
    [
        ("I21.0", "I21"),
        ("i210 ", "I21"),
        ("I10", "I10"),
        ("A17.0†", "A17"),
        ("G01*", "G01"),
        ("U07.1", "U07"),
        ("2021", None),
        ("hello", None),
        ("I2", None),
    ],
)
def test_icd10_category(code: str, category: str | None) -> None:
    assert icd10_category(code) == category


def test_icd10_levels() -> None:
    values = ["J45.9", "U07.1", "C50.9", "X85", "Y09", "I21.0"]
    hierarchy = icd10_hierarchy("diag", values)
    assert hierarchy.height == 4
    rows = {row[0]: row[1:] for row in hierarchy.rows}
    assert rows["J45.9"] == ("J45", "J40-J47", "J00-J99", "*")
    assert rows["U07.1"] == ("U07", "U00-U49", "U00-U99", "*")
    assert rows["C50.9"] == ("C50", "C50-C50", "C00-D48", "*")
    assert rows["X85"] == ("X85", "X85-Y09", "V01-Y98", "*")
    assert rows["Y09"] == ("Y09", "X85-Y09", "V01-Y98", "*")


def test_icd10_codes_outside_every_block_are_named_unless_lenient() -> None:
    with pytest.raises(HierarchyError, match=r"'E08\.9'.*icd10:lenient"):
        icd10_hierarchy("diag", ["E11.9", "E08.9"])
    with pytest.raises(HierarchyError, match=r"not ICD-10 codes: 'hello'"):
        icd10_hierarchy("diag", ["E11.9", "hello"])
    rows = {
        row[0]: row[1:]
        for row in icd10_hierarchy("diag", ["E08.9", "hello", "E11.9"], lenient=True).rows
    }
    assert rows["E08.9"] == ("E08", "E00-E90", "E00-E90", "*")  # its chapter at the block level
    assert rows["hello"] == ("*", "*", "*", "*")
    assert rows["E11.9"] == ("E11", "E10-E14", "E00-E90", "*")


@pytest.mark.parametrize(
    ("code", "parts"),
    [
        ("250.01", ("250", "250.0")),
        ("25001", ("250", "250.0")),
        ("250", ("250", "250")),
        ("38.9", ("038", "038.9")),
        ("0389", ("038", "038.9")),
        ("V01.71", ("V01", "V01.7")),
        ("v0171", ("V01", "V01.7")),
        ("E800.0", ("E800", "E800.0")),
        ("E8000", ("E800", "E800.0")),
        ("I21.0", None),
        ("2500123", None),
    ],
)
def test_icd9_parts(code: str, parts: tuple[str, str] | None) -> None:
    assert icd9_parts(code) == parts


def test_icd9cm_levels() -> None:
    hierarchy = icd9cm_hierarchy("diag", ["250.01", "V01.71", "E800.0", "038.9", "042", "999.9"])
    assert hierarchy.height == 5
    rows = {row[0]: row[1:] for row in hierarchy.rows}
    assert rows["250.01"] == ("250.0", "250", "249-259", "240-279", "*")
    assert rows["V01.71"] == ("V01.7", "V01", "V01-V06", "V01-V91", "*")
    assert rows["E800.0"] == ("E800.0", "E800", "E800-E807", "E000-E999", "*")
    assert rows["038.9"] == ("038.9", "038", "030-041", "001-139", "*")
    assert rows["042"] == ("042", "042", "042-042", "001-139", "*")
    assert rows["999.9"] == ("999.9", "999", "996-999", "800-999", "*")


def test_icd9cm_gaps_are_named() -> None:
    with pytest.raises(HierarchyError, match=r"'043\.1'"):
        icd9cm_hierarchy("diag", ["043.1", "250"])
    rows = {row[0]: row[1:] for row in icd9cm_hierarchy("diag", ["043.1"], lenient=True).rows}
    assert rows["043.1"] == ("043.1", "043", "001-139", "001-139", "*")
