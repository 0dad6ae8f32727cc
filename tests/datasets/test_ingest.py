"""Taking files in: every format round trip, and every kind of bad input with its message."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import polars as pl
import pyreadstat
import pytest
import xlsxwriter

from apps.datasets import ingest
from apps.datasets.ingest import (
    IngestError,
    check_size,
    convert_to_parquet,
    detect_format,
    human_size,
    sniff_text,
)
from tests.datasets.conftest import WriteFile

PEOPLE_CSV = (
    "record_id,postal_code,health_number,name,age\n"
    "1,K0A 1A0,0123456789,Hélène Côté,34\n"
    '2,M5V 2T6,,"Smith, John",\n'
    "3,N2L 3G1,9876543217,Zoë,91\n"
)


def read(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path)


def error_of(src: Path, dest: Path, name: str | None = None, **options: str) -> IngestError:
    with pytest.raises(IngestError) as caught:
        convert_to_parquet(src, name or src.name, dest, **options)
    return caught.value


def leftovers(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.iterdir())


# --------------------------------------------------------------------------- sizes


def test_human_size() -> None:
    assert human_size(0) == "0 bytes"
    assert human_size(1536) == "1.5 KB"
    assert human_size(5 * 1024**2) == "5 MB"
    assert human_size(int(2.4 * 1024**3)) == "2.4 GB"


def test_check_size() -> None:
    check_size(100, 100)
    with pytest.raises(IngestError) as caught:
        check_size(int(2.4 * 1024**3), 2 * 1024**3)
    assert caught.value.code == "too_large"
    assert str(caught.value).startswith("The file is 2.4 GB; the upload limit is 2 GB.")


# --------------------------------------------------------------------------- CSV round trips


def test_csv_utf8_keeps_exact_text(write_file: WriteFile, dest: Path) -> None:
    src = write_file("people.csv", PEOPLE_CSV)
    result = convert_to_parquet(src, "people.csv", dest)
    assert (result.format, result.rows, result.delimiter, result.encoding) == (
        "csv",
        3,
        ",",
        "utf-8",
    )
    assert result.columns == ("record_id", "postal_code", "health_number", "name", "age")
    assert result.warnings == ()
    frame = read(dest)
    assert all(dtype == pl.String for dtype in frame.schema.values())
    assert frame.get_column("health_number").to_list() == ["0123456789", None, "9876543217"]
    assert frame.get_column("postal_code").to_list()[0] == "K0A 1A0"
    assert frame.get_column("name").to_list() == ["Hélène Côté", "Smith, John", "Zoë"]
    assert frame.get_column("age").to_list() == ["34", None, "91"]
    assert leftovers(dest) == ["data.parquet"]


def test_csv_with_bom(write_file: WriteFile, dest: Path) -> None:
    src = write_file("bom.csv", "\ufeff" + PEOPLE_CSV)
    result = convert_to_parquet(src, "bom.csv", dest)
    assert result.encoding == "utf-8-sig"
    assert result.columns[0] == "record_id"  # no BOM glued to the first name
    assert read(dest).get_column("record_id").to_list() == ["1", "2", "3"]


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_csv_western_european_detected(write_file: WriteFile, dest: Path, encoding: str) -> None:
    text = "nom;prénom;ville\nCôté;Hélène;Montréal\nGagnon;Émile;Québec\n"
    src = write_file("fr.csv", text.encode(encoding))
    result = convert_to_parquet(src, "fr.csv", dest)
    assert (result.encoding, result.delimiter) == ("cp1252", ";")
    assert result.columns == ("nom", "prénom", "ville")
    assert read(dest).get_column("ville").to_list() == ["Montréal", "Québec"]
    assert any("not UTF-8" in w for w in result.warnings)


def test_csv_encoding_given_by_the_user(write_file: WriteFile, dest: Path) -> None:
    src = write_file("fr.csv", "nom,ville\nCôté,Montréal\n".encode("latin-1"))
    result = convert_to_parquet(src, "fr.csv", dest, encoding="ISO-8859-1")
    assert result.encoding == "iso8859-1"
    assert result.warnings == ()  # the user chose it: nothing to warn about
    assert read(dest).row(0) == ("Côté", "Montréal")


def test_csv_utf16(write_file: WriteFile, dest: Path) -> None:
    src = write_file("u16.csv", "id,name\n1,Müller\n2,Søren\n".encode("utf-16"))
    result = convert_to_parquet(src, "u16.csv", dest)
    assert result.encoding == "utf-16"
    assert read(dest).get_column("name").to_list() == ["Müller", "Søren"]


@pytest.mark.parametrize(
    ("name", "text", "delimiter"),
    [
        ("semi.csv", "a;b;c\n1;2,5;x\n3;4,0;y\n", ";"),  # decimal commas do not fool it
        ("tabs.tsv", "a\tb\tc\n1\t2\t3\n", "\t"),
        ("tabs.txt", "a\tb\tc\n1\t2\t3\n", "\t"),
        ("pipes.csv", "a|b|c\n1|2|3\n", "|"),
        ("quoted.csv", 'a,b\n"x;y;z",1\n"p;q",2\n', ","),
    ],
)
def test_csv_delimiters(
    write_file: WriteFile, dest: Path, name: str, text: str, delimiter: str
) -> None:
    src = write_file(name, text)
    result = convert_to_parquet(src, name, dest)
    assert result.delimiter == delimiter
    assert result.format == ("tsv" if name.endswith(".tsv") else "csv")
    assert read(dest).width == len(result.columns)


def test_delimiter_given_by_the_user(write_file: WriteFile, dest: Path) -> None:
    src = write_file("one.csv", "a;b\n1;2\n")
    result = convert_to_parquet(src, "one.csv", dest, delimiter=",")
    assert result.columns == ("a;b",)
    assert read(dest).to_dicts() == [{"a;b": "1;2"}]


def test_sniff_text(write_file: WriteFile) -> None:
    assert sniff_text(write_file("a.csv", "x,y\n1,2\n")) == ("utf-8", ",")
    assert sniff_text(write_file("b.csv", "x;y\n1;2\n"), delimiter="|") == ("utf-8", "|")
    assert sniff_text(write_file("c.csv", "nom;ville\nCôté;Montréal\n".encode("cp1252"))) == (
        "cp1252",
        ";",
    )
    cyrillic = "имя,город\nИван,Москва\nПётр,Санкт-Петербург\n".encode("cp1251")
    assert sniff_text(write_file("r.csv", cyrillic)) == ("cp1251", ",")  # not forced to cp1252
    assert sniff_text(write_file("d.csv", "x\n1\n"), encoding="utf8") == ("utf-8", ",")
    with pytest.raises(IngestError) as caught:
        sniff_text(write_file("e.csv", "x\n"), encoding="klingon")
    assert caught.value.code == "unknown_encoding"


def test_empty_strings_blank_lines_and_empty_rows(write_file: WriteFile, dest: Path) -> None:
    src = write_file("gaps.csv", 'a,b\n1,""\n\n, \n,\n2,x\n')
    result = convert_to_parquet(src, "gaps.csv", dest)
    assert read(dest).to_dicts() == [
        {"a": "1", "b": None},
        {"a": None, "b": " "},  # a space is a value, kept exactly
        {"a": "2", "b": "x"},
    ]
    assert result.rows == 3
    assert result.warnings == (
        "1 blank line(s) were skipped.",
        "1 row was entirely empty and left out.",
    )


def test_trailing_delimiter_column_is_dropped(write_file: WriteFile, dest: Path) -> None:
    src = write_file("trail.csv", "a,b,\n1,2,\n3,4,\n")
    result = convert_to_parquet(src, "trail.csv", dest)
    assert result.columns == ("a", "b")
    assert result.warnings == ("1 unnamed, empty column(s) at the end of each line were left out.",)


def test_header_names_are_trimmed(write_file: WriteFile, dest: Path) -> None:
    result = convert_to_parquet(write_file("t.csv", " a , b\n1,2\n"), "t.csv", dest)
    assert result.columns == ("a", "b")
    assert read(dest).columns == ["a", "b"]


def test_multiline_quoted_values(write_file: WriteFile, dest: Path) -> None:
    src = write_file("notes.csv", 'id,note\n1,"line one\nline two"\n2,"said ""hi"""\n')
    convert_to_parquet(src, "notes.csv", dest)
    assert read(dest).get_column("note").to_list() == ["line one\nline two", 'said "hi"']


# --------------------------------------------------------------------------- CSV errors


def test_declared_utf8_with_a_bad_byte_reports_the_line(write_file: WriteFile, dest: Path) -> None:
    src = write_file("bad.csv", b"a,b\n1,2\n3,4\n5,caf\xe9\n")
    error = error_of(src, dest, encoding="utf-8")
    assert (error.code, error.line) == ("encoding", 4)
    assert str(error).startswith("Line 4 is not valid UTF-8: byte 0xE9 after “5,caf”")
    assert "windows-1252" in str(error)
    assert leftovers(dest) == []


def test_detected_utf8_with_a_bad_byte_far_down(
    write_file: WriteFile, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The head decodes as UTF-8; the bad byte comes after it, and chunks are tiny so that
    # the line count must carry across chunk boundaries.
    monkeypatch.setattr(ingest.text, "_SNIFF_BYTES", 64)
    monkeypatch.setattr(ingest.text, "_CHUNK_BYTES", 7)
    body = "".join(f"{i},value {i}\n" for i in range(1, 40))
    src = write_file("late.csv", b"id,text\n" + body.encode() + b"40,Montr\xe9al\n")
    error = error_of(src, dest)
    assert (error.code, error.line) == ("encoding", 41)
    assert "Line 41 is not valid UTF-8" in str(error)


def test_bad_byte_in_a_declared_single_byte_encoding(write_file: WriteFile, dest: Path) -> None:
    # 0x81 is not defined in Windows-1252.
    src = write_file("cp.csv", b"a\nx\n\x81\n")
    error = error_of(src, dest, encoding="cp1252")
    assert (error.code, error.line) == ("encoding", 3)


@pytest.mark.parametrize(
    ("text", "line", "fields"),
    [
        ("a,b,c\n1,2,3\n4,5\n", 3, 2),  # too few
        ("a,b,c\n1,2,3\n4,5,6,7\n", 3, 4),  # too many
        ('a,b,c\n1,"two\nlines",3\n4,5\n', 4, 2),  # physical line, after a two-line value
    ],
)
def test_ragged_rows(write_file: WriteFile, dest: Path, text: str, line: int, fields: int) -> None:
    error = error_of(write_file("r.csv", text), dest)
    assert (error.code, error.line) == ("ragged_rows", line)
    assert str(error).startswith(
        f"Line {line} has {fields} fields but the header has 3 (delimiter: comma)."
    )


def test_empty_file(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("empty.csv", b""), dest)
    assert error.code == "empty_file"
    assert str(error) == "'empty.csv' is empty (0 bytes)."


def test_whitespace_only_file(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("blank.csv", "\n\n  \n"), dest)
    assert error.code == "empty_file"


def test_header_only(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("h.csv", "a,b,c\n"), dest)
    assert error.code == "no_data_rows"
    assert str(error) == "The file has a header line but no data rows."


def test_only_empty_rows_is_no_data(write_file: WriteFile, dest: Path) -> None:
    assert error_of(write_file("h.csv", "a,b\n,\n,\n"), dest).code == "no_data_rows"


def test_duplicate_column_names(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("d.csv", "id,name,age,name,id\n1,a,2,b,3\n"), dest)
    assert (error.code, error.column) == ("duplicate_columns", "id")
    assert "'id' (columns 1, 5); 'name' (columns 2, 4)" in str(error)


def test_empty_column_name(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("e.csv", "id,,age\n1,2,3\n"), dest)
    assert error.code == "empty_column_name"
    assert str(error).startswith("Column 2 has no name")


def test_unnamed_last_column_with_values(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("e.csv", "a,b,\n1,2,\n3,4,5\n"), dest)
    assert (error.code, error.line) == ("empty_column_name", 3)
    assert "Column 3 has no name" in str(error)


def test_unterminated_quote(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("q.csv", 'a,b\n1,2\n3,"open\n4,5\n'), dest)
    assert (error.code, error.line) == ("unterminated_quote", 3)
    assert "starting on line 3 is never closed" in str(error)


def test_runaway_quote_stops_early(
    write_file: WriteFile, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest.text, "_MAX_FIELD_CHARS", 100)
    src = write_file("q.csv", 'a,b\n1,2\n3,"open' + "\n4,5" * 200 + "\n")
    error = error_of(src, dest)
    assert (error.code, error.line) == ("unterminated_quote", 3)
    assert "runs on for more than 100 bytes" in str(error)


def test_long_values_within_the_limit(write_file: WriteFile, dest: Path) -> None:
    note = "word " * 60_000  # 300 000 characters, over the csv module's default limit
    convert_to_parquet(write_file("long.csv", f'id,note\n1,"{note}"\n'), "long.csv", dest)
    assert read(dest).get_column("note").to_list() == [note]


def test_badly_quoted_value(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("q.csv", 'a,b\n1,"x"y\n'), dest)
    assert (error.code, error.line) == ("malformed_csv", 2)
    assert 'must be doubled ("")' in str(error)


def test_failure_leaves_an_existing_destination_alone(write_file: WriteFile, dest: Path) -> None:
    dest.write_bytes(b"previous")
    error_of(write_file("r.csv", "a,b\n1\n"), dest)
    assert dest.read_bytes() == b"previous"
    assert leftovers(dest) == ["data.parquet"]


# --------------------------------------------------------------------------- format detection


def test_unsupported_extension(write_file: WriteFile) -> None:
    with pytest.raises(IngestError) as caught:
        detect_format(write_file("old.xls", b"\xd0\xcf\x11\xe0"), "old.xls")
    assert caught.value.code == "unsupported_format"
    assert "Save the sheet as .xlsx or CSV" in str(caught.value)


def test_excel_workbook_named_csv(write_file: WriteFile, tmp_path: Path) -> None:
    book = tmp_path / "book.xlsx"
    workbook = xlsxwriter.Workbook(book)
    workbook.add_worksheet().write_row(0, 0, ["a", "b"])
    workbook.close()
    with pytest.raises(IngestError) as caught:
        detect_format(book, "data.csv")
    assert caught.value.code == "format_mismatch"
    assert str(caught.value).startswith(
        "'data.csv' is named like CSV text, but its content is an Excel workbook (.xlsx)."
    )


@pytest.mark.parametrize(
    ("name", "content", "found"),
    [
        ("data.parquet", b"a,b\n1,2\n", "plain text"),
        ("data.sav", b"a,b\n1,2\n", "plain text"),
        ("data.dta", b"$FL2" + bytes(100), "an SPSS data file (.sav)"),
        ("data.xlsx", b"PAR1" + bytes(100), "a Parquet file"),
        ("data.csv", b"%PDF-1.7\n" + bytes(100), "a PDF document"),
        ("data.csv", b"\x1f\x8b\x08" + bytes(100), "a gzip-compressed file"),
        ("data.csv", b"\x00\x01\x02\x03" * 50, "binary data of an unknown kind"),
    ],
)
def test_content_that_does_not_match_the_extension(
    write_file: WriteFile, name: str, content: bytes, found: str
) -> None:
    with pytest.raises(IngestError) as caught:
        detect_format(write_file(name, content), name)
    assert caught.value.code == "format_mismatch"
    assert f"but its content is {found}." in str(caught.value)


def test_signatures_recognized(write_file: WriteFile) -> None:
    sas = bytes(12) + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011") + bytes(200)
    assert detect_format(write_file("a.sas7bdat", sas), "a.sas7bdat") == "sas7bdat"
    xpt = b"HEADER RECORD*******LIBRARY HEADER RECORD!!!!!!!" + bytes(100)
    assert detect_format(write_file("a.xpt", xpt), "a.xpt") == "xpt"
    assert detect_format(write_file("a.zsav", b"$FL3" + bytes(50)), "a.zsav") == "zsav"
    assert detect_format(write_file("b.sav", b"$FL3" + bytes(50)), "b.sav") == "sav"
    assert detect_format(write_file("old.dta", bytes([114, 2, 1, 0]) + bytes(50)), "old.dta") == (
        "dta"
    )
    assert detect_format(write_file("x.TXT", "a,b\n"), "x.TXT") == "csv"


def test_corrupt_sas_file(write_file: WriteFile, dest: Path) -> None:
    sas = bytes(12) + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011") + bytes(200)
    error = error_of(write_file("a.sas7bdat", sas), dest)
    assert error.code == "corrupt"
    assert str(error).startswith("The file could not be read as a SAS data set (.sas7bdat)")
    assert leftovers(dest) == []


# --------------------------------------------------------------------------- Excel


def make_workbook(path: Path) -> Path:
    workbook = xlsxwriter.Workbook(path)
    sheet = workbook.add_worksheet("Patients")
    dates = workbook.add_format({"num_format": "yyyy-mm-dd"})
    sheet.write_row(0, 0, ["id", "name", "dob", "postal", "weight", "mixed"])
    rows = [
        (1, "Ann", dt.datetime(1980, 3, 14), "01234", 61.5, "abc"),
        (2, "Bob", dt.datetime(1990, 1, 2), "02345", None, 5),
        (3, None, None, None, 70.0, 6.5),
    ]
    for r, row in enumerate(rows, start=1):
        for c, value in enumerate(row):
            if isinstance(value, dt.datetime):
                sheet.write_datetime(r, c, value, dates)
            elif value is not None:
                sheet.write(r, c, value)
    workbook.add_worksheet("Notes").write_row(0, 0, ["only a header"])
    workbook.close()
    return path


def test_xlsx_round_trip(tmp_path: Path, dest: Path) -> None:
    book = make_workbook(tmp_path / "book.xlsx")
    result = convert_to_parquet(book, "book.xlsx", dest)
    assert (result.format, result.sheet, result.rows) == ("xlsx", "Patients", 3)
    assert result.columns == ("id", "name", "dob", "postal", "weight", "mixed")
    assert result.warnings[0].startswith("The workbook has 2 sheets; only 'Patients' was read.")
    frame = read(dest)
    assert frame.schema["id"] == pl.Int64  # whole numbers stored as floats by Excel
    assert frame.schema["dob"] == pl.Date  # date-times at midnight
    assert frame.schema["weight"] == pl.Float64
    assert frame.get_column("dob").to_list() == [dt.date(1980, 3, 14), dt.date(1990, 1, 2), None]
    assert frame.get_column("postal").to_list() == ["01234", "02345", None]
    assert frame.get_column("mixed").to_list() == ["abc", "5", "6.5"]


def test_xlsx_sheets(tmp_path: Path, dest: Path) -> None:
    book = make_workbook(tmp_path / "book.xlsx")
    error = error_of(book, dest, sheet="Visits")
    assert error.code == "sheet_not_found"
    assert (
        str(error) == "The workbook has no sheet named 'Visits'. Its sheets: 'Patients', 'Notes'."
    )
    error = error_of(book, dest, sheet="Notes")
    assert error.code == "no_data_rows"


def test_xlsx_bad_header(tmp_path: Path, dest: Path) -> None:
    book = tmp_path / "dup.xlsx"
    workbook = xlsxwriter.Workbook(book)
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, ["id", "id", "x"])
    sheet.write_row(1, 0, [1, 2, 3])
    workbook.close()
    error = error_of(book, dest)
    assert (error.code, error.column) == ("duplicate_columns", "id")


def test_corrupt_xlsx(write_file: WriteFile, tmp_path: Path, dest: Path) -> None:
    good = make_workbook(tmp_path / "book.xlsx").read_bytes()
    src = write_file("cut.xlsx", good[: len(good) // 2])
    error = error_of(src, dest)
    assert error.code in ("corrupt", "format_mismatch")


# --------------------------------------------------------------------------- Parquet


def test_parquet_round_trip(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "in.parquet"
    pl.DataFrame(
        {
            "n": [1, 2, None],
            "s": ["x", "", None],
            "c": pl.Series(["u", "v", "u"], dtype=pl.Categorical),
            "d": [dt.date(2020, 1, 1), None, dt.date(2021, 6, 30)],
        }
    ).write_parquet(src)
    result = convert_to_parquet(src, "in.parquet", dest)
    assert (result.format, result.rows, result.columns) == ("parquet", 3, ("n", "s", "c", "d"))
    assert result.warnings == ("Column 'c' (Categorical) is stored as text.",)
    frame = read(dest)
    assert frame.schema["n"] == pl.Int64
    assert frame.schema["c"] == pl.String
    assert frame.get_column("s").to_list() == ["x", None, None]
    assert frame.get_column("d").to_list()[2] == dt.date(2021, 6, 30)


def test_parquet_all_missing_column(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "in.parquet"
    pl.DataFrame({"n": [1, 2], "nothing": [None, None]}).write_parquet(src)
    result = convert_to_parquet(src, "in.parquet", dest)
    assert result.columns == ("n", "nothing")
    assert read(dest).get_column("nothing").null_count() == 2


def test_parquet_truncated(tmp_path: Path, write_file: WriteFile, dest: Path) -> None:
    src = tmp_path / "in.parquet"
    pl.DataFrame({"n": [1, 2, 3]}).write_parquet(src)
    cut = write_file("cut.parquet", src.read_bytes()[:-10])
    error = error_of(cut, dest)
    assert error.code == "corrupt"
    assert "does not end with the PAR1 marker" in str(error)


def test_parquet_damaged_inside(tmp_path: Path, write_file: WriteFile, dest: Path) -> None:
    src = tmp_path / "in.parquet"
    pl.DataFrame({"n": list(range(100))}).write_parquet(src)
    data = bytearray(src.read_bytes())
    data[8:60] = bytes(52)
    error = error_of(write_file("bad.parquet", bytes(data)), dest)
    assert error.code == "corrupt"
    assert leftovers(dest) == []


def test_parquet_nested_column_refused(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "in.parquet"
    pl.DataFrame({"id": [1], "tags": [["a", "b"]]}).write_parquet(src)
    error = error_of(src, dest)
    assert (error.code, error.column) == ("unsupported_column_type", "tags")


# --------------------------------------------------------------------------- SAS, SPSS, Stata


def sample_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1.0, 2.0, 3.0],
            "sex": [1.0, 2.0, None],
            "name": ["Ann", "Bob", ""],
            "dob": [dt.date(1980, 3, 14), dt.date(1990, 1, 2), None],
            "weight": [61.5, 70.25, None],
        }
    )


def check_statistical(dest: Path, *, upper: bool = False) -> pl.DataFrame:
    frame = read(dest)
    names = ["id", "sex", "name", "dob", "weight"]
    frame = frame.rename({n.upper(): n for n in names}) if upper else frame
    assert frame.schema["id"] == pl.Int64
    assert frame.schema["weight"] == pl.Float64
    assert frame.get_column("id").to_list() == [1, 2, 3]
    assert frame.get_column("name").to_list() == ["Ann", "Bob", None]
    assert frame.get_column("dob").to_list() == [dt.date(1980, 3, 14), dt.date(1990, 1, 2), None]
    assert frame.get_column("weight").to_list() == [61.5, 70.25, None]
    return frame


def test_spss_sav_with_value_labels(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "survey.sav"
    pyreadstat.write_sav(
        sample_frame(), src, variable_value_labels={"sex": {1.0: "Male", 2.0: "Female"}}
    )
    result = convert_to_parquet(src, "survey.sav", dest)
    assert (result.format, result.rows) == ("sav", 3)
    assert result.warnings == (
        "Value labels were found; the codes are stored, not the labels: "
        "sex (1 = Male, 2 = Female).",
    )
    assert check_statistical(dest).get_column("sex").to_list() == [1, 2, None]


def test_spss_zsav_and_por(tmp_path: Path, dest: Path) -> None:
    zsav = tmp_path / "survey.zsav"
    pyreadstat.write_sav(sample_frame(), zsav, compress=True)
    assert convert_to_parquet(zsav, "survey.zsav", dest).format == "zsav"
    check_statistical(dest)
    por = tmp_path / "survey.por"
    pyreadstat.write_por(sample_frame(), por)
    result = convert_to_parquet(por, "survey.por", dest)
    assert result.columns == ("ID", "SEX", "NAME", "DOB", "WEIGHT")  # portable files: upper case
    check_statistical(dest, upper=True)


def test_stata_dta(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "survey.dta"
    pyreadstat.write_dta(sample_frame(), src)
    result = convert_to_parquet(src, "survey.dta", dest)
    assert (result.format, result.rows) == ("dta", 3)
    check_statistical(dest)


def test_sas_transport_xpt(tmp_path: Path, dest: Path) -> None:
    src = tmp_path / "survey.xpt"
    pyreadstat.write_xport(sample_frame(), src)
    result = convert_to_parquet(src, "survey.xpt", dest)
    assert (result.format, result.rows) == ("xpt", 3)
    check_statistical(dest)


def test_statistical_file_read_in_chunks(
    tmp_path: Path, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest.statistical, "_CHUNK_ROWS", 2)
    src = tmp_path / "survey.sav"
    pyreadstat.write_sav(sample_frame(), src)
    result = convert_to_parquet(src, "survey.sav", dest)
    assert result.rows == 3
    check_statistical(dest)  # the last chunk's all-missing 'sex' does not break the types


def test_corrupt_spss_file(write_file: WriteFile, dest: Path) -> None:
    error = error_of(write_file("bad.sav", b"$FL2" + bytes(300)), dest)
    assert error.code == "corrupt"
    assert str(error).startswith("The file could not be read as an SPSS data file (.sav)")
