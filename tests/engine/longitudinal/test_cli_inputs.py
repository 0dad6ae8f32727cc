"""Bad inputs to `deid measure/search --person`: one line naming the problem and where
(file, column, rows or persons), exit code 2, never a traceback (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from apps.engine.cli import main


def write(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, out
    assert err.startswith("deid: error: ") and err.count("\n") == 1, err
    return err


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture
def visits(tmp_path: Path) -> str:
    return write(tmp_path / "visits.csv", "pid,sex,code\nP1,F,A\nP1,F,B\nP2,M,A\n")


def test_missing_person_column_names_column_and_file(
    capsys: pytest.CaptureFixture[str], visits: str
) -> None:
    err = fails(capsys, "measure", visits, "--person", "patient", "--event-quasi", "code")
    assert "'patient'" in err and "visits.csv" in err


@pytest.mark.parametrize("blank", ["", "   ", '""'])
def test_missing_person_ids_name_the_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, blank: str
) -> None:
    # a blank id is no id: before, "   " was taken for a person of its own
    path = write(tmp_path / "visits.csv", f"pid,code\nP1,A\nP2,B\n{blank},C\nP3,A\n{blank},B\n")
    err = fails(capsys, "measure", path, "--person", "pid", "--event-quasi", "code")
    assert "visits.csv" in err and "'pid'" in err
    assert "2 row(s)" in err and "3, 5" in err  # data rows, the header not counted


def test_missing_person_ids_in_the_person_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    persons = write(tmp_path / "persons.csv", "id,sex\nP1,F\n  ,M\n")
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\n")
    err = fails(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--person-key",
        "id",
        "--quasi",
        "sex",
        "--event-quasi",
        "code",
    )
    assert "persons.csv" in err and "'id'" in err and "row(s) 2" in err


def test_person_level_column_varying_names_persons_column_and_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "long.csv", "pid,sex,code\nP1,F,A\nP2,M,A\nP1,M,B\nP3,F,C\nP3,M,C\n")
    err = fails(
        capsys, "measure", path, "--person", "pid", "--quasi", "sex", "--event-quasi", "code"
    )
    assert "long.csv" in err and "'sex'" in err and "'P1', 'P3'" in err


def test_orphan_events_name_the_persons_and_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    persons = write(tmp_path / "persons.csv", "pid,sex\n1,F\n2,M\n")
    events = write(tmp_path / "events.csv", "pid,code\n1,A\n7,B\n10,B\n")
    err = fails(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--quasi",
        "sex",
        "--event-quasi",
        "code",
    )
    assert "events.csv" in err and "persons.csv" in err and "'7', '10'" in err


def test_duplicate_person_ids_in_the_person_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    persons = write(tmp_path / "persons.csv", "pid,sex\nP1,F\nP2,M\nP1,F\n")
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\n")
    err = fails(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--quasi",
        "sex",
        "--event-quasi",
        "code",
    )
    assert "persons.csv" in err and "'P1'" in err and "several rows" in err


@pytest.mark.parametrize("content", ["", "pid,code\n", "\n\n"])
def test_empty_files(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str) -> None:
    path = write(tmp_path / "empty.csv", content)
    err = fails(capsys, "measure", path, "--person", "pid", "--event-quasi", "code")
    assert "empty file" in err and "empty.csv" in err
    persons = write(tmp_path / "persons.csv", content)
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\n")
    err = fails(
        capsys, "measure", events, "--person", "pid", "--persons", persons, "--event-quasi", "code"
    )
    assert "empty file" in err and "persons.csv" in err


def test_non_utf8_file_is_refused_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Windows-1252 "é" and "è": read leniently both became U+FFFD, the two persons
    # fell into one class and the risk came out as 0.5 where each is unique (1.0)
    path = write(tmp_path / "latin.csv", "pid,ville\nP1,Montréal\nP2,Montrèal\n".encode("cp1252"))
    err = fails(capsys, "measure", path, "--person", "pid", "--event-quasi", "ville")
    assert "latin.csv" in err and "UTF-8" in err and "line 2" in err and "0xE9" in err
    persons = write(tmp_path / "persons.csv", "pid,ville\nP1,Montréal\n".encode("cp1252"))
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\n")
    err = fails(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--quasi",
        "ville",
        "--event-quasi",
        "code",
    )
    assert "persons.csv" in err and "line 2" in err
    # the same file in UTF-8 (with a byte-order mark and CRLF) is measured
    good = write(
        tmp_path / "utf8.csv",
        "\ufeffpid,ville\r\nP1,Montréal\r\nP2,Montrèal\r\n".encode(),
    )
    report = run(capsys, "measure", good, "--person", "pid", "--event-quasi", "ville")
    assert report["max_risk"] == 1.0 and report["persons"] == 2


def test_multibyte_characters_across_read_blocks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.engine import utf8

    monkeypatch.setattr(utf8, "_UTF8_BLOCK", 5)
    path = write(tmp_path / "v.csv", "pid,ville\nP1,Montréal\nP2,Zürich\nP3,東京\n")
    assert run(capsys, "measure", path, "--person", "pid", "--event-quasi", "ville")["persons"] == 3
    bad = write(
        tmp_path / "bad.csv", "pid,ville\nP1,Montréal\nP2,Zürich\n".encode() + b"P3,\xe6\x9d\n"
    )
    err = fails(capsys, "measure", bad, "--person", "pid", "--event-quasi", "ville")
    assert "line 4" in err


def test_hierarchy_not_covering_a_value(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\nP2,B\nP3,C\n")
    hierarchy = write(tmp_path / "h_code.csv", "A;AB;*\nB;AB;*\n")
    for command in (("measure",), ("search", "--k", "2")):
        err = fails(
            capsys,
            *command,
            events,
            "--person",
            "pid",
            "--event-quasi",
            "code",
            "--hierarchy",
            f"code={hierarchy}",
        )
        assert "'code'" in err and "'C'" in err and "does not cover" in err


def test_hierarchy_with_commas_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a hierarchy saved with commas (no semicolon anywhere): before, each row was one
    # value "A,AB,*" and the message said that 'A' and 'B' were not covered
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\nP2,B\n")
    hierarchy = write(tmp_path / "h_code.csv", "A,AB,*\nB,AB,*\n")
    report = run(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--event-quasi",
        "code",
        "--hierarchy",
        f"code={hierarchy}",
        "--levels",
        "code=1",
    )
    assert report["max_risk"] == 0.5


@pytest.mark.parametrize("power", ["0", "11", "x", "", "1.5", "-1"])
def test_bad_power(capsys: pytest.CaptureFixture[str], visits: str, power: str) -> None:
    err = fails(
        capsys, "measure", visits, "--person", "pid", "--event-quasi", "code", "--power", power
    )
    assert "adversary power must be 1 to 10 or 'all'" in err


def test_dates_on_a_column_that_holds_no_dates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "visits.csv", "pid,adm\nP1,2020-01-01\nP2,next week\nP3,2020-13-01\n")
    err = fails(capsys, "measure", path, "--person", "pid", "--dates", "adm")
    assert "'adm'" in err and "'next week', '2020-13-01'" in err and "visits.csv" in err


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--quasi", "sex,sex", "--event-quasi", "code"), "named twice: 'sex'"),
        (
            ("--quasi", "sex", "--event-quasi", "code", "--event-quasi", "code"),
            "named twice: 'code'",
        ),
        (("--quasi", "sex,code", "--event-quasi", "code"), "both person-level and event-level"),
        (("--quasi", "pid", "--event-quasi", "code"), "person column 'pid'"),
        (("--event-quasi", "pid,code"), "person column 'pid'"),
        ((), "no quasi-identifier"),
        (("--quasi", "age", "--event-quasi", "code"), "'age'"),
    ],
)
def test_quasi_identifier_lists(
    capsys: pytest.CaptureFixture[str], visits: str, options: tuple[str, ...], expected: str
) -> None:
    assert expected in fails(capsys, "measure", visits, "--person", "pid", *options)


def test_person_key_as_a_person_level_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    persons = write(tmp_path / "persons.csv", "id,sex\nP1,F\nP2,M\n")
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\n")
    err = fails(
        capsys,
        "measure",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--person-key",
        "id",
        "--quasi",
        "id",
        "--event-quasi",
        "code",
    )
    assert "person column 'id'" in err


def test_na_values_apply_to_the_person_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # --na names the missing-value text of every file given, the person table included
    persons = write(tmp_path / "persons.csv", "pid,sex\nP1,NA\nP2,NA\nP3,F\n")
    events = write(tmp_path / "events.csv", "pid,code\nP1,A\nP2,A\nP3,A\n")
    hierarchy = write(tmp_path / "h.csv", "F;*\n")
    argv = ("measure", events, "--person", "pid", "--persons", persons, "--quasi", "sex")
    with_na = run(
        capsys, *argv, "--event-quasi", "code", "--na", "NA", "--hierarchy", f"sex={hierarchy}"
    )
    # P1 and P2 have a missing sex (one class of two), P3 is alone
    assert with_na["min_class_size"] == 1 and with_na["person_classes"] == 2
    err = fails(capsys, *argv, "--event-quasi", "code", "--hierarchy", f"sex={hierarchy}")
    assert "'NA'" in err  # without --na, "NA" is a value the hierarchy does not cover


def test_integral_float_person_ids_match_integer_ids(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a person column with gaps saved by pandas is float64 (1.0, 2.0): it must link to
    # the integer ids of the person table, not be refused as orphans
    events = tmp_path / "events.parquet"
    pl.DataFrame({"pid": [1.0, 2.0, 2.0], "code": ["A", "B", "A"]}).write_parquet(events)
    persons = tmp_path / "persons.parquet"
    pl.DataFrame({"pid": [1, 2, 3], "sex": ["F", "F", "F"]}).write_parquet(persons)
    report = run(
        capsys,
        "measure",
        str(events),
        "--person",
        "pid",
        "--persons",
        str(persons),
        "--quasi",
        "sex",
        "--event-quasi",
        "code",
        "--power",
        "1",
    )
    assert (report["persons"], report["events"]) == (3, 3)
    # P1 {A} matched by P1, P2; P2 {A, B}: B only P2; P3 {} all three
    assert report["min_class_size"] == 1
    assert report["average_risk"] == pytest.approx((1 / 2 + 1 + 1 / 3) / 3)


def test_complete_knowledge_search_counts_persons_fixed_by_others_suppression(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Power "all", k = 3. P0, P1, P2 (F): P0 has events A and C, P1 and P2 C; P3, P4 (M)
    # none. At sex=0 the two men go (2 persons allowed: 0.4 x 5) and P0 loses A (1 event
    # allowed: 0.25 x 4); then P0, P1, P2 all have {C}: count 3, the node passes.
    # P1 and P2 fail before only because P0's set differs: they need no event of their
    # own. The early failure test charged each of them one event (3 > 1) and refused
    # the node: the search returned code=* instead of code=0. (P0 keeps an event: a
    # person whose every event goes has no row in the release and is suppressed.)
    # Loss at sex=0: sex (3 + 2 x 2 - 5) / (10 - 5) = 0.4; code, over the 4 events,
    # A suppressed (3) and three C (1 each): (6 - 4) / (4 x 3 - 4) = 0.25.
    persons = write(tmp_path / "persons.csv", "pid,sex\nP0,F\nP1,F\nP2,F\nP3,M\nP4,M\n")
    events = write(tmp_path / "events.csv", "pid,code\nP0,A\nP0,C\nP1,C\nP2,C\n")
    sex = write(tmp_path / "sex.csv", "F;*\nM;*\n")
    code = write(tmp_path / "code.csv", "A;*\nB;*\nC;*\n")
    report = run(
        capsys,
        "search",
        events,
        "--person",
        "pid",
        "--persons",
        persons,
        "--quasi",
        "sex",
        "--event-quasi",
        "code",
        "--hierarchy",
        f"sex={sex}",
        "--hierarchy",
        f"code={code}",
        "--power",
        "all",
        "--k",
        "3",
        "--suppression-limit",
        "0.4",
        "--event-suppression-limit",
        "0.25",
    )
    assert report["levels"] == {"sex": 0, "code": 0}
    assert (report["suppressed_persons"], report["suppressed_events"]) == (2, 1)
    assert report["information_loss"] == pytest.approx(1.75**0.5 - 1)
    assert report["min_class_size"] == 3
