"""Step 7's configuration as one typed value: what is masked and how, the suppression
limit, the metric, the maximum levels, the privacy models on sensitive variables, the CSV
formula guard, the further techniques, and the analyst's readings of what was found in
the release.

``parse`` is the one reader of settings sent by the page or the API: it returns a
``DeidConfig`` or refuses with a message naming the field. What needs the assessment (which
columns are direct identifiers, which hierarchies exist, which variables are sensitive) is
checked by ``apps.assessments.deidentify.deid_config_save``. A configuration is stored as
JSON through ``to_json`` and read back by ``from_json``, which accepts every shape stored
since the first version (keys missing, settings written before a rule existed: those are
refused when the file is written, not when they are read).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.assessments.release_forms.config import ReleaseForm
from apps.core.errors import ApplicationError

METRICS = ("loss", "entropy", "precision", "discernibility", "aecs")
MASKING_METHODS = ("remove", "hmac", "random", "encrypt", "mask", "scrub")
DEFAULT_SUPPRESSION_LIMIT = 0.05
# Of events, on data with several rows per person (LONGITUDINAL.md §3.2 step 4); the limit
# above then counts persons.
DEFAULT_EVENT_SUPPRESSION_LIMIT = 0.05
DEFAULT_METRIC = "loss"
PSEUDONYM_LENGTHS = (8, 64)  # hex characters: 32 to 256 bits (apps.engine.masking)
DEFAULT_PSEUDONYM_LENGTH = 32
MAX_KEPT_CHARACTERS = 1000  # of character masking; keeping more than a value has keeps it all

# The numbers each technique stores besides its variable, in the order it stores them
# (``apps.assessments.techniques.techniques_check``).
TECHNIQUE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "local_suppression": ("importance",),
    "rounding": ("base",),
    "top_bottom_coding": ("top", "bottom"),
    "microaggregation": ("k",),
    "noise": ("scale", "kind"),
    "rank_swap": ("percent",),
    "pram": ("retain",),
}


@dataclass(frozen=True)
class Masking:
    """How one direct identifier is released. The numbers are kept as they were given
    (None: not given), so a configuration reads back as it was stored."""

    method: str = "remove"
    length: int | None = None  # hex characters of a keyed or random pseudonym
    keep_leading: int | None = None  # characters kept by character masking
    keep_trailing: int | None = None

    @property
    def pseudonym_length(self) -> int:
        return int(self.length or DEFAULT_PSEUDONYM_LENGTH)

    @property
    def leading(self) -> int:
        return int(self.keep_leading or 0)

    @property
    def trailing(self) -> int:
        return int(self.keep_trailing or 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        for name in ("length", "keep_leading", "keep_trailing"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Masking:
        return cls(
            # as stored; a missing one reads "None", refused by name as before
            method=str(data.get("method")),
            length=data.get("length"),
            keep_leading=data.get("keep_leading"),
            keep_trailing=data.get("keep_trailing"),
        )


@dataclass(frozen=True)
class PrivacyModel:
    """One of ARX's models on a sensitive variable, as the engine's specification
    (``distinct-l=2``, ``recursive-cl=3,2``, ``equal-t=0.2``: ``apps.engine.sensitive``)."""

    column: str
    spec: str

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "spec": self.spec}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrivacyModel:
        return cls(column=str(data.get("column", "")), spec=str(data.get("spec", "")))


@dataclass(frozen=True)
class Technique:
    """One further technique (``apps.assessments.techniques``): local suppression with the
    importance of each quasi-identifier, or a technique on one other variable with its
    numbers (those of its kind in ``TECHNIQUE_PARAMETERS``; None: not given)."""

    technique: str
    column: str = ""
    importance: Mapping[str, float] = field(default_factory=dict)
    base: float | None = None
    top: float | None = None
    bottom: float | None = None
    k: int | None = None
    scale: float | None = None
    kind: str | None = None
    percent: float | None = None
    retain: float | None = None

    def to_json(self) -> dict[str, Any]:
        if self.technique == "local_suppression":
            return {"technique": self.technique, "importance": dict(self.importance)}
        out: dict[str, Any] = {"technique": self.technique, "column": self.column}
        for name in TECHNIQUE_PARAMETERS.get(self.technique, ()):
            out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Technique:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["technique"] = str(data.get("technique", ""))
        values["importance"] = dict(data.get("importance") or {})
        return cls(**values)


DATE_MODES = ("absolute", "anchored")
MAX_SHIFT_DAYS = 36_500  # as apps.engine.longitudinal.dates.DateSpec


@dataclass(frozen=True)
class PersonDates:
    """Event-level date columns of person-keyed data and how they are measured and
    released (LONGITUDINAL.md §2.7): ``absolute`` (day → month → quarter → year) or
    ``anchored`` (the first event date as a person-level quasi-identifier, later dates as
    intervals from it); ``shift_days``: each person's dates released shifted by a secret
    offset of up to ± that many days (measured anchored, on what the shift leaves)."""

    columns: tuple[str, ...] = ()
    mode: str = "absolute"
    shift_days: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "mode": self.mode, "shift_days": self.shift_days}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PersonDates:
        return cls(
            columns=tuple(str(c) for c in data.get("columns") or ()),
            mode=str(data.get("mode") or "absolute"),
            shift_days=data.get("shift_days"),
        )


@dataclass(frozen=True)
class EventCount:
    """The number of events per person as a derived person-level quasi-identifier
    (LONGITUDINAL.md §2.6): ``top`` is its top-code, "p95" (the 95th percentile of events
    per person, the default), a count, or None (no top-code)."""

    enabled: bool = True
    top: int | str | None = "p95"

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "top": self.top}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventCount:
        return cls(enabled=bool(data.get("enabled", True)), top=data.get("top", "p95"))


@dataclass(frozen=True)
class DeidConfig:
    """Step 7's configuration (module docstring). ``masking`` holds the direct identifiers
    as stored; ``apps.assessments.deidentify.deid_config`` completes it (every direct
    identifier not listed is removed)."""

    masking: Mapping[str, Masking] = field(default_factory=dict)
    suppression_limit: float = DEFAULT_SUPPRESSION_LIMIT
    # events suppressed (persons kept) on data with a person key: share of the events
    event_suppression_limit: float = DEFAULT_EVENT_SUPPRESSION_LIMIT
    metric: str = DEFAULT_METRIC
    max_levels: Mapping[str, int] = field(default_factory=dict)  # quasi-identifier → cap
    privacy_models: tuple[PrivacyModel, ...] = ()
    csv_formula_guard: bool = True
    # None: never set (the stored JSON has no such key); () once set and emptied
    techniques: tuple[Technique, ...] | None = None
    # the analyst's readings of detections in released text (apps.assessments.freetext)
    # and of findings on other released columns (apps.assessments.release_columns), per
    # column, as ``apps.assessments.release_reasons.review_entry`` writes them
    identifiers_reviewed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    columns_reviewed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # what Step 7 writes: de-identified records, synthetic data or a table (issue 28;
    # apps.assessments.release_forms), set apart like the techniques
    release_form: ReleaseForm = field(default_factory=ReleaseForm)
    # person-keyed data (issue 25): the dates (None: no date column declared) and the
    # event count (None: never chosen, not counted); Step 4 and Step 7 both read them
    dates: PersonDates | None = None
    event_count: EventCount | None = None

    def search_settings(self) -> tuple[Any, ...]:
        """What the search depends on: a change of any drops its result."""
        return (
            self.suppression_limit,
            self.metric,
            dict(self.max_levels),
            self.privacy_models,
            self.event_suppression_limit,
            self.dates,
            self.event_count,
        )

    def settings(self) -> tuple[Any, ...]:
        """The settings ``parse`` reads (not the techniques and readings set apart)."""
        return (
            {c: m for c, m in self.masking.items()},
            *self.search_settings(),
            self.csv_formula_guard,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "masking": {c: m.to_json() for c, m in self.masking.items()},
            "suppression_limit": self.suppression_limit,
            "event_suppression_limit": self.event_suppression_limit,
            "metric": self.metric,
            "max_levels": dict(self.max_levels),
            "privacy_models": [m.to_json() for m in self.privacy_models],
            "csv_formula_guard": self.csv_formula_guard,
            "identifiers_reviewed": {c: dict(r) for c, r in self.identifiers_reviewed.items()},
            "columns_reviewed": {c: dict(r) for c, r in self.columns_reviewed.items()},
        }
        if self.techniques is not None:
            out["techniques"] = [t.to_json() for t in self.techniques]
        if self.release_form != ReleaseForm():
            out["release_form"] = self.release_form.to_json()
        if self.dates is not None:
            out["dates"] = self.dates.to_json()
        if self.event_count is not None:
            out["event_count"] = self.event_count.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> DeidConfig:
        """A stored configuration, any of its shapes ({} before Step 7 was saved); no rule
        is checked here (module docstring)."""
        data = data or {}
        techniques = data.get("techniques")
        return cls(
            masking={
                str(c): Masking.from_json(m or {}) for c, m in (data.get("masking") or {}).items()
            },
            suppression_limit=data.get("suppression_limit", DEFAULT_SUPPRESSION_LIMIT),
            event_suppression_limit=data.get(
                "event_suppression_limit", DEFAULT_EVENT_SUPPRESSION_LIMIT
            ),
            metric=data.get("metric", DEFAULT_METRIC),
            max_levels=dict(data.get("max_levels") or {}),
            privacy_models=tuple(
                PrivacyModel.from_json(m) for m in data.get("privacy_models") or []
            ),
            csv_formula_guard=data.get("csv_formula_guard", True),
            techniques=None
            if techniques is None
            else tuple(Technique.from_json(t) for t in techniques),
            identifiers_reviewed=dict(data.get("identifiers_reviewed") or {}),
            columns_reviewed=dict(data.get("columns_reviewed") or {}),
            release_form=ReleaseForm.from_json(data.get("release_form")),
            dates=None if not data.get("dates") else PersonDates.from_json(data["dates"]),
            event_count=None
            if not data.get("event_count")
            else EventCount.from_json(data["event_count"]),
        )

    def replace(self, **changes: Any) -> DeidConfig:
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------- parsing


def masking_numbers_check(column: str, masking: Masking) -> None:
    """Refused when set, and when the file is written: a pseudonym of 3 hex characters has
    4,096 values (collisions, and a table an intruder can enumerate); 10^9 is not a
    length."""
    low, high = PSEUDONYM_LENGTHS
    length = masking.length
    if length is not None and (
        not isinstance(length, int) or isinstance(length, bool) or not low <= length <= high
    ):
        raise ApplicationError(
            f"The pseudonym length of '{column}' must be {low} to {high} hex characters, "
            f"not {length!r}.",
            {"column": column, "field": "length"},
        )
    for name, label in (("keep_leading", "leading"), ("keep_trailing", "trailing")):
        kept = getattr(masking, name)
        kept = 0 if kept is None else kept
        if (
            not isinstance(kept, int)
            or isinstance(kept, bool)
            or not 0 <= kept <= MAX_KEPT_CHARACTERS
        ):
            raise ApplicationError(
                f"The number of {label} characters kept of '{column}' must be a whole number "
                f"from 0 to {MAX_KEPT_CHARACTERS}, not {kept!r}.",
                {"column": column, "field": name},
            )


def masking_method_check(column: str, masking: Masking) -> None:
    if masking.method not in MASKING_METHODS:
        raise ApplicationError(
            f"'{masking.method}' is not a masking method ({column}).", {"column": column}
        )


def _masking(value: Any) -> dict[str, Masking]:
    if not isinstance(value, Mapping):
        raise ApplicationError(
            "The masking is a mapping of direct identifiers to their masking.",
            {"field": "masking"},
        )
    out = {}
    for column, spec in value.items():
        if not isinstance(spec, Mapping):
            raise ApplicationError(
                f"The masking of '{column}' is a method with its numbers.", {"column": column}
            )
        masking = Masking.from_json(spec)
        masking_method_check(str(column), masking)
        masking_numbers_check(str(column), masking)
        out[str(column)] = masking
    return out


def _share(value: Any, what: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        number = math.nan
    else:
        number = float(value)
    if not (math.isfinite(number) and 0 <= number <= 1):
        raise ApplicationError(f"{what} is a share between 0 and 1 (e.g. 0.05).", {"field": name})
    return number


def _suppression_limit(value: Any) -> float:
    return _share(value, "The suppression limit", "suppression_limit")


def _event_suppression_limit(value: Any) -> float:
    return _share(value, "The event suppression limit", "event_suppression_limit")


def _metric(value: Any) -> str:
    if value not in METRICS:
        raise ApplicationError(f"'{value}' is not an information-loss metric.", {"field": "metric"})
    return str(value)


def _max_levels(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise ApplicationError(
            "The maximum levels are a mapping of quasi-identifiers to levels.",
            {"field": "max_levels"},
        )
    out = {}
    for column, level in value.items():
        if isinstance(level, bool) or not isinstance(level, int):
            raise ApplicationError(
                f"The maximum level of '{column}' must be a whole number, not {level!r}.",
                {"column": column},
            )
        out[str(column)] = level
    return out


def _privacy_models(value: Any) -> tuple[PrivacyModel, ...]:
    """The models asked for; an entry without a specification asks for none (the page
    sends one per sensitive variable). Each is checked against the assessment's sensitive
    variables by ``apps.assessments.privacy_models.privacy_models_check``."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ApplicationError(
            "The privacy models are a list of variables with their model.",
            {"field": "privacy_models"},
        )
    out = []
    for entry in value:
        if not isinstance(entry, Mapping):
            raise ApplicationError(
                "A privacy model names its variable and its model.", {"field": "privacy_models"}
            )
        model = PrivacyModel(str(entry.get("column", "")), str(entry.get("spec", "")).strip())
        if model.spec:
            out.append(model)
    return tuple(out)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dates(value: Any) -> PersonDates | None:
    """The date settings (LONGITUDINAL.md §2.7): None or no column means no dates. A
    shift needs dates and is measured anchored; the anchored mode needs a date column."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ApplicationError(
            "The dates are the date columns, the date mode and the shift, if any.",
            {"field": "dates"},
        )
    columns = value.get("columns") or []
    if isinstance(columns, str | bytes) or not isinstance(columns, list | tuple):
        raise ApplicationError("The date columns are a list of columns.", {"field": "dates"})
    names = tuple(dict.fromkeys(str(c).strip() for c in columns if str(c).strip()))
    mode = value.get("mode") or "absolute"
    if mode not in DATE_MODES:
        raise ApplicationError(
            f"The date mode is absolute or anchored, not {mode!r}.", {"field": "date_mode"}
        )
    shift = value.get("shift_days")
    if shift is not None and (not _whole(shift) or not 1 <= shift <= MAX_SHIFT_DAYS):
        raise ApplicationError(
            f"The date shift is a whole number of days from 1 to {MAX_SHIFT_DAYS:,}, not "
            f"{shift!r}.",
            {"field": "shift_days"},
        )
    if not names:
        if shift is not None:
            raise ApplicationError(
                "A date shift needs the date columns it shifts: name them, or remove the shift.",
                {"field": "shift_days"},
            )
        if mode == "anchored":
            raise ApplicationError(
                "The anchored date mode needs at least one event-level date column: the "
                "first event date is the anchor (LONGITUDINAL.md §2.7).",
                {"field": "dates"},
            )
        return None
    if shift is not None and mode != "anchored":
        raise ApplicationError(
            "Shifted dates keep only the intervals between a person's dates and the first "
            "date to the shift's range: choose the anchored mode with a shift "
            "(LONGITUDINAL.md §2.7).",
            {"field": "date_mode"},
        )
    return PersonDates(columns=names, mode=str(mode), shift_days=shift)


def _event_count(value: Any) -> EventCount | None:
    """Whether the number of events per person is a quasi-identifier, and its top-code
    ("p95", a count of at least 1, or None)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ApplicationError(
            "The event count is whether it is counted and its top-code.",
            {"field": "event_count"},
        )
    top = value.get("top", "p95")
    if isinstance(top, str):
        text = top.strip().lower()
        if text.isdigit():
            top = int(text)
        elif text in ("", "none"):
            top = None
        elif text == "p95":
            top = "p95"
    if top is not None and top != "p95" and (not _whole(top) or top < 1):
        raise ApplicationError(
            f"The top-code of the event count is p95, a count of at least 1, or none, not {top!r}.",
            {"field": "event_count_top"},
        )
    return EventCount(enabled=bool(value.get("enabled", True)), top=top)


def parse(data: Mapping[str, Any], *, base: DeidConfig | None = None) -> DeidConfig:
    """Step 7's settings sent by the page or the API, as a ``DeidConfig``: each setting
    given replaces ``base``'s, each one left out keeps it (the techniques and the readings
    of findings are set apart, and always kept). Refused with a message naming the field."""
    config = base or DeidConfig()
    changes: dict[str, Any] = {}
    readers: dict[str, Callable[[Any], Any]] = {
        "masking": _masking,
        "suppression_limit": _suppression_limit,
        "event_suppression_limit": _event_suppression_limit,
        "metric": _metric,
        "max_levels": _max_levels,
        "privacy_models": _privacy_models,
        "csv_formula_guard": bool,
        "dates": _dates,
        "event_count": _event_count,
    }
    for name, read in readers.items():
        if name in data:
            changes[name] = read(data[name])
    return config.replace(**changes)
