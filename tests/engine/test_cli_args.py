"""The name and COL=VALUE options read one way by every command (``apps.engine.cli_args``):
`deid search` on one table and `deid search/measure --person` refuse the same bad item
with the same message, and read the same valid items to the same values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.engine.cli import main
from apps.engine.cli_args import levels_option, names, pairs
from apps.engine.errors import EngineInputError
from tests.engine.test_cli_search import write_tiny


def person_base(tmp_path: Path, command: str) -> list[str]:
    """A longitudinal `search` or `measure` on pid (persons), sex and code (events)."""
    data = tmp_path / "visits.csv"
    data.write_text("pid,sex,code\nP1,F,A\nP1,F,B\nP2,M,A\nP3,M,B\nP4,F,A\n")
    (tmp_path / "hsex.csv").write_text("F;*\nM;*\n")
    (tmp_path / "hcode.csv").write_text("A;*\nB;*\n")
    return [
        command, str(data), "--person", "pid", "--quasi", "sex", "--event-quasi", "code",
        "--hierarchy", f"sex={tmp_path / 'hsex.csv'}",
        "--hierarchy", f"code={tmp_path / 'hcode.csv'}",
    ]  # fmt: skip


def fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, out
    assert err.startswith("deid: error: ") and err.count("\n") == 1, err
    return err.removeprefix("deid: error: ").rstrip("\n")


def succeeds(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    for timing in ("seconds", "search_seconds"):
        result.pop(timing, None)
    return result


BAD = [
    # a blank name: the single-table search took " " for a column of its own (no error)
    (["--hierarchy", " =h.csv"], "--hierarchy: blank column name in '=h.csv'"),
    (["--max-level", "=1"], "--max-level: blank column name in '=1'"),
    (["--max-level", " = 1"], "--max-level: blank column name in '= 1'"),
    # an empty name in a comma list (was dropped without a word)
    (["--max-level", "sex=1,,code=1"], "--max-level: blank name in 'sex=1,,code=1'"),
    (["--max-level", "sex=1,"], "--max-level: blank name in 'sex=1,'"),
    # a column given twice (the last one was taken without a word)
    (["--max-level", "sex=1", "--max-level", "sex=0"], "--max-level: 'sex' given twice"),
    (["--max-level", "sex=1, sex =1"], "--max-level: 'sex' given twice"),
    (["--max-level", "sex"], "--max-level expects COL=VALUE, got 'sex'"),
    (["--max-level", "sex= "], "--max-level expects COL=VALUE, got 'sex='"),
    (["--max-level", "sex=x"], "--max-level: level of 'sex' must be an integer, got 'x'"),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_items_are_refused_alike_on_search_and_search_person(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    single = [
        "search", *write_tiny(tmp_path), "--k", "2",
        # the tiny table's columns are a and b
        *(o.replace("sex", "a").replace("code", "b") for o in options),
    ]  # fmt: skip
    assert fails(capsys, single) == message.replace("sex", "a").replace("code", "b")
    person = [*person_base(tmp_path, "search"), "--k", "2", *options]
    assert fails(capsys, person) == message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--levels", "=2"], "--levels: blank column name in '=2'"),
        (["--levels", "sex=1,,code=0"], "--levels: blank name in 'sex=1,,code=0'"),
        (["--levels", "sex=1,sex=0"], "--levels: 'sex' given twice"),
        (["--hierarchy", "\t=h.csv"], "--hierarchy: blank column name in '=h.csv'"),
        (["--event-quasi", "code,"], "--event-quasi: blank name in 'code,'"),
        (["--dates", " "], "--dates: blank name in ' '"),
    ],
)
def test_bad_items_of_measure_person(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert fails(capsys, [*person_base(tmp_path, "measure"), *options]) == message


def test_blank_names_in_column_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_tiny(tmp_path)
    lists = [base[0], "--sep", ";", *base[5:]]  # without --quasi a,b
    message = "--quasi: blank name in 'a,,b'"
    assert fails(capsys, ["search", *lists, "--quasi", "a,,b", "--k", "2"]) == message
    assert fails(capsys, ["measure", base[0], "--sep", ";", "--quasi", "a,,b"]) == message
    person = person_base(tmp_path, "search")
    person[person.index("sex")] = "sex,,"
    assert fails(capsys, [*person, "--k", "2"]) == "--quasi: blank name in 'sex,,'"


def test_quasi_given_twice_refused_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_tiny(tmp_path)
    base[base.index("a,b")] = "a,b,a"
    assert "quasi-identifier column(s) given twice: a" in fails(
        capsys, ["search", *base, "--k", "2"]
    )
    person = person_base(tmp_path, "search")
    person[person.index("sex")] = "sex,sex"
    assert "named twice: 'sex'" in fails(capsys, [*person, "--k", "2"])


def test_spaces_around_names_and_values_are_stripped_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_tiny(tmp_path)
    limit = ["--suppression-limit", "0.2"]
    tight = succeeds(capsys, ["search", *base, "--k", "2", *limit, "--max-level", "a=1,b=0"])
    spaced = [
        "search", base[0], "--sep", ";", "--quasi", " a , b ",
        "--hierarchy", f" a = {tmp_path / 'ha.csv'} ", "--hierarchy", f"b={tmp_path / 'hb.csv'}",
        "--k", "2", *limit, "--max-level", " a = 1 ", "--max-level", "b= 0",
    ]  # fmt: skip
    assert succeeds(capsys, spaced) == tight
    assert tight["levels"] == {"a": 1, "b": 0}

    person = person_base(tmp_path, "search")
    by_persons = succeeds(capsys, [*person, "--k", "2", "--max-level", "sex=0,code=1"])
    person[person.index("sex")] = " sex "
    spaced_persons = [*person, "--k", "2", "--max-level", " sex = 0 , code= 1"]
    assert succeeds(capsys, spaced_persons) == by_persons
    assert by_persons["levels"] == {"sex": 0, "code": 1}

    measure = person_base(tmp_path, "measure")
    measured = succeeds(capsys, [*measure, "--levels", "sex=1,code=0"])
    assert succeeds(capsys, [*measure, "--levels", " sex =1", "--levels", "code = 0 "]) == measured


def test_the_one_parser() -> None:
    assert names([" a , b", "c"], "--quasi") == ["a", "b", "c"]
    assert names(None, "--quasi") == []
    assert pairs(["a = x.csv , b=y.csv"], "--hierarchy") == {"a": "x.csv", "b": "y.csv"}
    assert levels_option([" a = 2 ", "b=0"], "--levels") == {"a": 2, "b": 0}
    with pytest.raises(EngineInputError, match="^--levels: 'a' given twice$"):
        levels_option(["a=1", "a=1"], "--levels")
