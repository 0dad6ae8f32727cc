"""`deid search|apply|measure … --hierarchy COL=FILE`: every problem of a hierarchy file is
one line naming the column, the file and the line (issue: hierarchy messages), and a
hierarchy that does not cover the data says how many values and shows at most three of
them, cut short (data values may be personal data); the web app's message is built by the
same function (``hierarchy_files.uncovered_message``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.cli import main

DATA = "sex,age,note\nF,34,a\nM,35,b\nF,40,c\nM,41,d\nF,42,e\nF,43,f\nM,44,g\nF,4500000000000000000000001,h\n"


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
    return err.removeprefix("deid: error: ").rstrip("\n")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {
        "data": write(tmp_path / "data.csv", DATA),
        "sex": write(tmp_path / "h_sex.csv", "F;*\nM;*\n"),
        "long": write(tmp_path / "visits.csv", "pid,sex,age\nP1,F,34\nP1,F,34\nP2,M,35\nP3,F,40\n"),
    }


def test_uncovered_values_name_column_file_count_and_three_values_cut_short(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str]
) -> None:
    # covers 34 and 35 only: 40, 41, 42, 43, 44 and the 25-digit value are not covered
    # (6 values); the first three in the data's order are shown, a long one cut to 20
    # characters, and how many more there are.
    age = write(tmp_path / "h_age.csv", "34;30-39;*\n35;30-39;*\n")
    expected = (
        f"hierarchy of 'age' (file {age}) does not cover 6 values of the data: '40', '41', "
        "'42' and 3 more; add them to the hierarchy, or correct the data"
    )
    hierarchies = ("--hierarchy", f"sex={files['sex']}", "--hierarchy", f"age={age}")
    for command in (
        ("search", files["data"], "--k", "2", "--quasi", "sex,age", *hierarchies),
        ("apply", files["data"], "--k", "2", "--quasi", "sex,age", *hierarchies,
         "--out", str(tmp_path / "out.csv")),
    ):  # fmt: skip
        assert fails(capsys, *command) == expected
    # a long value among the first three is cut to 20 characters
    young = write(tmp_path / "h_young.csv", "".join(f"{a};*\n" for a in (34, 35, 40, 41, 42)))
    err = fails(
        capsys, "search", files["data"], "--k", "2", "--quasi", "age",
        "--hierarchy", f"age={young}",
    )  # fmt: skip
    assert err == (
        f"hierarchy of 'age' (file {young}) does not cover 3 values of the data: '43', '44', "
        "'4500000000000000000…'; add them to the hierarchy, or correct the data"
    )
    # persons: measure and search --person say the same, in the same words
    short = write(tmp_path / "h_short.csv", "34;*\n")
    person_commands: tuple[tuple[str, ...], ...] = (("measure",), ("search", "--k", "2"))
    for person_command in person_commands:
        err = fails(
            capsys, *person_command, files["long"], "--person", "pid", "--quasi", "sex",
            "--event-quasi", "age", "--hierarchy", f"sex={files['sex']}",
            "--hierarchy", f"age={short}",
        )  # fmt: skip
        assert err == (
            f"hierarchy of 'age' (file {short}) does not cover 2 values of the data: "
            "'35', '40'; add them to the hierarchy, or correct the data"
        )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", ": the file is empty; it needs one line per value of 'sex': the value, then "
         "its generalization at each level (e.g. 'F;*')"),
        (b"\n\n", ": the file is empty; it needs one line per value of 'sex': the value, "
         "then its generalization at each level (e.g. 'F;*')"),
        (b"F;*\n\nM\n", ", line 3: 1 value, but line 1 has 2 (separator ';'); every line "
         "needs the value and one generalization per level"),
        (b"F;*\nM;*\n\xe9;*\n", ", line 3: not UTF-8 text (byte 0xe9); save the file as "
         "UTF-8"),
        (b"F;*\nM;*\nF;*\n", ", line 3: lists a value twice: 'F' (1 in all)"),
    ],
)  # fmt: skip
def test_hierarchy_file_errors_name_the_file_and_the_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    files: dict[str, str],
    content: bytes,
    expected: str,
) -> None:
    sex = write(tmp_path / "h_sex_bad.csv", content)
    err = fails(
        capsys, "search", files["data"], "--k", "2", "--quasi", "sex", "--hierarchy",
        f"sex={sex}",
    )  # fmt: skip
    assert err == f"hierarchy file {sex} (--hierarchy sex=…){expected}"


def test_wrong_separator_and_a_level_that_is_not_coarser(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str]
) -> None:
    comma = write(tmp_path / "h_comma.csv", "F,*\nM,*\n")
    err = fails(
        capsys, "search", files["data"], "--k", "2", "--quasi", "sex",
        "--hierarchy", f"sex={comma}", "--hierarchy-sep", ";",
    )  # fmt: skip
    assert err == (
        f"hierarchy file {comma} (--hierarchy sex=…): no line is split by the separator ';', "
        "but every line is by ','; give --hierarchy-sep ','"
    )
    # Line 2 (35;*;30-39) is finer at level 2 than at level 1: "*" at level 1 becomes
    # "30-39" at level 2, while line 1 turns "30-39" into "*": the two are exchanged.
    ages = "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in (34, 40, 41, 42, 43, 44))
    lines = ages.splitlines(keepends=True)
    lines.insert(1, "35;*;30-39\n")  # line 2: level 2 finer than level 1
    bad = write(tmp_path / "h_age.csv", "".join(lines) + "4500000000000000000000001;*;*\n")
    err = fails(
        capsys, "search", files["data"], "--k", "2", "--quasi", "age",
        "--hierarchy", f"age={bad}",
    )  # fmt: skip
    assert err.startswith(f"hierarchy file {bad} (--hierarchy age=…), line 2: level 2 ")
    assert err.endswith(": a hierarchy may group values, not exchange them")
    # A group split between two coarser ones: line 3 puts 30-39 under "A", line 1 under "*".
    split = write(tmp_path / "h_split.csv", "34;30-39;*;*\n35;30-39;*;*\n36;30-39;A;*\n")
    err = fails(
        capsys, "search", files["data"], "--k", "2", "--quasi", "age",
        "--hierarchy", f"age={split}",
    )  # fmt: skip
    assert err == (
        f"hierarchy file {split} (--hierarchy age=…), line 3: level 2 is not a function of "
        "level 1: '30-39' -> '*' and 'A'"
    )


def test_the_sensitive_hierarchy_is_named_by_its_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str]
) -> None:
    argv = ("search", files["data"], "--k", "2", "--quasi", "sex", "--hierarchy")
    sensitive = ("--sensitive", "note", "--criterion", "hierarchical-t=0.5")
    ragged = write(tmp_path / "h_note.csv", "a;*\nb\n")
    err = fails(capsys, *argv, f"sex={files['sex']}", *sensitive, "--sensitive-hierarchy", ragged)
    assert err == (
        f"hierarchy file {ragged} (--sensitive-hierarchy, column 'note'), line 2: 1 value, "
        "but line 1 has 2 (separator ';'); every line needs the value and one "
        "generalization per level"
    )
    # notes a…h: a hierarchy of a and b leaves six out
    short = write(tmp_path / "h_note_short.csv", "a;*\nb;*\n")
    err = fails(capsys, *argv, f"sex={files['sex']}", *sensitive, "--sensitive-hierarchy", short)
    assert err == (
        f"hierarchy of 'note' (file {short}) does not cover 6 values of the data: 'c', 'd', "
        "'e' and 3 more; add them to the hierarchy, or correct the data"
    )
