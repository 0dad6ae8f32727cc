"""Value checks for direct and quasi-identifiers (Step 2 suggestions).

Each function takes one raw value (as text) and answers whether it has the shape, and where
one exists the checksum, of a kind of identifier. They are deliberately strict: a suggestion
built on them says "92 % of sampled values are valid SINs", so a false positive costs trust.

Checksums:
- Luhn (mod 10, ISO/IEC 7812-1): Canadian SIN (9 digits) and the Ontario health number
  (10 digits; the Ministry of Health's published check is the same doubling rule, the last
  digit being the check digit). A random number passes Luhn one time in ten.
- US SSN has no checksum; the Social Security Administration never issues area 000, 666 or
  900–999, group 00 or serial 0000, and those rules are what can be checked.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

__all__ = [
    "digits_only",
    "is_canadian_postal_code",
    "is_email",
    "is_fsa",
    "is_icd10_code",
    "is_ip_address",
    "is_nanp_phone",
    "is_ontario_health_number",
    "is_plain_digits",
    "is_sin",
    "is_ssn",
    "is_street_address",
    "is_url",
    "is_us_zip",
    "luhn_check_digit",
    "luhn_valid",
    "strip_accents",
]

_NON_DIGITS = re.compile(r"\D+")


def digits_only(value: str) -> str:
    return _NON_DIGITS.sub("", value)


def strip_accents(text: str) -> str:
    """'Hélène Côté' → 'Helene Cote' (names and French column names are compared without accents)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def luhn_valid(digits: str) -> bool:
    """Luhn (mod 10) check over a string of digits whose last digit is the check digit."""
    if not digits or not digits.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def luhn_check_digit(partial: str) -> str:
    """The digit that makes `partial + digit` pass the Luhn check."""
    for candidate in "0123456789":
        if luhn_valid(partial + candidate):
            return candidate
    raise ValueError(f"not a string of digits: {partial!r}")  # unreachable for digit strings


# SIN: 3-3-3 with an optional space or hyphen between the groups, or 9 digits in a row.
_SIN = re.compile(r"^\s*(\d{3})[ -]?(\d{3})[ -]?(\d{3})\s*$")


def is_sin(value: str) -> bool:
    """Canadian Social Insurance Number: 9 digits passing the Luhn check.

    The government's sample SIN 046 454 286 passes; a 0 first digit is never issued to a person
    but is kept valid here so the well-known test numbers are recognized.
    """
    match = _SIN.match(value)
    return match is not None and luhn_valid("".join(match.groups()))


_SSN = re.compile(r"^\s*(\d{3})([ -]?)(\d{2})\2(\d{4})\s*$")


def is_ssn(value: str) -> bool:
    """US Social Security Number: AAA-GG-SSSS under the SSA's issuing rules (no checksum)."""
    match = _SSN.match(value)
    if not match:
        return False
    area, _, group, serial = match.groups()
    if area in ("000", "666") or area[0] == "9":
        return False
    return group != "00" and serial != "0000"


# 10 digits (often written 4-3-3) and an optional version code of one or two letters.
_HEALTH_NUMBER = re.compile(r"^\s*(\d{4})[ -]?(\d{3})[ -]?(\d{3})(?:[ -]?([A-Za-z]{1,2}))?\s*$")


def is_ontario_health_number(value: str) -> bool:
    """Ontario health card number: 10 digits, Luhn-valid, optional 1–2 letter version code."""
    match = _HEALTH_NUMBER.match(value)
    return match is not None and luhn_valid("".join(match.groups()[:3]))


_EMAIL = re.compile(
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$"
)


def is_email(value: str) -> bool:
    return len(value) <= 254 and bool(_EMAIL.match(value.strip()))


# North American Numbering Plan: NPA-NXX-XXXX, optional +1 / 1, optional extension.
_PHONE = re.compile(
    r"^\s*(?:\+?1[ .-]?)?(?:\((\d{3})\)|(\d{3}))[ .-]?(\d{3})[ .-]?(\d{4})"
    r"(?:\s*(?:x|ext\.?|extension|poste|#)\s*\d{1,6})?\s*$",
    re.IGNORECASE,
)


def is_nanp_phone(value: str) -> bool:
    """A North American phone number: area code and exchange start with 2–9 and are not N11."""
    match = _PHONE.match(value)
    if not match:
        return False
    area = match.group(1) or match.group(2)
    exchange = match.group(3)
    if area[0] in "01" or area[1:] == "11" or area[1] == "9":
        return False
    return exchange[0] not in "01" and exchange[1:] != "11"


def is_plain_digits(value: str, length: int) -> bool:
    """Exactly `length` digits and nothing else: ambiguous between phone, SIN and card numbers."""
    stripped = value.strip()
    return len(stripped) == length and stripped.isdigit()


def is_ip_address(value: str) -> bool:
    """An IPv4 (dotted quad) or IPv6 address."""
    text = value.strip()
    if not text or ("." not in text and ":" not in text):
        return False
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_URL = re.compile(
    r"^(?:(?:https?|ftp)://[^\s/?#]+\.[^\s/?#]+|www\.[^\s/?#]+\.[A-Za-z]{2,})(?:[/?#]\S*)?$",
    re.IGNORECASE,
)


def is_url(value: str) -> bool:
    """A web address with a scheme (http, https, ftp) or starting with 'www.'."""
    return bool(_URL.match(value.strip()))


# Canada Post: no D, F, I, O, Q, U anywhere; no W or Z as the first letter.
_FSA_PATTERN = r"[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z]"
_POSTAL = re.compile(rf"^\s*{_FSA_PATTERN}[ -]?\d[ABCEGHJ-NPRSTV-Z]\d\s*$", re.IGNORECASE)
_FSA = re.compile(rf"^\s*{_FSA_PATTERN}\s*$", re.IGNORECASE)


def is_canadian_postal_code(value: str) -> bool:
    """A full Canadian postal code, 'A1A 1A1' (space or hyphen optional)."""
    return bool(_POSTAL.match(value))


def is_fsa(value: str) -> bool:
    """A forward sortation area: the first three characters of a postal code, 'A1A'."""
    return bool(_FSA.match(value))


_ZIP = re.compile(r"^\s*\d{5}(?:-\d{4})?\s*$")


def is_us_zip(value: str) -> bool:
    return bool(_ZIP.match(value))


_STREET_TYPES = (
    "street|st|avenue|ave|av|road|rd|boulevard|blvd|boul|drive|dr|crescent|cres|court|crt|ct|"
    "lane|ln|way|place|pl|terrace|terr|trail|trl|parkway|pkwy|highway|hwy|circle|cir|square|sq|"
    "line|concession|sideroad|gate|grove|heights|hts|row|path|walk|close|rue|chemin|ch|rang|"
    "route|rte|montee|cote|allee|impasse"
)
_STREET_ENGLISH = re.compile(
    rf"\b\d{{1,6}}[A-Za-z]?(?:-\d{{1,6}})?,?\s+(?:[A-Za-z'.-]+\s+){{1,4}}(?:{_STREET_TYPES})\b\.?",
    re.IGNORECASE,
)
_STREET_FRENCH = re.compile(
    rf"\b\d{{1,6}}[A-Za-z]?,?\s+(?:{_STREET_TYPES})\s+(?:de |du |des |la |le |l')?[A-Za-z]",
    re.IGNORECASE,
)


def is_street_address(value: str) -> bool:
    """A civic address: a number, a street name and a street type ('12 Main St', '45, rue Roy')."""
    text = strip_accents(value)
    return bool(_STREET_ENGLISH.search(text) or _STREET_FRENCH.search(text))


# ICD-10 (WHO / -CA / -CM): a letter, two digits, an optional decimal part, then text or end.
_ICD10 = re.compile(r"^\s*[A-Z]\d{2}(?:\.[0-9A-Z]{1,4})?(?=$|[\s:,;-])")


def is_icd10_code(value: str) -> bool:
    """A value that is, or starts with, an ICD-10 code: 'E11.9', 'I10 Essential hypertension'."""
    return bool(_ICD10.match(value))
