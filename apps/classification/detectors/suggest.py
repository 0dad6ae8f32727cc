"""A suggestion per column: name and values weighed together, category lists and prose told
apart, the quasi-identifiers known by their values (:func:`suggest_roles`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence

import polars as pl

from apps.classification.detectors.names import _match_name, _NameRule
from apps.classification.detectors.reasons import _R, Suggestion
from apps.classification.detectors.values import (
    _KIND_CHECKS,
    _NAME_WORD,
    _STRICT_KINDS,
    EMBEDDED_SHARE,
    _age_evidence,
    _as_float,
    _birth_date_evidence,
    _Draft,
    _embedded_identifiers,
    _embedded_scan,
    _exact_date_evidence,
    _free_text_draft,
    _is_person_name,
    _name_evidence,
    _sex_share,
    _value_match,
    _values,
)
from apps.classification.quasi_values import (
    HIGH_SHARE,
    MEDIUM_SHARE,
    TOP_CODE_AGE,
    quasi_identifier_by_values,
)
from apps.classification.quasi_values import counted as _counted
from apps.classification.quasi_values import percent as _pct
from apps.classification.quasi_values import share_of as _share
from apps.datasets.profiling import (
    FREE_TEXT_MIN_DISTINCT,
    FREE_TEXT_MIN_UNIQUE_SHARE,
    ColumnProfile,
    DatasetProfile,
)


def _unique(profile: ColumnProfile) -> bool:
    return profile.inferred_type == "identifier_like" or (
        profile.distinct >= 10 and profile.unique_share >= 0.95
    )


def _named_draft(
    profile: ColumnProfile, values: Sequence[str], rule: _NameRule, today: dt.date
) -> _Draft:
    """The column name matched a rule: start from it, let the values confirm or contradict."""
    evidence = [_name_evidence(profile.name, rule)]
    kind, role, confidence = rule.kind, rule.role, "medium"
    if kind == "identifier":
        if not _unique(profile):
            evidence.append(f"values repeat ({profile.distinct} distinct values)")
            return _Draft("shared_code", "other", "low", evidence)
        kind = "record_number"
    if kind == "record_number" and _unique(profile):
        evidence.append(f"{_pct(profile.unique_share)} of values are distinct")
        confidence = "high"
    specific = _KIND_CHECKS.get(kind)
    if specific is not None and values:
        what, check = specific
        share = _share(values, check)
        if kind == "sex":
            share = _sex_share(values)
        if share >= MEDIUM_SHARE:
            evidence.append(_counted(share, len(values), what))
            if share >= HIGH_SHARE:
                confidence = "high"
        elif kind in _STRICT_KINDS:
            evidence.append(f"but only {_counted(share, len(values), what)}")
            confidence = "low"
            if kind == "phone" and _unique(profile):
                # The check knows North American numbers only: numbers abroad under a name
                # that says phone, unique per row, are a direct identifier all the same.
                evidence.append(f"{_pct(profile.unique_share)} of values are distinct")
                confidence = "medium"
        elif kind == "name" and share < 0.2:
            evidence.append(f"few sampled values are common names ({_pct(share)})")
    if kind in ("date_of_birth", "event_date") and profile.inferred_type in ("date", "datetime"):
        confidence = "high"
        evidence += _exact_date_evidence(profile)
    if kind == "date_of_birth":
        evidence += _birth_date_evidence(profile, today)
    if kind == "age" and profile.inferred_type in ("integer", "decimal"):
        confidence = "high"
        evidence += _age_evidence(profile, values)
    if kind == "birth_year":
        evidence += _birth_year_evidence(profile, today)
    return _Draft(kind, role, confidence, evidence)


# A category list: few different values, each held by many rows. A name or a sentence
# written about one person is not repeated that way, so the name and free-text detectors
# never read such a list, whatever its words ("White", "Rose", "Georgia", "Jordan" are
# categories there, not people).
CLOSED_MAX_DISTINCT = 50
CLOSED_MAX_UNIQUE_SHARE = 1 / 3  # three rows or more per value on average
# Prose: several words per value on average, and values that vary as the profile's
# free-text rule asks (apps.datasets.profiling).
PROSE_MIN_MEAN_WORDS = 2.0


# A coded list of long labels ("Fracture of the left knee, initial encounter…") is free text by
# its length alone; what tells it from text written about one person is that its labels
# repeat: at least this share of the sampled values occur more than once in the sample.
# Notes that repeat a few stock phrases stay text (the rest is written for one person).
LIST_MIN_REPEATED_SHARE = 0.8
LIST_MIN_SAMPLE = 50


def _closed_vocabulary(profile: ColumnProfile) -> bool:
    return (
        0 < profile.distinct <= CLOSED_MAX_DISTINCT
        and profile.unique_share <= CLOSED_MAX_UNIQUE_SHARE
    )


def _repeated_labels(values: Sequence[str]) -> bool:
    if len(values) < LIST_MIN_SAMPLE:
        return False
    counts = Counter(values)
    repeated = sum(1 for v in values if counts[v] > 1)
    return repeated >= LIST_MIN_REPEATED_SHARE * len(values)


def _a_list(profile: ColumnProfile, values: Sequence[str]) -> bool:
    """A category list, which the name and free-text detectors never read."""
    return _closed_vocabulary(profile) or _repeated_labels(values)


def _looks_like_prose(profile: ColumnProfile, values: Sequence[str]) -> bool:
    if not values or _a_list(profile, values):
        return False
    if profile.inferred_type == "free_text":
        return True
    words = sum(len(_NAME_WORD.findall(v)) for v in values) / len(values)
    varied = (
        profile.unique_share >= FREE_TEXT_MIN_UNIQUE_SHARE
        or profile.distinct >= FREE_TEXT_MIN_DISTINCT
    )
    return words >= PROSE_MIN_MEAN_WORDS and varied


def _names_by_value(profile: ColumnProfile, values: Sequence[str]) -> _Draft | None:
    """A column of people's names: most rows AND most of the different values are names, and
    the values are not a category list."""
    if profile.inferred_type not in ("categorical", "identifier_like") or not values:
        return None
    if _closed_vocabulary(profile):
        return None
    rows = _share(values, _is_person_name)
    distinct = sorted(set(values))
    different = _share(distinct, _is_person_name)
    if rows < MEDIUM_SHARE or different < MEDIUM_SHARE:
        return None
    evidence = [
        _counted(rows, len(values), "are common first or last names"),
        f"{_pct(different)} of the {len(distinct)} different values are names",
    ]
    return _Draft("name", "direct", "high" if rows >= HIGH_SHARE else "medium", evidence)


def _quasi_by_values(
    profile: ColumnProfile, values: Sequence[str], today: dt.date
) -> _Draft | None:
    if not values or _numbered(values):
        return None
    found = quasi_identifier_by_values(
        values, numeric=profile.inferred_type in ("integer", "decimal"), today=today
    )
    if found is None:
        return None
    evidence = list(found.evidence)
    if _unique(profile):
        # Places and dates of a small data set can be unique per row: still what they are,
        # a quasi-identifier, to be generalized until the classes are large enough.
        evidence.append(
            f"{_pct(profile.unique_share)} of the values are distinct: near-unique per row, "
            "so it must be generalized"
        )
    return _Draft(found.kind, "quasi", found.confidence, evidence)


# What an intruder can know of anyone, whatever the column is about: the dates and places
# of their life, the words of a calendar, postal codes, years. Such values outrank a name that
# says "sensitive" (a date of onset is an event date). Whole numbers in the range of ages,
# months or days do not: under a health name they are more likely measurements or scores.
_KNOWABLE_KINDS = frozenset(
    {"event_date", "year_month", "weekday", "geography", "postal_code", "year"}
)


def _knowable(found: _Draft, profile: ColumnProfile) -> bool:
    numeric = profile.inferred_type in ("integer", "decimal")
    return found.kind in _KNOWABLE_KINDS or (found.kind == "month" and not numeric)


def _numbered(values: Sequence[str]) -> bool:
    """Numbers given to records in turn ("00017", "00018"…): the different values fill
    nearly all of their range, which places, dates and ages spread over a wide one do not."""
    digits = {int(v) for v in values if v.isdigit()}
    if len(digits) < 10 or len(digits) < 0.9 * len(values):
        return False
    return len(digits) >= 0.9 * (max(digits) - min(digits) + 1)


def _draft_for(profile: ColumnProfile, values: Sequence[str], today: dt.date) -> _Draft:
    """The decision list, read top to bottom."""
    if profile.inferred_type == "empty":
        return _Draft("empty", "other", "high", ["the column has no values"])
    rule = _match_name(profile.name)
    prose = _looks_like_prose(profile, values)

    # 1. Free text: a person must read it, whatever else the name suggests.
    if profile.inferred_type == "free_text" and not _a_list(profile, values):
        return _free_text_draft(profile, values, rule)

    # 2. Values that are direct identifiers decide, whatever the name says.
    matched = _value_match(values)
    if matched is not None and matched[0].role == "direct":
        check, share = matched
        evidence = [_counted(share, len(values), check.what)]
        agrees = rule is not None and rule.kind == check.kind
        if agrees and rule is not None:
            evidence.append(_name_evidence(profile.name, rule))
        confidence = "high" if share >= HIGH_SHARE or agrees else "medium"
        return _Draft(check.kind, "direct", confidence, evidence)

    # 3. The name, confirmed or contradicted by the values; a name that points nowhere
    #    ("batch_no" whose codes repeat) gives way to values that are quasi-identifiers, and
    #    a name that says sensitive ("symptom_onset") to values anyone can know.
    if rule is not None and rule.kind != "free_text":
        named = _named_draft(profile, values, rule, today)
        if named.role in ("other", "sensitive"):
            by_values = _quasi_by_values(profile, values, today)
            if by_values is None and matched is not None and matched[0].role == "quasi":
                check, share = matched
                by_values = _Draft(
                    check.kind, "quasi", "high" if share >= HIGH_SHARE else "medium",
                    [_counted(share, len(values), check.what)],
                )  # fmt: skip
            if by_values is not None and (named.role == "other" or _knowable(by_values, profile)):
                by_values.evidence.append(_name_evidence(profile.name, rule))
                return by_values
        return named

    # 4. Values alone: names, quasi-identifiers, health information.
    names = _names_by_value(profile, values)
    if names is not None:
        return names
    if matched is not None:
        check, share = matched
        evidence = [_counted(share, len(values), check.what)]
        return _Draft(check.kind, check.role, "high" if share >= HIGH_SHARE else "medium", evidence)
    sex_share = _sex_share(values)
    if sex_share >= HIGH_SHARE:
        return _Draft(
            "sex", "quasi", "medium", [_counted(sex_share, len(values), "are sex or gender codes")]
        )
    by_values = _quasi_by_values(profile, values, today)
    if profile.inferred_type in ("date", "datetime"):
        # The profile found dates in 95 % of the values or more: a date column, surely.
        counted = by_values.evidence[:1] if by_values and by_values.kind == "event_date" else []
        evidence = ["values are dates", *counted, *_exact_date_evidence(profile)]
        return _Draft("event_date", "quasi", "high", evidence)
    if by_values is not None:
        return by_values

    # 5. Unique per row: a record number of some kind.
    if _unique(profile):
        evidence = [
            f"{_pct(profile.unique_share)} of the non-missing values are distinct "
            f"({profile.distinct} values): near-unique per row"
        ]
        return _Draft("unique_values", "direct", "medium", evidence)

    # 6. Text that is not long enough to be called free text may still carry identifiers,
    #    if it reads as prose: a category list is never scanned.
    scan = _embedded_scan(values) if prose else None
    if scan is not None and scan.share >= EMBEDDED_SHARE:
        return _Draft(
            "free_text_identifiers", "direct", "medium", _embedded_identifiers(scan),
            needs_review=True,
        )  # fmt: skip
    return _Draft("other", "other", "low", ["no identifying pattern in the name or the values"])


def _birth_year_evidence(profile: ColumnProfile, today: dt.date) -> list[str]:
    earliest = _as_float(profile.min)
    if earliest is not None and today.year - earliest > TOP_CODE_AGE:
        return [f"years of birth imply ages over {TOP_CODE_AGE}: top-code at 90+ recommended"]
    return []


def suggest_roles(
    profile: DatasetProfile, sample: pl.DataFrame, *, today: dt.date | None = None
) -> list[Suggestion]:
    """One suggestion per profiled column, in column order.

    `sample` holds some rows of the data set (a few hundred to a few thousand is plenty);
    columns missing from it are judged on their name and profile alone. `today` (default:
    the current date) is used to turn birth dates into ages.
    """
    on = today or dt.date.today()
    suggestions = []
    for column in profile.columns:
        values = _values(sample, column.name)
        draft = _draft_for(column, values, on)
        suggestions.append(
            Suggestion(
                column=column.name,
                role=draft.role,
                reason=_R.get(draft.kind, _R["other"]),
                confidence=draft.confidence,
                needs_review=draft.needs_review,
                evidence=tuple(draft.evidence),
                kind=draft.kind,
            )
        )
    return suggestions
