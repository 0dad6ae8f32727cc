"""Column profiles on small frames whose counts were worked out by hand."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from apps.datasets.profiling import DatasetProfile, profile_parquet

ProfileOf = Callable[[pl.DataFrame], DatasetProfile]


def test_integer_text_column(profile_of: ProfileOf) -> None:
    profile = profile_of(pl.DataFrame({"n": ["1", "2", "2", None, "10"]}))
    column = profile.column("n")
    assert profile.rows == 5
    assert column.position == 0
    assert column.inferred_type == "integer"
    assert (column.missing, column.distinct) == (1, 3)
    assert column.unique_share == pytest.approx(0.75)  # 3 distinct / 4 present
    assert (column.min, column.max) == ("1", "10")  # numeric order, not text order
    assert column.top_values[0] == ("2", 2)
    assert column.top_values == (("2", 2), ("1", 1), ("10", 1))
    # Range 1..10 → ten one-wide bins.
    assert column.histogram[0] == ("1", 1)
    assert column.histogram[1] == ("2", 2)
    assert column.histogram[9] == ("10", 1)
    assert sum(count for _, count in column.histogram) == 4
    assert column.mean_length == pytest.approx(1.25)  # (1 + 1 + 1 + 2) / 4
    assert column.sample_values == ("1", "2", "10")


def test_integer_histogram_with_wide_range(profile_of: ProfileOf) -> None:
    ages = [str(a) for a in (0, 5, 19, 20, 45, 99)]
    column = profile_of(pl.DataFrame({"age": ages})).column("age")
    # 0..99 is 100 values → width 10: 0–9, 10–19, ..., 90–99.
    assert [label for label, _ in column.histogram][:3] == ["0–9", "10–19", "20–29"]
    assert dict(column.histogram) == {
        "0–9": 2, "10–19": 1, "20–29": 1, "30–39": 0, "40–49": 1, "50–59": 0, "60–69": 0,
        "70–79": 0, "80–89": 0, "90–99": 1,
    }  # fmt: skip


def test_decimal_column(profile_of: ProfileOf) -> None:
    column = profile_of(pl.DataFrame({"w": ["1.5", "2.25", "3", "-0.5", "1e2"]})).column("w")
    assert column.inferred_type == "decimal"
    assert (column.min, column.max) == ("-0.5", "100")
    assert len(column.histogram) == 10
    assert column.histogram[0] == ("-0.5–9.55", 4)
    assert column.histogram[-1] == ("89.95–100", 1)  # width (100 + 0.5) / 10 = 10.05


def test_dates_in_day_first_layout(profile_of: ProfileOf) -> None:
    values = ["14/03/1980", "01/02/1975", None, "31/12/1999", "05/05/2001"]
    column = profile_of(pl.DataFrame({"dob": values})).column("dob")
    assert column.inferred_type == "date"
    assert (column.min, column.max) == ("1975-02-01", "2001-05-05")
    assert column.missing == 1
    assert sum(count for _, count in column.histogram) == 4
    assert column.histogram[0][0].startswith("1975-02-01–")


def test_iso_dates_and_datetimes(profile_of: ProfileOf) -> None:
    frame = pl.DataFrame(
        {
            "d": ["1980-03-14", "1990-01-02", "2000-12-31"],
            "t": ["2024-01-01 10:00:00", "2024-01-02 11:30:00", "2024-01-02 12:00:00"],
        }
    )
    profile = profile_of(frame)
    assert profile.column("d").inferred_type == "date"
    assert profile.column("t").inferred_type == "datetime"
    assert profile.column("t").max == "2024-01-02 12:00:00"
    assert profile.column("t").histogram == (("2024-01-01", 1), ("2024-01-02", 2))


def test_boolean_and_categorical(profile_of: ProfileOf) -> None:
    frame = pl.DataFrame(
        {
            "flag": ["yes", "no", "Yes", "no", "no", None],
            "province": ["ON", "QC", "ON", "ON", "BC", "ON"],
        }
    )
    profile = profile_of(frame)
    flag = profile.column("flag")
    assert flag.inferred_type == "categorical"  # three spellings: yes, Yes, no
    province = profile.column("province")
    assert province.inferred_type == "categorical"
    assert province.top_values == (("ON", 4), ("BC", 1), ("QC", 1))  # ties in value order
    assert province.histogram == province.top_values
    assert (province.min, province.max) == ("BC", "QC")
    two = profile_of(pl.DataFrame({"flag": ["yes", "no", "no", None]})).column("flag")
    assert two.inferred_type == "boolean"
    assert two.top_values == (("no", 2), ("yes", 1))


def test_leading_zeros_are_codes_not_numbers(profile_of: ProfileOf) -> None:
    column = profile_of(pl.DataFrame({"zip": ["01234", "02345", "01234", "00501"]})).column("zip")
    assert column.inferred_type == "categorical"
    assert (column.min, column.max) == ("00501", "02345")
    assert column.top_values[0] == ("01234", 2)


def test_identifier_like_text_and_numbers(profile_of: ProfileOf) -> None:
    frame = pl.DataFrame(
        {
            "code": [f"A{i:03d}" for i in range(12)],
            "row": list(range(1, 13)),  # consecutive: numbers given to records
            "hcn": [str(1234567890 + 7 * i) for i in range(12)],  # fixed 10 digits
            "income": [21000, 35500, 41200, 18000, 99000, 56000, 47000, 38000, 61000, 72000,
                       15000, 150000],  # unique, but amounts rather than assigned numbers
        }
    )  # fmt: skip
    profile = profile_of(frame)
    assert profile.column("code").inferred_type == "identifier_like"
    assert profile.column("code").top_values == ()  # not copied into the profile
    assert profile.column("code").min is None
    assert profile.column("row").inferred_type == "identifier_like"
    assert profile.column("hcn").inferred_type == "identifier_like"
    assert profile.column("income").inferred_type == "integer"


def test_too_few_values_are_not_identifier_like(profile_of: ProfileOf) -> None:
    column = profile_of(pl.DataFrame({"code": ["A1", "B2", "C3"]})).column("code")
    assert column.inferred_type == "categorical"


def test_free_text(profile_of: ProfileOf) -> None:
    notes = [
        f"Patient reports chest pain radiating to the left arm since day {i}." for i in range(8)
    ]
    column = profile_of(pl.DataFrame({"note": notes})).column("note")
    assert column.inferred_type == "free_text"
    assert column.top_values == ()
    assert column.mean_length is not None and column.mean_length > 60
    assert len(column.sample_values) == 5


def test_long_repeated_labels_are_categorical(profile_of: ProfileOf) -> None:
    labels = ["E11.9 Type 2 diabetes mellitus without complications"] * 30 + [
        "I10 Essential (primary) hypertension"
    ] * 20
    column = profile_of(pl.DataFrame({"dx": labels})).column("dx")
    assert column.inferred_type == "categorical"


def test_empty_column(profile_of: ProfileOf) -> None:
    frame = pl.DataFrame({"blank": pl.Series([None, None], dtype=pl.String), "x": ["a", "b"]})
    column = profile_of(frame).column("blank")
    assert column.inferred_type == "empty"
    assert (column.missing, column.distinct, column.unique_share) == (2, 0, 0.0)
    assert (column.min, column.max, column.top_values, column.sample_values) == (
        None,
        None,
        (),
        (),
    )


def test_typed_columns(profile_of: ProfileOf) -> None:
    frame = pl.DataFrame(
        {
            "whole": [1.0, 2.0, 2.0, None],
            "real": [1.5, 2.0, 2.5, 3.0],
            "born": [dt.date(1980, 1, 1), dt.date(1990, 6, 15), None, dt.date(1985, 3, 3)],
            "ok": [True, False, True, None],
        }
    )
    profile = profile_of(frame)
    assert profile.column("whole").inferred_type == "integer"
    assert (profile.column("whole").min, profile.column("whole").max) == ("1", "2")
    assert profile.column("real").inferred_type == "decimal"
    assert profile.column("born").inferred_type == "date"
    assert profile.column("born").min == "1980-01-01"
    assert profile.column("ok").inferred_type == "boolean"
    assert profile.column("ok").top_values == (("True", 2), ("False", 1))


def test_progress_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pl.DataFrame({"a": ["1", "2"], "b": ["x", None]}).write_parquet(path)
    calls: list[tuple[int, str]] = []
    profile = profile_parquet(path, progress=lambda pct, msg: calls.append((pct, msg)))
    percents = [pct for pct, _ in calls]
    assert percents == sorted(percents)
    assert percents[0] == 0 and percents[-1] == 100
    data = json.loads(json.dumps(profile.to_dict()))
    assert DatasetProfile.from_dict(data) == profile
    assert [c["name"] for c in data["columns"]] == ["a", "b"]


def test_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pl.DataFrame({"a": pl.Series([], dtype=pl.String)}).write_parquet(path)
    profile = profile_parquet(path)
    assert profile.rows == 0
    assert profile.column("a").inferred_type == "empty"
