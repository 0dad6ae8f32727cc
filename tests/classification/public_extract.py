"""A public-looking extract the detectors were never tuned on (issue 22).

Seeded, so a failure can be replayed; neutral column names (``c01``…), so nothing but the
values can tell what a column holds. The families are those of a public record extract
(traffic fatalities, vital statistics): exact age, US state, month and day of an event, dates,
years, weekday, Canadian provinces, countries, ZIP codes, and category lists, some of whose
words are also given names or surnames. Each family has a few "unknown" codes, as real
extracts do.

``EXPECTED`` says what each column is: the quasi-identifier kinds the suggestions must find,
and the category lists that are neither free text nor identifiers.
"""

from __future__ import annotations

import datetime as dt
import random

import polars as pl

US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut",
    "Delaware", "District of Columbia", "Florida", "Georgia", "Hawaii", "Idaho", "Illinois",
    "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts",
    "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada",
    "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota",
    "Ohio", "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina",
    "South Dakota", "Tennessee", "Texas", "Utah", "Vermont", "Virginia", "Washington",
    "West Virginia", "Wisconsin", "Wyoming",
)  # fmt: skip
STATE_CODES = ("TX", "CA", "FL", "NY", "PA", "IL", "OH", "GA", "NC", "MI", "NJ", "VA", "WA",
               "AZ", "MA", "TN", "IN", "MO", "MD", "WI", "CO", "MN", "SC", "AL", "LA")  # fmt: skip
PROVINCE_CODES = ("ON", "QC", "BC", "AB", "MB", "SK", "NS", "NB", "NL", "PE", "YT", "NT", "NU")
MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")  # fmt: skip
MONTHS_FR = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août",
             "septembre", "octobre", "novembre", "décembre")  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
COUNTRIES = ("Mexico", "India", "Philippines", "China", "Viet Nam", "El Salvador", "Cuba",
             "Dominican Republic", "Guatemala", "Korea", "Jamaica", "Haiti", "Canada",
             "Germany", "Colombia", "Honduras", "Poland", "Italy", "Peru", "Ecuador")  # fmt: skip
# Category words (colours) that are also given names or surnames in the embedded name lists.
NAME_LIKE_CATEGORIES = ("White", "Brown", "Green", "Gray", "Rose", "Jade", "Heather", "Black")
RACE_LIKE = ("White", "Black", "American Indian", "Chinese", "Japanese", "Filipino",
             "Asian Indian", "Korean", "Vietnamese", "Other Asian", "Multiple races",
             "All other races", "Unknown")  # fmt: skip
OUTCOMES = ("Fatal", "Incapacitating", "Non-incapacitating", "Possible", "No apparent injury")

# Column → what it is. Quasi-identifier kinds are those of apps.classification.detectors.
EXPECTED_QUASI = {
    "c01": "age",
    "c02": "geography",  # US state names
    "c03": "month",  # English month names
    "c04": "day_of_month",
    "c05": "event_date",  # ISO dates
    "c06": "month",  # month numbers 1-12
    "c07": "month",  # French month names, lower case, accents
    "c08": "geography",  # Canadian province abbreviations
    "c09": "geography",  # US state abbreviations
    "c10": "year",
    "c11": "weekday",
    "c12": "geography",  # countries
    "c13": "postal_code",  # five-digit ZIP codes, leading zeros kept
    "c14": "event_date",  # day-first dates with a few "Unknown"
    "c15": "month",  # three-letter month abbreviations, upper case
}
CATEGORY_LISTS = ("c16", "c17", "c18")  # name-like words, race-like list, outcomes


def _pick(rng: random.Random, values: tuple[str, ...], unknown: str = "Unknown") -> str:
    return unknown if rng.random() < 0.02 else rng.choice(values)


def public_extract(n: int = 1500, *, seed: int = 2211) -> pl.DataFrame:
    """`n` rows of a public-looking extract; identical output for identical `seed`."""
    rng = random.Random(seed)
    race_weights = [78, 12, 2, 1, 1, 1, 1, 1, 1, 1, 0.5, 0.3, 0.2]
    rows: dict[str, list[object]] = {f"c{i:02d}": [] for i in range(1, 19)}
    start = dt.date(2015, 1, 1)
    for _ in range(n):
        event = start + dt.timedelta(days=rng.randrange(3000))
        age = min(99, max(0, round(rng.gauss(42, 20))))
        rows["c01"].append(999 if rng.random() < 0.005 else age)
        rows["c02"].append(_pick(rng, US_STATES))
        rows["c03"].append(MONTHS_EN[event.month - 1])
        rows["c04"].append(event.day)
        rows["c05"].append(event.isoformat())
        rows["c06"].append(event.month)
        rows["c07"].append(MONTHS_FR[event.month - 1])
        rows["c08"].append(_pick(rng, PROVINCE_CODES, "XX"))
        rows["c09"].append(_pick(rng, STATE_CODES, "99"))
        rows["c10"].append(event.year - age if rng.random() > 0.01 else 9999)
        rows["c11"].append(WEEKDAYS[event.weekday()])
        rows["c12"].append(_pick(rng, COUNTRIES))
        rows["c13"].append(
            f"{rng.choice((2, 7, 10, 30, 60, 77, 90, 95, 98)) * 1000 + rng.randrange(999):05d}"
        )
        rows["c14"].append("Unknown" if rng.random() < 0.06 else event.strftime("%d/%m/%Y"))
        rows["c15"].append(event.strftime("%b").upper())
        rows["c16"].append(rng.choice(NAME_LIKE_CATEGORIES))
        rows["c17"].append(rng.choices(RACE_LIKE, weights=race_weights)[0])
        rows["c18"].append(rng.choice(OUTCOMES))
    return pl.DataFrame(
        {name: pl.Series(name, values, strict=False) for name, values in rows.items()}
    )
