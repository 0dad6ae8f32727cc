"""The generalization Step 7 offers first for a quasi-identifier, read from its values.

Following the Portage defaults the method names (METHOD step 2 and 7.2): exact dates to
month and year, ages in bands top-coded at 90+, postal codes cut to their first characters,
other numbers in intervals. What Step 2 recognized (the suggestion's kind) is a hint; the
values decide whether the builder can apply:

- dates in any layout the profile recognizes (``14/03/2022``, ``14-MAR-2022``,
  ``03/14/2022``, ``20220314``), not only ISO: the layout that reads the most values,
  day-first winning a tie as in profiling;
- codes for a missing value, which real extracts put among dates and numbers ("Unknown",
  ".", 999, 99999999, -9): each is kept as a group of its own up to ``*`` (params
  ``codes``), so that the dates and numbers around it still generalize, and the intervals
  are sized on the numbers, not on a code eight digits long;
- whole numbers get whole widths of 2 or more: an interval of width 0.5 or 1 over whole
  numbers is the original value again, a level that generalizes nothing.

Diagnosis codes: when most different values are written as WHO ICD-10 codes, the ICD-10
code hierarchy (apps.assessments.hierarchy_codes), lenient when some are not codes.

A column where such codes are more than a few of the different values is not a column of
dates or numbers: it is offered keep-or-suppress, as any other category list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from apps.assessments.hierarchy_codes import looks_like_icd10, suggested_code_spec
from apps.assessments.models import HierarchySpec
from apps.classification.models import Variable
from apps.classification.quasi_values import numeric_missing_codes
from apps.datasets.profiling import DATE_FORMATS, DATETIME_FORMATS
from apps.engine import hierarchies as h

Kind = HierarchySpec.Kind

AGE_RANGE = (0.0, 120.0)
TOP_CODED_AGE = 90
DATE_KINDS = frozenset({"date_of_birth", "event_date", "date"})
POSTAL_KINDS = frozenset({"postal_code", "fsa", "zip"})
# Codes may be at most this many of the different values (or this share of them).
MAX_CODES, MAX_CODES_SHARE = 3, 0.2
# Layouts tried for dates: ISO first, then profiling's (polars' %.f is Python's .%f).
_LAYOUTS: tuple[str | None, ...] = (
    None,
    *DATE_FORMATS,
    *(fmt.replace("%.f", ".%f") for fmt in DATETIME_FORMATS),
)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _reads(layout: str | None) -> Callable[[str], bool]:
    def read(text: str) -> bool:
        try:
            if layout is None:
                datetime.fromisoformat(text.strip())
            else:
                datetime.strptime(text.strip(), layout)
        except ValueError:
            return False
        return True

    return read


def _few(codes: Sequence[str], distinct: int) -> bool:
    return len(codes) <= max(MAX_CODES, MAX_CODES_SHARE * distinct)


# Values on which the layout is chosen (spread over the sorted distinct values); the layout
# chosen then reads every value once. A column of a million timestamps is read once, not once
# per layout: the Step 7 page proposes its defaults on every view of a draft.
LAYOUT_SAMPLE = 500


def date_layout(values: Sequence[str]) -> tuple[str | None, list[str]] | None:
    """The layout that reads the most values (None: ISO) and the values it does not read
    (codes), or None when they are not a column of dates."""
    if not values:
        return None
    sample = values[:: max(1, len(values) // LAYOUT_SAMPLE)]
    best: tuple[int, int] | None = None
    for index, layout in enumerate(_LAYOUTS):
        reads = _reads(layout)
        read = sum(1 for v in sample if reads(v))
        if read and (best is None or read > best[0]):
            best = (read, index)
    if best is None:
        return None
    layout = _LAYOUTS[best[1]]
    reads = _reads(layout)
    codes = [v for v in values if not reads(v)]
    return (layout, codes) if _few(codes, len(values)) else None


def numeric_codes(
    values: Sequence[str], *, low: float | None = None, high: float | None = None
) -> tuple[list[float], list[str]] | None:
    """(the numbers, the codes among the values) or None when codes are more than a few.
    A code is a value that is not a number, a number outside ``low``-``high``, or a code
    number outside the range of the others (999, -9: Step 2's `numeric_missing_codes`)."""
    numbers = {v: x for v in values if (x := _number(v)) is not None}
    codes = [v for v in values if v not in numbers]
    outside = {
        v for v, x in numbers.items()
        if (low is not None and x < low) or (high is not None and x > high)
    }  # fmt: skip
    inside = [v for v in numbers if v not in outside]
    codes += sorted(outside | numeric_missing_codes(inside))
    kept = [x for v, x in numbers.items() if v not in codes]
    if not kept or not _few(codes, len(values)):
        return None
    return kept, codes


def nice_width(span: float) -> float:
    """A round width giving about 20 intervals over ``span`` (1, 2 or 5 times a power of
    ten)."""
    if span <= 0:
        return 1.0
    raw = span / 20
    exponent = math.floor(math.log10(raw))
    for step in (1, 2, 5, 10):
        if step * 10**exponent >= raw:
            return float(step * 10**exponent)
    return float(10 ** (exponent + 1))


def interval_widths(numbers: Sequence[float]) -> list[float]:
    """Three widths, each twice the one below; whole numbers get whole widths of 2 or more."""
    width = nice_width(max(numbers) - min(numbers))
    if all(float(x).is_integer() for x in numbers):
        width = max(2.0, float(math.ceil(width)))
    return [width, width * 2, width * 4]


def _with_codes(params: dict[str, Any], codes: Sequence[str]) -> dict[str, Any]:
    return {**params, "codes": list(codes)} if codes else params


def default_spec(variable: Variable, values: list[str | None]) -> tuple[str, dict[str, Any]]:
    """The kind and settings offered first (module docstring)."""
    kind = variable.suggestion_kind
    inferred = variable.inferred_type
    present = [v for v in values if v is not None]
    if kind in POSTAL_KINDS or "postal" in variable.name.lower():
        return Kind.PREFIX, {"lengths": [3, 1]}
    if kind == "age":
        found = numeric_codes(present, low=AGE_RANGE[0], high=AGE_RANGE[1])
        if found is not None:
            return Kind.INTERVAL, _with_codes(
                {"widths": [5, 10, 20], "top": TOP_CODED_AGE, "top_label": f"{TOP_CODED_AGE}+"},
                found[1],
            )
    if looks_like_icd10(present):
        return Kind.ICD10, suggested_code_spec(present)
    numeric = numeric_codes(present)
    if inferred in {"date", "datetime"} or kind in DATE_KINDS or numeric is None:
        layout = date_layout(present)
        if layout is not None:
            params: dict[str, Any] = {"levels": list(h.DATE_LEVELS)}
            if layout[0] is not None:
                params["date_format"] = layout[0]
            return Kind.DATE, _with_codes(params, layout[1])
    if numeric is not None:
        numbers, codes = numeric
        return Kind.INTERVAL, _with_codes({"widths": interval_widths(numbers)}, codes)
    return Kind.SUPPRESS, {}


def completed_params(kind: str, params: dict[str, Any], values: list[str | None]) -> dict[str, Any]:
    """Settings as a person gives them (widths, date levels), completed with what the values
    need that the page's form does not ask: the date layout when none is given, and the codes
    for a missing value when ``codes`` is not given (an explicit list, empty included, is
    kept as it is)."""
    present = [v for v in values if v is not None]
    out = dict(params)
    if kind == Kind.DATE:
        layout = date_layout(present)
        if layout is not None:
            if "date_format" not in out and layout[0] is not None:
                out["date_format"] = layout[0]
            if "codes" not in out and layout[1] and out.get("date_format") == layout[0]:
                out["codes"] = layout[1]
    elif kind == Kind.INTERVAL and "codes" not in out:
        found = numeric_codes(present)
        if found is not None and found[1]:
            out["codes"] = found[1]
    return out
