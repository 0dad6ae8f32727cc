"""Evidence from the sampled values: the format checks (with check digits), names, sex codes,
ages and dates, identifiers embedded in text, and the checks that confirm or contradict what
a column name says.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from apps.classification.detectors.names import _NameRule
from apps.classification.detectors.reasons import MAX_SAMPLE_VALUES
from apps.classification.quasi_values import (
    MEDIUM_SHARE,
    TOP_CODE_AGE,
    is_place,
)
from apps.classification.quasi_values import percent as _pct
from apps.classification.quasi_values import share_of as _share
from apps.datasets.profiling import (
    ColumnProfile,
)
from apps.engine.freetext import SPAN_LABELS, ColumnScan, scan_series
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES
from apps.engine.validators import (
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
    strip_accents,
)

# --------------------------------------------------------------------------- values

_FIRST = frozenset(strip_accents(n).lower() for n in FIRST_NAMES)
_LAST = frozenset(strip_accents(n).lower() for n in LAST_NAMES)
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")

_SEX_VALUES = frozenset(
    {"m", "f", "male", "female", "man", "woman", "men", "women", "h", "homme", "femme",
     "masculin", "feminin", "x", "other", "autre", "u", "unknown", "inconnu", "nonbinary",
     "non-binary", "non binaire", "intersex", "boy", "girl", "hombre", "mujer", "masculino",
     "femenino", "varon", "varón"}
)  # fmt: skip
_SEX_CORE = frozenset(
    {"m", "f", "male", "female", "h", "homme", "femme", "man", "woman", "hombre", "mujer",
     "masculino", "femenino"}
)  # fmt: skip


def _values(sample: pl.DataFrame, column: str) -> list[str]:
    if column not in sample.columns:
        return []
    series = sample.get_column(column).drop_nulls().head(MAX_SAMPLE_VALUES)
    if series.dtype != pl.String:
        try:
            series = series.cast(pl.String)
        except pl.exceptions.PolarsError:
            return []  # nested or binary values: judged on name and profile alone
    return [v.strip() for v in series.to_list() if v is not None and v.strip()]


def _is_person_name(value: str) -> bool:
    if any(ch.isdigit() for ch in value) or "@" in value:
        return False
    words = _NAME_WORD.findall(strip_accents(value))
    if not 1 <= len(words) <= 4:
        return False
    lowered = [w.lower() for w in words]
    if value == value.lower() and len(words) > 1:
        return False  # a lower-case phrase, not a name
    return any(w in _FIRST or w in _LAST for w in lowered)


@dataclass(frozen=True)
class _ValueCheck:
    kind: str
    role: str
    what: str  # completes "92 % of 50 sampled values ..."
    check: Callable[[str], bool]


def _formatted_ssn(value: str) -> bool:
    """SSN by value only when written AAA-GG-SSSS: nine plain digits are too ambiguous."""
    return is_ssn(value) and not is_plain_digits(value, 9)


# Ordered: the first check reaching the threshold names the column.
_VALUE_CHECKS: tuple[_ValueCheck, ...] = (
    _ValueCheck("email", "direct", "are valid e-mail addresses", is_email),
    _ValueCheck("url", "direct", "are web addresses (URLs)", is_url),
    _ValueCheck("ip", "direct", "are IP addresses", is_ip_address),
    _ValueCheck("sin", "direct", "are valid SINs (9 digits, Luhn check digit)", is_sin),
    _ValueCheck(
        "health_number",
        "direct",
        "are valid Ontario health numbers (10 digits, Luhn check digit)",
        is_ontario_health_number,
    ),
    _ValueCheck(
        "ssn", "direct", "follow the US SSN pattern (AAA-GG-SSSS, issuing rules)", _formatted_ssn
    ),
    _ValueCheck("phone", "direct", "are North American phone numbers", is_nanp_phone),
    _ValueCheck("address", "direct", "look like street addresses", is_street_address),
    _ValueCheck(
        "postal_code", "quasi", "are Canadian postal codes (A1A 1A1)", is_canadian_postal_code
    ),
    _ValueCheck("postal_code", "quasi", "are forward sortation areas (A1A)", is_fsa),
    _ValueCheck("health_information", "sensitive", "start with an ICD-10 code", is_icd10_code),
)


# --------------------------------------------------------------------------- suggestion building


@dataclass
class _Draft:
    kind: str
    role: str
    confidence: str
    evidence: list[str]
    needs_review: bool = False


def _value_match(values: Sequence[str]) -> tuple[_ValueCheck, float] | None:
    if not values:
        return None
    for check in _VALUE_CHECKS:
        share = _share(values, check.check)
        if share >= MEDIUM_SHARE:
            # Ten plain digits pass a phone check more often than a Luhn check by chance;
            # health numbers are tested first, so a phone column reaching here failed Luhn.
            return check, share
    return None


def _sex_share(values: Sequence[str]) -> float:
    distinct = {v.lower() for v in values}
    if not distinct or len(distinct) > 6 or not distinct & _SEX_CORE:
        return 0.0
    return _share(values, lambda v: v.lower() in _SEX_VALUES)


def _age_evidence(profile: ColumnProfile, values: Sequence[str]) -> list[str]:
    numbers = []
    for value in values:
        try:
            numbers.append(float(value))
        except ValueError:
            continue
    top = _as_float(profile.max)
    over = sum(1 for n in numbers if n > TOP_CODE_AGE)
    if (top is not None and top > TOP_CODE_AGE) or over:
        # Never the highest age itself: the oldest person's exact age is a quasi-identifier
        # value, and reviewers read this evidence.
        count = f"; {over} of {len(numbers)} sampled values" if numbers else ""
        return [f"ages over {TOP_CODE_AGE} present{count}: top-code at 90+ recommended"]
    return []


def _as_float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _as_date(text: str | None) -> dt.date | None:
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def _birth_date_evidence(profile: ColumnProfile, today: dt.date) -> list[str]:
    earliest = _as_date(profile.min)
    if earliest is None:
        return []
    age = today.year - earliest.year - ((today.month, today.day) < (earliest.month, earliest.day))
    if age > TOP_CODE_AGE:
        # The cut-off year, not the earliest date: that is one person's exact birth date.
        return [
            f"birth dates imply ages over {TOP_CODE_AGE} (people born before "
            f"{today.year - TOP_CODE_AGE}): top-code at 90+ recommended"
        ]
    return []


def _exact_date_evidence(profile: ColumnProfile) -> list[str]:
    if profile.inferred_type in ("date", "datetime"):
        return ["exact dates (to the day): generalizing to month and year is recommended"]
    return []


def _embedded_scan(values: Sequence[str]) -> ColumnScan | None:
    """What the free-text detectors find in the sampled values (None without values)."""
    if not values:
        return None
    return scan_series(pl.Series("sample", list(values), dtype=pl.String))


def _embedded_identifiers(scan: ColumnScan | None) -> list[str]:
    """Evidence, one line per kind of span, then up to three examples with the spans masked."""
    if scan is None or not scan.rows_with_spans:
        return []
    found = []
    for span_type, spans in scan.spans.items():
        rows = scan.rows_by_type.get(span_type, 0)
        found.append(
            f"{SPAN_LABELS.get(span_type, span_type.lower())} found in "
            f"{_pct(rows / scan.values)} of {scan.values} sampled texts ({spans} in all)"
        )
    found += [f"{EXAMPLE_PREFIX}“{example}”" for example in scan.examples]
    return found


# Evidence lines quoting sampled text (detected spans masked, the rest as written): shown
# only to members who may see raw values (apps.classification.selectors).
EXAMPLE_PREFIX = "example, detected spans masked: "


# Below this share of sampled values with a detected span, a column that is not free text
# (short codes, categories) is not called an identifier on the detectors' word alone: one
# category that happens to be a surname ("White", "Hamilton") must not make it one.
EMBEDDED_SHARE = 0.1


def _name_evidence(column: str, rule: _NameRule) -> str:
    return f"the column name '{column}' suggests {rule.label}"


def _postal_or_fsa(value: str) -> bool:
    return is_canadian_postal_code(value) or is_fsa(value)


# Checks that confirm (or contradict) what a column name says.
_KIND_CHECKS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "email": ("are valid e-mail addresses", is_email),
    "phone": ("are North American phone numbers", is_nanp_phone),
    "sin": ("are valid SINs (9 digits, Luhn check digit)", is_sin),
    "ssn": ("follow the US SSN pattern (AAA-GG-SSSS, issuing rules)", is_ssn),
    "health_number": (
        "are valid Ontario health numbers (10 digits, Luhn check digit)",
        is_ontario_health_number,
    ),
    "ip": ("are IP addresses", is_ip_address),
    "url": ("are web addresses (URLs)", is_url),
    "address": ("look like street addresses", is_street_address),
    "postal_code": ("are Canadian postal codes or forward sortation areas", _postal_or_fsa),
    "health_information": ("start with an ICD-10 code", is_icd10_code),
    "name": ("are common first or last names", _is_person_name),
    "sex": ("are sex or gender codes", lambda v: v.lower() in _SEX_VALUES),
    "geography": ("are US states, Canadian provinces or territories, or countries", is_place),
}
# Formats strict enough that a name contradicted by the values deserves low confidence.
_STRICT_KINDS = frozenset({"email", "phone", "sin", "ssn", "health_number", "ip", "url"})


def _free_text_draft(
    profile: ColumnProfile, values: Sequence[str], rule: _NameRule | None
) -> _Draft:
    evidence = [
        f"free text: on average {profile.mean_length or 0:.0f} characters per value, "
        f"{_pct(profile.unique_share)} of values distinct"
    ]
    scan = _embedded_scan(values)
    evidence += _embedded_identifiers(scan)
    if scan is not None and scan.rows_with_spans:
        if rule is not None:
            evidence.append(_name_evidence(profile.name, rule))
        return _Draft("free_text_identifiers", "direct", "high", evidence, needs_review=True)
    if rule is not None and rule.role == "sensitive":
        evidence.append(_name_evidence(profile.name, rule))
        return _Draft("health_information", "sensitive", "medium", evidence, needs_review=True)
    if rule is not None and rule.kind == "free_text":
        evidence.append(_name_evidence(profile.name, rule))
    return _Draft("free_text", "other", "high", evidence, needs_review=True)
