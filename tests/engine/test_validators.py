"""Checksum and shape checks, each with values that pass and values that must not."""

from __future__ import annotations

import pytest

from apps.engine.validators import (
    digits_only,
    is_canadian_postal_code,
    is_email,
    is_fsa,
    is_icd10_code,
    is_ip_address,
    is_nanp_phone,
    is_ontario_health_number,
    is_plain_digits,
    is_sin,
    is_ssn,
    is_street_address,
    is_url,
    is_us_zip,
    luhn_check_digit,
    luhn_valid,
    strip_accents,
)


def test_luhn_by_hand() -> None:
    # 0 4 6 4 5 4 2 8 6, doubling every second digit from the right:
    # 6 + (8→16→7) + 2 + (4→8) + 5 + (4→8) + 6 + (4→8) + 0 = 50 → valid.
    assert luhn_valid("046454286")
    assert not luhn_valid("046454287")
    assert not luhn_valid("")
    assert not luhn_valid("04645428a")
    assert luhn_check_digit("04645428") == "6"
    assert luhn_check_digit("987654321") == "7"


@pytest.mark.parametrize("value", ["046 454 286", "046-454-286", "046454286", " 046 454 286 "])
def test_sin_valid(value: str) -> None:
    assert is_sin(value)


@pytest.mark.parametrize(
    "value",
    [
        "046 454 287",  # check digit wrong
        "046 454 28",  # 8 digits
        "046 454 2860",  # 10 digits
        "046/454/286",  # not a SIN layout
        "abc def ghi",
        "",
    ],
)
def test_sin_invalid(value: str) -> None:
    assert not is_sin(value)


@pytest.mark.parametrize("value", ["123-45-6789", "123 45 6789", "123456789", "078-05-1120"])
def test_ssn_valid(value: str) -> None:
    assert is_ssn(value)


@pytest.mark.parametrize(
    "value",
    [
        "000-12-3456",  # area 000 never issued
        "666-12-3456",  # area 666 never issued
        "900-12-3456",  # areas 900-999 never issued
        "123-00-4567",  # group 00
        "123-45-0000",  # serial 0000
        "123-456-789",  # SIN layout, not SSN
        "123-45 6789",  # mixed separators
    ],
)
def test_ssn_invalid(value: str) -> None:
    assert not is_ssn(value)


@pytest.mark.parametrize(
    "value", ["9876543217", "9876-543-217", "9876 543 217", "9876543217AB", "9876-543-217-AB",
              "9876543217 k"],
)  # fmt: skip
def test_ontario_health_number_valid(value: str) -> None:
    # 9876543217: doubled digits 9,7,5,3,1 → 9+5+1+6+2 = 23; others 8+6+4+2 = 20; 43 + 7 = 50.
    assert is_ontario_health_number(value)


@pytest.mark.parametrize(
    "value", ["9876543218", "987654321", "98765432171", "9876543217ABC", "9876-5432-17"]
)
def test_ontario_health_number_invalid(value: str) -> None:
    assert not is_ontario_health_number(value)


@pytest.mark.parametrize(
    "value",
    ["jane.doe@example.ca", "o'brien+test@mail.rogers.com", "J_SMITH@Example.COM", "a@b.io"],
)
def test_email_valid(value: str) -> None:
    assert is_email(value)


@pytest.mark.parametrize(
    "value",
    ["jane.doe@", "@example.com", "jane doe@example.com", "jane@example", "plain text",
     "jane..doe@example.com", "jane@exa_mple.com"],
)  # fmt: skip
def test_email_invalid(value: str) -> None:
    assert not is_email(value)


@pytest.mark.parametrize(
    "value",
    ["(416) 555-0199", "416-555-0199", "416.555.0199", "+1 613 555 0142", "1-905-555-0123",
     "6135550142", "519-555-0100 ext. 45", "(705) 555-0111 poste 12", "+14165550199"],
)  # fmt: skip
def test_phone_valid(value: str) -> None:
    assert is_nanp_phone(value)


@pytest.mark.parametrize(
    "value",
    [
        "123-456-7890",  # area code cannot start with 1
        "416-155-0199",  # exchange cannot start with 1
        "911-555-0199",  # N11 is a service code, not an area code
        "416-411-0199",  # N11 exchange
        "497-555-0100",  # middle digit 9 is reserved
        "416-555-019",
        "41655501999",
        "+44 20 7946 0958",
    ],
)
def test_phone_invalid(value: str) -> None:
    assert not is_nanp_phone(value)


def test_plain_digits() -> None:
    assert is_plain_digits(" 0123456789 ", 10)
    assert not is_plain_digits("012-345-6789", 10)
    assert not is_plain_digits("012345678", 10)
    assert digits_only("(416) 555-0199") == "4165550199"


@pytest.mark.parametrize("value", ["192.168.0.1", "10.0.0.255", "2001:db8::1", "::1"])
def test_ip_valid(value: str) -> None:
    assert is_ip_address(value)


@pytest.mark.parametrize("value", ["256.1.1.1", "1.2.3", "192.168.01.1", "12:30", "1.5", "abc"])
def test_ip_invalid(value: str) -> None:
    assert not is_ip_address(value)


@pytest.mark.parametrize(
    "value",
    ["https://www.example.com/profile/123", "http://example.org", "www.example.ca",
     "ftp://files.example.com/a.txt", "HTTPS://EXAMPLE.COM/?q=1"],
)  # fmt: skip
def test_url_valid(value: str) -> None:
    assert is_url(value)


@pytest.mark.parametrize("value", ["example.com", "not a url", "ftp:/broken", "http://localhost"])
def test_url_invalid(value: str) -> None:
    assert not is_url(value)


@pytest.mark.parametrize("value", ["K1A 0B1", "m5v2t6", "K1A-0B1", "H2X 1Y4"])
def test_postal_code_valid(value: str) -> None:
    assert is_canadian_postal_code(value)


@pytest.mark.parametrize(
    "value",
    [
        "D1A 0B1",  # D is never used
        "W1A 0B1",  # W cannot start a postal code
        "K1O 0B1",  # O is never used
        "K1A 0B",
        "K1A",
        "12345",
    ],
)
def test_postal_code_invalid(value: str) -> None:
    assert not is_canadian_postal_code(value)


def test_fsa_and_zip() -> None:
    assert is_fsa("K1A")
    assert is_fsa(" m5v ")
    assert not is_fsa("K1AA")
    assert not is_fsa("Z1A")
    assert not is_fsa("K1A 0B1")
    assert is_us_zip("90210")
    assert is_us_zip("90210-1234")
    assert not is_us_zip("9021")
    assert not is_us_zip("K1A 0B1")


@pytest.mark.parametrize(
    "value",
    ["123 Main St", "45 Queen Street West", "1200, rue Sainte-Catherine", "12B Maple Avenue",
     "45, boulevard René-Lévesque", "Apt 4, 77 Bloor St. W", "8 Chemin du Lac"],
)  # fmt: skip
def test_street_address_valid(value: str) -> None:
    assert is_street_address(value)


@pytest.mark.parametrize("value", ["Toronto", "Main Street", "12 apples", "K1A 0B1", "2024-01-01"])
def test_street_address_invalid(value: str) -> None:
    assert not is_street_address(value)


@pytest.mark.parametrize(
    "value", ["E11.9", "I10 Essential (primary) hypertension", "F32.9 Depressive episode", "B20"]
)
def test_icd10_valid(value: str) -> None:
    assert is_icd10_code(value)


@pytest.mark.parametrize("value", ["K1A 0B1", "e11.9", "Diabetes", "1234", "E1"])
def test_icd10_invalid(value: str) -> None:
    assert not is_icd10_code(value)


def test_strip_accents() -> None:
    assert strip_accents("Hélène Côté, Québec") == "Helene Cote, Quebec"
