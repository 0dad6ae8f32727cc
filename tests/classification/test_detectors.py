"""Step 2 suggestions: names and values, positives and negatives, and the warnings."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from apps.classification.detectors import (
    PUBLIC_QUASI_IDENTIFIER_LIMIT,
    Suggestion,
    classification_warnings,
    name_tokens,
    reclassify_note,
    suggest_roles,
)
from apps.datasets.profiling import profile_parquet
from apps.engine.validators import luhn_check_digit

TODAY = dt.date(2026, 1, 15)


def suggest(frame: pl.DataFrame, tmp_path: Path, *, sample: bool = True) -> dict[str, Suggestion]:
    path = tmp_path / "frame.parquet"
    frame.write_parquet(path)
    profile = profile_parquet(path)
    rows = frame if sample else pl.DataFrame()
    return {s.column: s for s in suggest_roles(profile, rows, today=TODAY)}


def valid_sins(n: int) -> list[str]:
    out = []
    for i in range(n):
        body = f"{1 + i % 7}{(12345 + i * 7919) % 10_000_000:07d}"
        digits = body + luhn_check_digit(body)
        out.append(f"{digits[:3]} {digits[3:6]} {digits[6:]}")
    return out


def valid_health_numbers(n: int) -> list[str]:
    out = []
    for i in range(n):
        body = f"{1 + i % 9}{(34567 + i * 104729) % 100_000_000:08d}"
        out.append(body + luhn_check_digit(body))
    return out


def break_check_digit(value: str) -> str:
    last = value[-1]
    return value[:-1] + str((int(last) + 1) % 10)


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "tokens"),
    [
        ("healthCardNumber", ("health", "card", "number")),
        ("ZIPCode", ("zip", "code")),
        ("Date de naissance", ("date", "de", "naissance")),
        ("No_Assurance_Sociale", ("no", "assurance", "sociale")),
        ("Prénom", ("prenom",)),
        ("phone2", ("phone", "2")),
        ("PatientDOB", ("patient", "dob")),
    ],
)
def test_name_tokens(name: str, tokens: tuple[str, ...]) -> None:
    assert name_tokens(name) == tokens


@pytest.mark.parametrize(
    ("name", "role", "kind"),
    [
        ("email_address", "direct", "email"),  # e-mail, not a street address
        ("courriel", "direct", "email"),
        ("homePhone", "direct", "phone"),
        ("no_tel", "direct", "phone"),
        ("Fax", "direct", "phone"),
        ("healthCardNumber", "direct", "health_number"),
        ("OHIP", "direct", "health_number"),
        ("NAS", "direct", "sin"),
        ("SSN", "direct", "ssn"),
        ("MRN", "direct", "record_number"),
        ("street_address", "direct", "address"),
        ("adresse", "direct", "address"),
        ("licence_plate", "direct", "plate"),
        ("VIN", "direct", "vin"),
        ("ip_address", "direct", "ip"),
        ("website", "direct", "url"),
        ("device_serial", "direct", "device"),
        ("Prénom", "direct", "name"),
        ("surname", "direct", "name"),
        ("Nom de famille", "direct", "name"),
        ("DOB", "quasi", "date_of_birth"),
        ("Date de naissance", "quasi", "date_of_birth"),
        ("pays_de_naissance", "quasi", "country_of_birth"),
        ("admission_date", "quasi", "event_date"),
        ("Age", "quasi", "age"),
        ("sexe", "quasi", "sex"),
        ("gender_identity", "quasi", "sex"),
        ("ZIPCode", "quasi", "postal_code"),
        ("code_postal", "quasi", "postal_code"),
        ("city_name", "quasi", "geography"),  # a place, not a person's name
        ("province", "quasi", "geography"),
        ("ethnicity", "quasi", "ethnicity"),
        ("visible_minority", "quasi", "ethnicity"),
        ("langue_maternelle", "quasi", "language"),
        ("marital_status", "quasi", "marital_status"),
        ("etat_civil", "quasi", "marital_status"),
        ("education_level", "quasi", "education"),
        ("household_income", "quasi", "income"),  # income rule comes first
        ("household_size", "quasi", "household"),
        ("annual_income", "quasi", "income"),
        ("occupation", "quasi", "occupation"),
        ("religion", "quasi", "religion"),
        ("length_of_stay", "quasi", "length_of_stay"),
        ("diagnosis_code", "sensitive", "health_information"),
        ("drug_name", "sensitive", "health_information"),  # a medication, not a person
        ("HIV_status", "sensitive", "health_information"),
        ("test_result", "sensitive", "health_information"),
    ],
)
def test_name_rules_without_values(name: str, role: str, kind: str, tmp_path: Path) -> None:
    frame = pl.DataFrame({name: ["a", "b", "a", "c"]})
    result = suggest(frame, tmp_path, sample=False)[name]
    assert (result.role, result.kind) == (role, kind)
    assert result.confidence == "medium"
    assert any(name in e for e in result.evidence)


def test_unrelated_name_is_other_with_low_confidence(tmp_path: Path) -> None:
    frame = pl.DataFrame({"score": [3, 4, 5, 3, 4, 2, 1, 3, 4, 4, 5, 2]})
    result = suggest(frame, tmp_path)["score"]
    assert (result.role, result.confidence, result.needs_review) == ("other", "low", False)
    assert "No identifying pattern" in result.reason


# --------------------------------------------------------------------------- values: direct


def test_emails_found_by_value_under_any_name(tmp_path: Path) -> None:
    emails = [f"person{i}@example.ca" for i in range(19)] + ["not an e-mail"]
    result = suggest(pl.DataFrame({"contact_info": emails}), tmp_path)["contact_info"]
    assert (result.role, result.kind, result.confidence) == ("direct", "email", "high")
    assert result.evidence[0] == "95 % of 20 sampled values are valid e-mail addresses"
    assert "direct identifier" in result.reason


def test_sins_pass_luhn_and_broken_ones_do_not(tmp_path: Path) -> None:
    sins = valid_sins(30)
    frame = pl.DataFrame({"x1": sins, "x2": [break_check_digit(s) for s in sins]})
    result = suggest(frame, tmp_path)
    assert (result["x1"].role, result["x1"].kind, result["x1"].confidence) == (
        "direct",
        "sin",
        "high",
    )
    assert "100 % of 30 sampled values are valid SINs" in result["x1"].evidence[0]
    assert result["x2"].kind != "sin"


def test_sin_column_name_with_wrong_values_gets_low_confidence(tmp_path: Path) -> None:
    values = [break_check_digit(s) for s in valid_sins(20)]
    result = suggest(pl.DataFrame({"sin": values}), tmp_path)["sin"]
    assert (result.role, result.kind, result.confidence) == ("direct", "sin", "low")
    assert any(e.startswith("but only 0 %") for e in result.evidence)


def test_ten_digits_decided_by_the_health_card_check_digit(tmp_path: Path) -> None:
    cards = valid_health_numbers(40)
    # Valid NANP numbers that fail Luhn: a phone column, not health numbers.
    phones = [
        p for p in (f"416{200 + i:03d}{1000 + 37 * i:04d}" for i in range(200)) if p[3] != "1"
    ]
    phones = [p for p in phones if not is_luhn(p)][:40]
    result = suggest(pl.DataFrame({"c1": cards, "c2": phones}), tmp_path)
    assert (result["c1"].kind, result["c1"].confidence) == ("health_number", "high")
    assert (result["c2"].kind, result["c2"].role) == ("phone", "direct")


def is_luhn(digits: str) -> bool:
    from apps.engine.validators import luhn_valid

    return luhn_valid(digits)


def test_formatted_ssn_ip_url_and_address_values(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "a": [f"{100 + i:03d}-{10 + i:02d}-{1000 + i:04d}" for i in range(20)],
            "b": [f"10.0.{i}.{200 - i}" for i in range(20)],
            "c": [f"https://social.example.com/u/{i}" for i in range(20)],
            "d": [f"{10 + i} Maple Avenue" for i in range(20)],
        }
    )
    result = suggest(frame, tmp_path)
    assert [result[c].kind for c in "abcd"] == ["ssn", "ip", "url", "address"]
    assert all(result[c].role == "direct" and result[c].confidence == "high" for c in "abcd")


def test_names_found_by_value_and_by_french_name(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "col_a": ["Tremblay", "Smith", "Nguyen", "Patel", "Côté", "Wong", "Martin", "Roy"] * 2,
            "Prénom": ["Hélène", "Marc", "Sophie", "Wei", "Priya", "Luc", "Anna", "John"] * 2,
        }
    )
    result = suggest(frame, tmp_path)
    assert (result["col_a"].role, result["col_a"].kind) == ("direct", "name")
    assert (result["Prénom"].role, result["Prénom"].confidence) == ("direct", "high")


def test_cities_are_not_names(tmp_path: Path) -> None:
    cities = ["Toronto", "Ottawa", "Kingston", "Sudbury", "Windsor", "Barrie", "Guelph"] * 3
    result = suggest(pl.DataFrame({"col_b": cities}), tmp_path)["col_b"]
    assert result.kind != "name"
    assert result.role == "other"


def test_unique_codes_without_a_name_hint_are_direct(tmp_path: Path) -> None:
    tokens = [f"X{i * 7919 % 100000:05d}Q" for i in range(50)]
    result = suggest(pl.DataFrame({"token": tokens}), tmp_path)["token"]
    assert (result.role, result.kind, result.confidence) == ("direct", "unique_values", "medium")
    assert "near-unique" in result.evidence[0]


def test_identifier_name_with_repeating_values_is_not_direct(tmp_path: Path) -> None:
    result = suggest(pl.DataFrame({"batch_no": ["B1", "B2", "B1", "B2"] * 5}), tmp_path)
    assert (result["batch_no"].role, result["batch_no"].kind) == ("other", "shared_code")


def test_patient_id_unique_is_a_record_number(tmp_path: Path) -> None:
    frame = pl.DataFrame({"patient_id": [f"P{i:04d}" for i in range(30)]})
    result = suggest(frame, tmp_path)["patient_id"]
    assert (result.role, result.kind, result.confidence) == ("direct", "record_number", "high")


# --------------------------------------------------------------------------- values: quasi


def test_date_of_birth_with_people_over_89(tmp_path: Path) -> None:
    dobs = ["1931-05-02", "1950-01-01", "1975-07-30", "1988-12-12", "2001-03-03"] * 3
    result = suggest(pl.DataFrame({"DOB": dobs}), tmp_path)["DOB"]
    assert (result.role, result.kind, result.confidence) == ("quasi", "date_of_birth", "high")
    assert any("exact dates" in e for e in result.evidence)
    # The cut-off year, never a person's birth date (reviewers read the evidence).
    born_before = f"people born before {TODAY.year - 89}"
    assert any("ages over 89" in e and born_before in e for e in result.evidence)
    assert not any("1931" in e or "05-02" in e for e in result.evidence)
    assert "Portage" in result.reason


def test_date_of_birth_without_old_people(tmp_path: Path) -> None:
    dobs = ["1950-01-01", "1975-07-30", "1988-12-12"] * 4
    result = suggest(pl.DataFrame({"date_naissance": dobs}), tmp_path)["date_naissance"]
    assert result.kind == "date_of_birth"
    assert not any("ages over 89" in e for e in result.evidence)


def test_age_over_89_recommends_top_coding(tmp_path: Path) -> None:
    ages = [34, 45, 91, 23, 67, 95, 12, 88, 45, 50]
    result = suggest(pl.DataFrame({"age": ages}), tmp_path)["age"]
    assert (result.role, result.confidence) == ("quasi", "high")
    assert "ages over 89 present; 2 of 10 sampled values: top-code at 90+ recommended" in (
        result.evidence
    )
    assert not any("95" in e or "highest" in e for e in result.evidence)  # the oldest's age


def test_age_under_90_has_no_top_code_note(tmp_path: Path) -> None:
    result = suggest(pl.DataFrame({"age": [34, 45, 23, 67, 12, 88]}), tmp_path)["age"]
    assert not any("90+" in e for e in result.evidence)


def test_sex_codes_by_value_and_name(tmp_path: Path) -> None:
    frame = pl.DataFrame({"sexe": ["H", "F", "F", "H", "X"] * 4, "v7": ["M", "F"] * 10})
    result = suggest(frame, tmp_path)
    assert (result["sexe"].role, result["sexe"].confidence) == ("quasi", "high")
    assert (result["v7"].role, result["v7"].kind) == ("quasi", "sex")


def test_postal_codes_and_fsa_by_value(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "c1": ["K1A 0B1", "M5V 2T6", "N2L 3G1", "P3A 1A1", "L8P 4R5"] * 4,
            "c2": ["K1A", "M5V", "N2L", "P3A"] * 5,
            "code_postal": ["K1A 0B1", "M5V 2T6"] * 10,
        }
    )
    result = suggest(frame, tmp_path)
    assert (result["c1"].role, result["c1"].kind, result["c1"].confidence) == (
        "quasi",
        "postal_code",
        "high",
    )
    assert (result["c2"].role, result["c2"].kind) == ("quasi", "postal_code")
    assert result["code_postal"].confidence == "high"
    assert "first three characters" in result["c1"].reason


def test_unnamed_dates_are_event_dates(tmp_path: Path) -> None:
    frame = pl.DataFrame({"d1": ["14/03/2021", "01/02/2022", "31/12/2023"] * 4})
    result = suggest(frame, tmp_path)["d1"]
    assert (result.role, result.kind) == ("quasi", "event_date")
    assert "values are dates" in result.evidence


def test_provinces_by_value(tmp_path: Path) -> None:
    result = suggest(pl.DataFrame({"v": ["ON", "QC", "BC", "Ontario"] * 3}), tmp_path)["v"]
    assert (result.role, result.kind) == ("quasi", "geography")


# --------------------------------------------------------------------------- sensitive, free text


def test_icd10_values_are_sensitive(tmp_path: Path) -> None:
    values = ["E11.9 Type 2 diabetes", "I10 Essential hypertension", "J45.9 Asthma"] * 4
    result = suggest(pl.DataFrame({"dx_primary": values, "code": values}), tmp_path)
    assert (result["dx_primary"].role, result["dx_primary"].confidence) == ("sensitive", "high")
    assert (result["code"].role, result["code"].kind) == ("sensitive", "health_information")


def test_free_text_with_identifiers_is_a_direct_identifier(tmp_path: Path) -> None:
    notes = [
        f"Patient seen on the ward today, complaining of pain for {i} days. "
        + ("Daughter can be reached at 416-555-0199." if i % 4 == 0 else "No concerns raised.")
        + (" Seen by Dr. Tremblay." if i % 5 == 0 else "")
        for i in range(20)
    ]
    result = suggest(pl.DataFrame({"comments": notes}), tmp_path)["comments"]
    assert (result.role, result.needs_review, result.kind) == (
        "direct",
        True,
        "free_text_identifiers",
    )
    assert "[NAME]" in result.reason and "person's reading" in result.reason
    # i = 0, 4, 8, 12, 16 carry the phone; i = 0, 5, 10, 15 the doctor's name
    assert "phone numbers found in 25 % of 20 sampled texts (5 in all)" in result.evidence
    assert "names found in 20 % of 20 sampled texts (4 in all)" in result.evidence
    examples = [e for e in result.evidence if e.startswith("example")]
    assert examples[0] == (
        "example, detected spans masked: “Patient seen on the ward today, complaining of pain "
        "for 0 days. Daughter can be reached at [PHONE]. Seen by Dr. [NAME].”"
    )
    assert not any("416-555-0199" in e or "Tremblay" in e for e in result.evidence)


def test_free_text_without_detected_identifiers_still_needs_reading(tmp_path: Path) -> None:
    notes = [f"Complained of pain for {i} days; no concerns raised on the ward." for i in range(20)]
    result = suggest(pl.DataFrame({"comments": notes}), tmp_path)["comments"]
    assert (result.role, result.needs_review, result.kind) == ("other", True, "free_text")
    assert "A person must read it" in result.reason


def test_short_text_with_names_in_most_values_is_a_direct_identifier(tmp_path: Path) -> None:
    # Short notes that vary, half of them naming someone.
    names = ["Mary", "John", "Sophie", "Wei", "Priya", "Luc", "Anna", "Marc", "Ahmed", "Omar"]
    values = [f"{name} called back" for name in names]
    values += ["no answer"] * 10
    result = suggest(pl.DataFrame({"outcome": values}), tmp_path)["outcome"]
    assert (result.role, result.kind) == ("direct", "free_text_identifiers")
    assert "names found in 50 % of 20 sampled texts (10 in all)" in result.evidence


def test_a_repeated_short_list_is_not_scanned_as_text(tmp_path: Path) -> None:
    """Four messages repeated over the rows are a category list, not notes about people,
    even though two of them hold a given name (issue 22)."""
    values = ["called back", "Mary called", "left message for John", "no answer"] * 5
    result = suggest(pl.DataFrame({"outcome": values}), tmp_path)["outcome"]
    assert (result.role, result.confidence, result.needs_review) == ("other", "low", False)


def test_short_repeating_text_is_not_free_text(tmp_path: Path) -> None:
    result = suggest(pl.DataFrame({"status": ["active", "closed"] * 10}), tmp_path)["status"]
    assert not result.needs_review


def test_empty_column(tmp_path: Path) -> None:
    frame = pl.DataFrame({"blank": pl.Series([None, None, None], dtype=pl.String)})
    result = suggest(frame, tmp_path)["blank"]
    assert (result.role, result.kind) == ("other", "empty")


def test_suggestions_follow_column_order_and_tolerate_missing_sample_columns(
    tmp_path: Path,
) -> None:
    frame = pl.DataFrame({"b": [1, 2], "email": ["a@b.ca", "c@d.ca"], "a": ["x", "y"]})
    path = tmp_path / "f.parquet"
    frame.write_parquet(path)
    result = suggest_roles(profile_parquet(path), frame.select("a"), today=TODAY)
    assert [s.column for s in result] == ["b", "email", "a"]
    assert result[1].kind == "email"  # from the name alone


# --------------------------------------------------------------------------- warnings


def _roles(quasi: int, direct: int = 1) -> dict[str, str]:
    roles = {f"q{i}": "quasi" for i in range(quasi)}
    roles.update({f"d{i}": "direct" for i in range(direct)})
    return roles


def test_more_than_eight_quasi_identifiers_in_a_public_release() -> None:
    warnings = classification_warnings(_roles(9), release_model="public")
    assert len(warnings) == 1
    assert "9 quasi-identifiers" in warnings[0]
    assert "more than 8" in warnings[0]


@pytest.mark.parametrize(("quasi", "model"), [(8, "public"), (9, "non_public"), (12, None)])
def test_no_quasi_identifier_count_warning(quasi: int, model: str | None) -> None:
    assert PUBLIC_QUASI_IDENTIFIER_LIMIT == 8
    assert classification_warnings(_roles(quasi), release_model=model) == []


def test_direct_identifier_kept_for_analysis_must_become_quasi() -> None:
    roles = {"postal_code": "direct", "age": "quasi"}
    warnings = classification_warnings(
        roles, release_model="non_public", keep_for_analysis={"postal_code", "age"}
    )
    assert warnings == [reclassify_note("postal_code")]
    assert "quasi-identifier instead" in warnings[0]


def test_free_text_left_in_the_release_is_flagged() -> None:
    roles = {"note": "other", "age": "quasi", "email": "direct"}
    warnings = classification_warnings(
        roles, release_model="public", needs_review={"note", "email"}
    )
    assert len(warnings) == 1
    assert warnings[0].startswith("'note' looks like free text")


def test_no_quasi_identifier_at_all() -> None:
    warnings = classification_warnings({"email": "direct", "x": "other"}, release_model=None)
    assert len(warnings) == 1
    assert "No column is classified as a quasi-identifier" in warnings[0]
    assert classification_warnings({}, release_model="public") == []


def test_bad_roles_and_release_models_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown role"):
        classification_warnings({"a": "identifier"}, release_model=None)
    assert classification_warnings({"a": "", "b": "quasi"}, release_model=None) == []
    assert classification_warnings({"a": ""}, release_model=None) == []  # nothing decided yet
    with pytest.raises(ValueError, match="unknown release model"):
        classification_warnings({"a": "quasi"}, release_model="open")
