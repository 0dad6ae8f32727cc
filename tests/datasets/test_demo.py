"""The demo register: realistic, valid, deterministic, and classified sensibly."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from apps.classification.detectors import classification_warnings, suggest_roles
from apps.datasets.demo import DEFAULT_SEED, FSA_CITIES, generate_register, write_demo_csv
from apps.datasets.ingest import convert_to_parquet
from apps.datasets.profiling import profile_parquet
from apps.engine.validators import (
    is_canadian_postal_code,
    is_email,
    is_nanp_phone,
    is_ontario_health_number,
    is_sin,
)

COLUMNS = [
    "record_id", "first_name", "last_name", "email", "phone", "health_card_number", "sin",
    "date_of_birth", "age", "sex", "postal_code", "city", "language", "marital_status",
    "education", "income_band", "occupation", "diagnosis", "admission_date", "discharge_date",
    "length_of_stay", "clinical_note",
]  # fmt: skip


@pytest.fixture(scope="module")
def register() -> pl.DataFrame:
    return generate_register(5000)


def test_shape_and_columns(register: pl.DataFrame) -> None:
    assert register.height == 5000
    assert register.columns == COLUMNS
    assert register.schema["date_of_birth"] == pl.Date
    assert register.schema["age"] == pl.Int64
    assert register.get_column("record_id").n_unique() == 5000


def test_deterministic_for_a_seed() -> None:
    assert generate_register(200, seed=DEFAULT_SEED).equals(generate_register(200))
    assert not generate_register(200, seed=1).equals(generate_register(200, seed=2))
    assert generate_register(0).height == 0


def test_identifiers_pass_their_checks(register: pl.DataFrame) -> None:
    def all_valid(column: str, check: Callable[[str], bool]) -> bool:
        values: list[str] = register.get_column(column).drop_nulls().to_list()
        return bool(values) and all(check(v) for v in values)

    assert all_valid("health_card_number", is_ontario_health_number)
    assert all_valid("sin", is_sin)
    assert all_valid("email", is_email)
    assert all_valid("phone", is_nanp_phone)
    assert all_valid("postal_code", is_canadian_postal_code)
    assert register.get_column("health_card_number").str.slice(0, 10).n_unique() == 5000


def test_geography_is_ontario(register: pl.DataFrame) -> None:
    assert set(register.get_column("postal_code").str.slice(0, 1).unique()) <= set("KLMNP")
    cities = dict(FSA_CITIES)
    pairs = register.select(pl.col("postal_code").str.slice(0, 3), "city").unique().rows()
    assert all(cities[fsa] == city for fsa, city in pairs)


def test_missing_values_and_old_ages(register: pl.DataFrame) -> None:
    nulls = register.null_count().row(0, named=True)
    for column in ("email", "phone", "sin", "education", "income_band", "clinical_note"):
        assert nulls[column] > 0, column
    assert nulls["record_id"] == nulls["first_name"] == nulls["date_of_birth"] == 0
    over_89 = register.filter(pl.col("age") > 89).height
    assert 10 <= over_89 <= 250


def test_dates_are_consistent(register: pl.DataFrame) -> None:
    checks = register.select(
        (pl.col("discharge_date") - pl.col("admission_date")).dt.total_days().alias("stay"),
        "length_of_stay",
        "age",
        pl.col("date_of_birth"),
        pl.col("admission_date"),
    )
    assert (checks.get_column("stay") == checks.get_column("length_of_stay")).all()
    assert checks.filter(pl.col("length_of_stay") < 1).is_empty()
    first = checks.row(0, named=True)
    born: dt.date = first["date_of_birth"]
    admitted: dt.date = first["admission_date"]
    age = admitted.year - born.year - ((admitted.month, admitted.day) < (born.month, born.day))
    assert age == first["age"]


def test_clinical_notes_are_sentences(register: pl.DataFrame) -> None:
    notes = register.get_column("clinical_note").drop_nulls()
    assert register.select(pl.col("clinical_note").str.len_chars().mean()).item() > 60
    assert notes.str.contains(r"\d{3}-\d{3}-\d{4}|\(\d{3}\) \d{3}-\d{4}").any()
    assert notes.str.contains("Dr. ").any()


def test_demo_is_classified_sensibly(tmp_path: Path) -> None:
    csv = write_demo_csv(tmp_path / "demo" / "register.csv", n=2000)
    assert csv.exists()
    parquet = tmp_path / "register.parquet"
    result = convert_to_parquet(csv, "register.csv", parquet)
    assert result.rows == 2000
    assert result.columns == tuple(COLUMNS)
    profile = profile_parquet(parquet)
    sample = pl.read_parquet(parquet).head(1000)
    by_column = {s.column: s for s in suggest_roles(profile, sample, today=dt.date(2026, 1, 1))}

    roles = {name: s.role for name, s in by_column.items()}
    assert [c for c in COLUMNS if roles[c] == "direct"] == [
        "record_id", "first_name", "last_name", "email", "phone", "health_card_number", "sin",
        "clinical_note",
    ]  # fmt: skip
    assert [c for c in COLUMNS if roles[c] == "quasi"] == [
        "date_of_birth", "age", "sex", "postal_code", "city", "language", "marital_status",
        "education", "income_band", "occupation", "admission_date", "discharge_date",
        "length_of_stay",
    ]  # fmt: skip
    assert roles["diagnosis"] == "sensitive"
    assert by_column["clinical_note"].kind == "free_text_identifiers"
    assert by_column["clinical_note"].needs_review
    assert [c for c in COLUMNS if by_column[c].needs_review] == ["clinical_note"]
    for column in ("email", "phone", "health_card_number", "sin", "first_name", "age", "sex"):
        assert by_column[column].confidence == "high", column
    assert any("top-code at 90+" in e for e in by_column["age"].evidence)
    assert any("ages over 89" in e for e in by_column["date_of_birth"].evidence)
    # What the generator wrote into the sampled notes, counted independently of the detectors:
    # a doctor's name or the patient's own name, a relative's phone, the age in every note.
    notes = sample.get_column("clinical_note").drop_nulls().to_list()
    named = sum(1 for n in notes if "Dr. " in n or " asked for a French" in n)
    phoned = sum(1 for n in notes if "can be reached at" in n)
    evidence = by_column["clinical_note"].evidence

    def pct(k: int) -> str:
        return f"{round(100 * k / len(notes))} %"

    assert f"names found in {pct(named)} of {len(notes)} sampled texts" in " ".join(evidence)
    assert f"phone numbers found in {pct(phoned)} of {len(notes)} sampled texts" in " ".join(
        evidence
    )
    assert f"exact ages found in 100 % of {len(notes)} sampled texts" in " ".join(evidence)

    warnings = classification_warnings(
        roles, release_model="public", needs_review={"clinical_note"}
    )
    assert any("13 quasi-identifiers" in w for w in warnings)
    # a direct identifier is removed or scrubbed in Step 7, not read by hand before release
    assert not any(w.startswith("'clinical_note' looks like free text") for w in warnings)
