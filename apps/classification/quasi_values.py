"""Quasi-identifiers recognized by their values alone: dates, calendar parts, places, ages.

A column called ``v3`` or ``ideathmon`` says nothing; its values do. Each test below asks what
share of a column's sampled values has one shape — a date, a month or weekday name, a US state,
a Canadian province, a country, a ZIP code, a whole number in the range of years, months, days
of the month or ages — and a threshold on that share decides, never the column's name. Codes
for a missing value ("Unknown", "N/A") are set aside first, and whole numbers may hold a few
codes outside their range (99, 999, -1 for "unknown"), as real extracts do.

Suggesting a quasi-identifier is the safe mistake: it is generalized and measured. So a shape
that fits well enough is a confident suggestion; a column nothing fits is left to a person.
The evidence states the share and the rule's own bounds ("whole numbers from 0 to 120"),
never a value of the column (the oldest person's age identifies them).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apps.classification.vocabularies import (
    CANADIAN_PROVINCES,
    CODES_CANADIAN_PROVINCES,
    CODES_COUNTRIES,
    CODES_US_STATES,
    COUNTRIES,
    MISSING_MARKERS,
    MONTHS,
    US_STATES,
    WEEKDAYS,
    normalized,
)
from apps.engine.validators import is_us_zip

__all__ = [
    "HIGH_SHARE",
    "MEDIUM_SHARE",
    "TOP_CODE_AGE",
    "ValueEvidence",
    "counted",
    "is_place",
    "percent",
    "quasi_identifier_by_values",
    "share_of",
]

HIGH_SHARE = 0.85
MEDIUM_SHARE = 0.6
TOP_CODE_AGE = 89  # Portage: ages over 89 are identifying
# Whole numbers: the share that must fall inside a range (the rest: codes such as 99 or 999).
RANGE_SHARE = 0.9
EARLIEST_YEAR = 1850


@dataclass(frozen=True)
class ValueEvidence:
    kind: str  # month, weekday, geography, postal_code, event_date, year_month, year, ...
    confidence: str  # high | medium
    evidence: tuple[str, ...]


def percent(share: float) -> str:
    return f"{round(share * 100)} %"


def counted(share: float, total: int, what: str) -> str:
    return f"{percent(share)} of {total} sampled values {what}"


def _confidence(share: float) -> str:
    return "high" if share >= HIGH_SHARE else "medium"


# --------------------------------------------------------------------------- vocabularies


@dataclass(frozen=True)
class _Vocabulary:
    kind: str
    what: str  # completes "97 % of 1000 sampled values ..."
    words: frozenset[str]
    codes: frozenset[str] = frozenset()  # upper case; values are compared in upper case

    def __contains__(self, value: object) -> bool:
        text = str(value)
        return normalized(text) in self.words or text.strip().upper() in self.codes


_MONTHS = _Vocabulary("month", "are month names (English or French)", MONTHS)
_WEEKDAYS = _Vocabulary("weekday", "are days of the week (English or French)", WEEKDAYS)
_STATES = _Vocabulary(
    "geography", "are US states (names or postal abbreviations)", US_STATES, CODES_US_STATES
)
_PROVINCES = _Vocabulary(
    "geography", "are Canadian provinces or territories", CANADIAN_PROVINCES,
    CODES_CANADIAN_PROVINCES,
)  # fmt: skip
_COUNTRIES = _Vocabulary(
    "geography", "are countries (names or ISO codes)", COUNTRIES, CODES_COUNTRIES
)
_PLACES = (_STATES, _PROVINCES, _COUNTRIES)
_CALENDAR = (_MONTHS, _WEEKDAYS)


def is_place(value: str) -> bool:
    """A US state, a Canadian province or territory, or a country."""
    return any(value in vocabulary for vocabulary in _PLACES)


def share_of(values: Sequence[str], check: Callable[[str], bool]) -> float:
    return sum(1 for v in values if check(v)) / len(values) if values else 0.0


def _from_vocabulary(values: Sequence[str], check: Callable[[str], bool]) -> float:
    """The share of values `check` accepts, or 0 when they are all one value while the column
    has others: two-letter codes are words too ("on" and "off" is not Ontario)."""
    matched = {v for v in values if check(v)}
    if len(matched) < 2 and len(set(values)) > 1:
        return 0.0
    return share_of(values, check)


def _vocabulary_match(values: Sequence[str]) -> ValueEvidence | None:
    """The vocabulary most values come from; places may mix states, provinces and countries."""
    scored = [(_from_vocabulary(values, v.__contains__), v) for v in (*_CALENDAR, *_PLACES)]
    share, best = max(scored, key=lambda pair: pair[0])
    if share >= MEDIUM_SHARE:
        return ValueEvidence(
            best.kind, _confidence(share), (counted(share, len(values), best.what),)
        )
    places = _from_vocabulary(values, is_place)
    if places >= MEDIUM_SHARE:
        what = "are places: US states, Canadian provinces or territories, or countries"
        return ValueEvidence(
            "geography", _confidence(places), (counted(places, len(values), what),)
        )
    return None


# --------------------------------------------------------------------------- dates

_TIME = r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s*(?:[AaPp][Mm]|Z|[+-]\d{2}:?\d{2})?)?"
_ORDINAL = r"(?:er|st|nd|rd|th)?"
# A day, a month and a year: ISO, day-first or month-first numbers, or a month written out.
_FULL_DATES = tuple(
    re.compile(pattern)
    for pattern in (
        rf"^(?P<year>\d{{4}})[-/.](?P<month>\d{{1,2}})[-/.](?P<day>\d{{1,2}}){_TIME}$",
        rf"^(?P<day>\d{{1,2}})[-/.](?P<month>\d{{1,2}})[-/.](?P<year>\d{{4}}){_TIME}$",
        rf"^(?P<month>\d{{1,2}})[-/.](?P<day>\d{{1,2}})[-/.](?P<year>\d{{4}}){_TIME}$",
        rf"^(?P<day>\d{{1,2}}){_ORDINAL}[\s-]*(?P<word>[^\W\d_]+)\.?[\s,-]*(?P<year>\d{{4}})$",
        rf"^(?P<word>[^\W\d_]+)\.?\s+(?P<day>\d{{1,2}}){_ORDINAL},?\s+(?P<year>\d{{4}})$",
    )
)
# A month and a year.
_MONTHS_OF_YEARS = tuple(
    re.compile(pattern)
    for pattern in (
        r"^(?P<year>\d{4})[-/.](?P<month>\d{1,2})$",
        r"^(?P<month>\d{1,2})[-/.](?P<year>\d{4})$",
        r"^(?P<word>[^\W\d_]+)\.?[\s,-]+(?P<year>\d{4})$",
        r"^(?P<year>\d{4})[\s,-]+(?P<word>[^\W\d_]+)\.?$",
    )
)


def _fits(match: re.Match[str]) -> bool:
    """A real calendar date (a month written out must be a month name; years 1850-2200)."""
    parts = match.groupdict()
    word = parts.get("word")
    if word is not None and normalized(word) not in MONTHS:
        return False
    year = int(parts["year"])
    try:
        dt.date(year, 1 if word is not None else int(parts["month"]), int(parts.get("day") or 1))
    except ValueError:
        return False
    return EARLIEST_YEAR <= year <= 2200


def date_shape(value: str) -> str | None:
    """'date' for a day, month and year (with or without a time of day), 'year_month' for a
    month and year; None otherwise."""
    text = value.strip()
    for shape, patterns in (("date", _FULL_DATES), ("year_month", _MONTHS_OF_YEARS)):
        for pattern in patterns:
            match = pattern.match(text)
            if match is not None and _fits(match):
                return shape
    return None


def _date_match(values: Sequence[str]) -> ValueEvidence | None:
    shapes = [date_shape(v) for v in values]
    dates = sum(1 for s in shapes if s == "date") / len(values)
    months = sum(1 for s in shapes if s == "year_month") / len(values)
    if dates >= MEDIUM_SHARE:
        what = "are dates (day, month and year)"
        evidence = (
            counted(dates, len(values), what),
            "exact dates (to the day): generalizing to month and year is recommended",
        )
        return ValueEvidence("event_date", _confidence(dates), evidence)
    if dates + months >= MEDIUM_SHARE:
        what = "are dates or months of a year (month and year)"
        return ValueEvidence(
            "year_month",
            _confidence(dates + months),
            (counted(dates + months, len(values), what),),
        )
    return None


# --------------------------------------------------------------------------- whole numbers

_WHOLE = re.compile(r"^[+-]?\d+(?:\.0+)?$")


def _whole_numbers(values: Sequence[str]) -> list[int]:
    return [int(float(v)) for v in values if _WHOLE.match(v.strip())]


@dataclass(frozen=True)
class _Range:
    kind: str
    low: int
    high: int
    what: str  # completes "… are whole numbers from 1 to 31, …"
    min_distinct: int  # values a real column of this kind shows in a sample
    reach_low: int | None = None  # the smallest value must be at most this…
    reach_high: int | None = None  # …and the largest at least this (days reach 28-31)


def _ranges(today: dt.date) -> tuple[_Range, ...]:
    # Narrowest first: month numbers are also days and ages, days are also ages.
    return (
        _Range("month", 1, 12, "as month numbers are", 9, reach_high=11),
        _Range("day_of_month", 1, 31, "as a day of the month is", 20, reach_low=2, reach_high=28),
        _Range("age", 0, 120, "the range of ages", 10),
        _Range("year", EARLIEST_YEAR, today.year + 1, "as years are", 1),
    )


def _number_match(values: Sequence[str], today: dt.date) -> ValueEvidence | None:
    numbers = _whole_numbers(values)
    if not numbers or len(numbers) / len(values) < HIGH_SHARE:
        return None
    for rule in _ranges(today):
        inside = [n for n in numbers if rule.low <= n <= rule.high]
        distinct = set(inside)
        if len(inside) / len(numbers) < RANGE_SHARE or len(distinct) < rule.min_distinct:
            continue
        if rule.reach_low is not None and min(distinct) > rule.reach_low:
            continue
        if rule.reach_high is not None and max(distinct) < rule.reach_high:
            continue
        share = len(inside) / len(values)
        evidence = [
            counted(
                share,
                len(values),
                f"are whole numbers from {rule.low} to {rule.high}, {rule.what} "
                f"({len(distinct)} different values)",
            )
        ]
        if rule.kind == "age":
            old = sum(1 for n in inside if n > TOP_CODE_AGE)
            if old:
                evidence.append(
                    f"ages over {TOP_CODE_AGE} present; {old} of {len(values)} sampled values: "
                    "top-code at 90+ recommended"
                )
        # A shape, not a proof (a score can run from 1 to 12): confident enough to be
        # generalized and measured, which is the safe mistake, never "high".
        return ValueEvidence(rule.kind, "medium", tuple(evidence))
    return None


_BAND = re.compile(
    r"^(?:(?P<low>\d{1,3})\s*(?:-|–|to|à)\s*(?P<high>\d{1,3})|(?P<top>\d{1,3})\s*\+"
    r"|(?:<|under|moins de)\s*(?P<bottom>\d{1,3}))(?:\s*(?:years|yrs|ans))?$",
    re.IGNORECASE,
)


def _is_band(value: str) -> bool:
    match = _BAND.match(value.strip())
    if match is None:
        return False
    low, high = match.group("low"), match.group("high")
    return low is None or int(low) < int(high) <= 120


def _band_match(values: Sequence[str]) -> ValueEvidence | None:
    """Age groups ("20-24", "90+", "<5"): still ages, at the group's precision."""
    share = _from_vocabulary(values, _is_band)
    if share < MEDIUM_SHARE:
        return None
    what = "are ranges of whole numbers up to 120 (“20-24”, “90+”), as age groups are"
    return ValueEvidence("age", "medium", (counted(share, len(values), what),))


# --------------------------------------------------------------------------- together


def _zip_match(values: Sequence[str]) -> ValueEvidence | None:
    share = share_of(values, is_us_zip)
    if share < HIGH_SHARE:
        return None
    what = "are US ZIP codes (five digits, or ZIP+4)"
    return ValueEvidence("postal_code", "medium", (counted(share, len(values), what),))


# A number written with one digit repeated (99, 999, 99999999, -99) or a negative single
# digit (-9, -1) is the usual code for "unknown" in survey and register extracts, when it lies
# outside the range of the column's other numbers.
_CODE_SHAPE = re.compile(r"^-?(\d)\1+(?:\.0+)?$|^-\d$")


def numeric_missing_codes(values: Sequence[str]) -> set[str]:
    """The values that are numeric codes for a missing value: of ``_CODE_SHAPE``, negative
    among numbers that are not, or at least twice the largest of the others: 999 among ages,
    99999999 among incomes, -9 among counts."""
    numbers: dict[str, float] = {}
    for value in set(values):
        try:
            number = float(value)
        except ValueError:
            continue
        if math.isfinite(number):
            numbers[value] = number
    shaped = {v for v in numbers if _CODE_SHAPE.match(v.strip())}
    rest = [x for v, x in numbers.items() if v not in shaped]
    if not rest:
        return set()
    low, high = min(rest), max(rest)
    # Far from the others, not at the end of their range: 999 among ages up to 104, -9 among
    # counts, but not 99 among ages up to 98, nor 999999 after 999998.
    return {
        v for v in shaped
        if (numbers[v] < 0 <= low) or (high > 0 and numbers[v] >= 2 * high)
    }  # fmt: skip


def quasi_identifier_by_values(
    values: Sequence[str], *, numeric: bool, today: dt.date
) -> ValueEvidence | None:
    """What the sampled values show, if they have the shape of a quasi-identifier.

    ``numeric``: the column's profile says integer or decimal (five-digit numbers there are
    amounts more often than ZIP codes, whose leading zeros keep a ZIP column as text).
    """
    codes = numeric_missing_codes(values)
    informative = [
        v
        for v in values
        if normalized(v) not in MISSING_MARKERS and normalized(v) and v not in codes
    ]
    if not informative:
        return None
    found = (
        _date_match(informative)
        or _vocabulary_match(informative)
        or (None if numeric else _zip_match(informative))
        or _number_match(informative, today)
        or _band_match(informative)
    )
    if found is None:
        return None
    set_aside = len(values) - len(informative)
    if set_aside:
        note = (
            f"{set_aside} of {len(values)} sampled values are codes for a missing value "
            "(words such as “Unknown”, a full stop, or a number of one repeated digit outside "
            "the others' range), set aside"
        )
        return ValueEvidence(found.kind, found.confidence, (*found.evidence, note))
    return found
