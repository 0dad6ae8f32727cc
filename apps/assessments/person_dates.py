"""Dates and the number of events of person-keyed data (issue 25; LONGITUDINAL.md §2.6,
§2.7).

The officer declares the event-level date columns and how they are measured, once, in
Step 7's typed configuration (``configuration.PersonDates``, ``configuration.EventCount``,
read by ``configuration.parse`` for the page and the API alike); Step 4's risk, Step 7's
search and the release all read them from there:

* **absolute**: a date column is generalized along day → month → quarter → year → ``*``
  (the engine's calendar hierarchy, whatever hierarchy was saved for the column);
* **anchored**: the person's first event date (``anchor``) becomes a person-level
  quasi-identifier (day → month → year → 5 years → ``*``) and each date its interval in
  days from it (day → 7 → 30 → 90 → 365 days → ``*``); the release writes the anchor at
  its level in a column ``anchor`` and each date as its interval bin;
* **shift**: each person's dates are released shifted by a secret per-person offset of up
  to ± ``shift_days`` (``apps.engine.techniques.date_shift``, under a key made for the
  release and sealed with its other keys). What the shift leaves is measured: the
  intervals as they are (level 0, since the shifted dates show them to the day) and the
  anchor no finer than the shift's range (``DateSpec.anchor_min_level``). No offset is
  stored in a result or a report.

The number of events per person (``event_count``) is a derived person-level
quasi-identifier with ranges and a top-code (the 95th percentile by default).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments import steps
from apps.assessments.configuration import DeidConfig, PersonDates, parse
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.persons import data_levels
from apps.assessments.services import forget_search
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.longitudinal import DateSpec, EventCountSpec, LongitudinalProblem
from apps.engine.longitudinal.dates import ANCHOR, DateMode
from apps.engine.longitudinal.formulas import INTERVAL_WIDTHS
from apps.engine.longitudinal.problem import EVENT_COUNT
from apps.engine.masking import new_key
from apps.engine.techniques.date_shift import DateShiftParams, shift_dates

#: Names of the levels of the dimensions the engine builds (LONGITUDINAL.md §2.6, §2.7).
CALENDAR_LEVELS = ("day", "month", "quarter", "year", "*")
ANCHOR_LEVEL_NAMES = ("day", "month", "year", "5 years", "*")
INTERVAL_LEVEL_NAMES = ("days", *(f"{w}-day bins" for w in INTERVAL_WIDTHS), "*")
EVENT_COUNT_LEVELS = ("exact", "0 | 1 | 2-3 | 4-7 | 8-15 | 16+", "0 | 1 | 2+", "*")
#: Rows of a column that does not parse named in the refusal.
EXAMPLE_ROWS = 5


def person_dates(config: DeidConfig) -> PersonDates | None:
    return config.dates if config.dates is not None and config.dates.columns else None


def date_spec(config: DeidConfig) -> DateSpec | None:
    """The engine's date settings of the configuration (None: no date column)."""
    dates = person_dates(config)
    if dates is None:
        return None
    mode: DateMode = "anchored" if dates.mode == "anchored" else "absolute"
    return DateSpec(dates.columns, mode, dates.shift_days)


def event_count_spec(config: DeidConfig) -> EventCountSpec | None:
    """The engine's event-count settings (None: not counted)."""
    chosen = config.event_count
    if chosen is None or not chosen.enabled:
        return None
    return EventCountSpec(top=chosen.top)


def undated_rows(values: pl.Series) -> list[int]:
    """Row numbers (1 = the first data row) of the values that are not dates
    (``YYYY-MM-DD``, with or without a time; empty cells are missing dates, not errors)."""
    if values.dtype == pl.Date or isinstance(values.dtype, pl.Datetime):
        return []
    text = values.cast(pl.String).str.strip_chars()
    parsed = text.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)
    bad = parsed.is_null() & text.is_not_null() & (text != "")
    return [int(i) + 1 for i in bad.arg_true().to_list()]


def check_dates(frame: pl.DataFrame, dates: PersonDates | None, levels: Mapping[str, str]) -> None:
    """Each declared date column is an event-level quasi-identifier whose every value is a
    date; refused naming the column (and, for values that are not dates, a few rows)."""
    if dates is None:
        return
    for column in dates.columns:
        level = levels.get(column)
        if level is None:
            raise ApplicationError(
                f"'{column}' is declared a date column but is not a confirmed "
                "quasi-identifier (Step 2): confirm it, or remove it from the date columns.",
                {"field": "dates", "column": column},
            )
        if level != "event":
            raise ApplicationError(
                f"'{column}' is declared a date column but is person-level: the date columns "
                "are event-level (one date per event). Mark it event-level in Step 2, or "
                "remove it from the date columns.",
                {"field": "dates", "column": column},
            )
        if column not in frame.columns:
            continue
        rows = undated_rows(frame.get_column(column))
        if rows:
            shown = ", ".join(str(r) for r in rows[:EXAMPLE_ROWS])
            more = "…" if len(rows) > EXAMPLE_ROWS else ""
            raise ApplicationError(
                f"'{column}' is declared a date column, but {len(rows):,} of its values are "
                f"not dates written YYYY-MM-DD (rows {shown}{more}). Correct the data, or "
                "remove it from the date columns.",
                {"field": "dates", "column": column, "example_rows": rows[:EXAMPLE_ROWS]},
            )


def dates_state(config: DeidConfig) -> dict[str, Any]:
    """What a result, a page and a report say of the dates and the event count: the date
    columns, mode and the level names, the shift's range (never an offset)."""
    dates = person_dates(config)
    chosen = config.event_count
    return {
        "dates": None
        if dates is None
        else {
            "columns": list(dates.columns),
            "mode": dates.mode,
            "shift_days": dates.shift_days,
            "levels": list(CALENDAR_LEVELS)
            if dates.mode == "absolute"
            else {"anchor": list(ANCHOR_LEVEL_NAMES), "intervals": list(INTERVAL_LEVEL_NAMES)},
        },
        "event_count": None if chosen is None else {"enabled": chosen.enabled, "top": chosen.top},
    }


def derived_facts(problem: LongitudinalProblem) -> dict[str, Any]:
    """The derived quasi-identifiers of a prepared problem: the event count's top-code
    (None: not counted or not top-coded) and whether the anchor is one."""
    names = problem.names
    return {
        "event_count_used": EVENT_COUNT in names,
        "event_count_top": problem.event_count_top,
        "anchor_used": ANCHOR in names,
        "anchor_min_level": next(
            (d.min_level for d in problem.dimensions if d.name == ANCHOR), None
        ),
    }


def dimension_levels(
    problem: LongitudinalProblem, specs: Mapping[str, HierarchySpec]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Height and level names of every dimension of the search: a saved hierarchy's for
    an ordinary quasi-identifier, the engine's for dates, the anchor, intervals and the
    event count."""
    heights: dict[str, int] = {}
    labels: dict[str, list[str]] = {}
    for d in problem.dimensions:
        heights[d.name] = d.height
        if d.kind == "anchor":
            names: Sequence[str] = ANCHOR_LEVEL_NAMES
        elif d.kind == "interval":
            names = INTERVAL_LEVEL_NAMES
        elif d.kind == "event_count":
            names = EVENT_COUNT_LEVELS
        elif problem.dates is not None and d.name in problem.dates.columns:
            names = CALENDAR_LEVELS
        elif d.name in specs:
            names = specs[d.name].level_labels
        else:
            names = [str(level) for level in range(d.height + 1)]
        labels[d.name] = list(names)[: d.height + 1]
    return heights, labels


def fixed_levels(problem: LongitudinalProblem) -> dict[str, int]:
    """Dimensions the release cannot generalize, held at their finest level by the search:
    the number of events (a long table shows each person's rows; its top-code is the
    assumption that an adversary knows a person's count only up to it), and, with shifted
    dates, the intervals (the shifted dates show them to the day) and the anchor (known
    to the shift's range)."""
    fixed = {d.name: 0 for d in problem.dimensions if d.kind == "event_count"}
    dates = problem.dates
    if dates is not None and dates.shift_days is not None:
        fixed.update(
            {d.name: d.min_level for d in problem.dimensions if d.kind in ("anchor", "interval")}
        )
    return fixed


@transaction.atomic
def assessment_set_dates(
    *,
    assessment: Assessment,
    user: User | None = None,
    settings: Mapping[str, Any],
) -> list[str]:
    """Step 4 (page or API): ``settings`` holds ``dates`` (the date columns and mode, the
    shift) and/or ``event_count`` as JSON, read by ``configuration.parse`` (one left out
    is kept) and checked against the data. A change makes the
    measured risk stale and drops the search's solutions. Returns the stale steps."""
    assessment_editable(assessment)
    old = DeidConfig.from_json(assessment.deid_config)
    new = parse({k: v for k, v in settings.items() if k in ("dates", "event_count")}, base=old)
    if (new.dates, new.event_count) == (old.dates, old.event_count):
        return []
    if new.dates is not None:
        if not assessment.person_key:
            raise ApplicationError(
                "Date columns are declared for data with several rows per person: declare the "
                "person key in Step 2 first.",
                {"field": "dates"},
            )
        frame, levels = data_levels(assessment, [*new.dates.columns])
        check_dates(frame, new.dates, levels)
    assessment.deid_config = new.to_json()
    fields = ["deid_config", *forget_search(assessment)]
    stale = []
    if assessment.risk_result is not None:
        steps.mark_stale(assessment, "data-risk")
        stale.append("data-risk")
    if assessment.apply_result is not None:
        steps.mark_stale(assessment, "deidentify")
        stale.append("deidentify")
    assessment.save(update_fields=[*fields, "step_state", "updated_at"])
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.person_dates",
        obj=assessment,
        details={"version": assessment.version, **dates_state(new), "stale": stale},
    )
    return stale


# --------------------------------------------------------------------------- the release


def release_plan(
    problem: LongitudinalProblem, columns: Sequence[str]
) -> tuple[set[str], list[str]]:
    """What the release writes for the dates: the date columns left as they are (to be
    shifted: :func:`shift_release`), and the derived person-level columns added (the
    anchor at its level, in anchored mode without a shift). A data column named like the
    added one is refused rather than overwritten."""
    dates = problem.dates
    if dates is None:
        return set(), []
    if dates.shift_days is not None:
        return set(dates.columns), []
    if dates.mode != "anchored":
        return set(), []
    if ANCHOR in columns:
        raise ApplicationError(
            f"The data set has a column named '{ANCHOR}', the name the release gives the "
            "first event date in the anchored date mode: rename the column, or choose the "
            "absolute mode.",
            {"field": "dates", "column": ANCHOR},
        )
    return set(), [ANCHOR]


def shift_release(
    frame: pl.DataFrame, problem: LongitudinalProblem, person_key: str
) -> tuple[pl.DataFrame, dict[str, Any] | None]:
    """Each person's dates shifted by the person's secret offset (module docstring), the
    person identified by the key's value before it is pseudonymized; the secret to seal
    with the release's keys (None without a shift). Offsets are never returned."""
    dates = problem.dates
    if dates is None or dates.shift_days is None:
        return frame, None
    key = new_key()
    params = DateShiftParams(
        person=person_key, columns=tuple(dates.columns), max_days=dates.shift_days, key=key
    )
    try:
        shifted = shift_dates(frame, params).data
    except EngineError as exc:
        raise ApplicationError(f"The dates could not be shifted: {exc}") from None
    return shifted, {
        "key": base64.b64encode(key).decode(),
        "columns": list(dates.columns),
        "max_days": dates.shift_days,
    }


def remeasure_settings(
    problem: LongitudinalProblem, levels: Mapping[str, int]
) -> tuple[list[str], DateSpec | None, EventCountSpec | None, dict[str, int]]:
    """How the written file is measured again: the added person-level columns (the
    anchor), the dates as what a shift leaves, the event count at its chosen level with
    the top-code the search used."""
    extra: list[str] = []
    spec: DateSpec | None = None
    dates = problem.dates
    if dates is not None and dates.shift_days is not None:
        spec = DateSpec(dates.columns, "anchored", dates.shift_days)
    elif dates is not None and dates.mode == "anchored":
        extra.append(ANCHOR)
    counted = None
    at: dict[str, int] = {}
    if EVENT_COUNT in problem.names:
        counted = EventCountSpec(top=problem.event_count_top)
        at[EVENT_COUNT] = int(levels.get(EVENT_COUNT, 0))
    return extra, spec, counted, at


def released_dates(
    problem: LongitudinalProblem, levels: Mapping[str, int], labels: Mapping[str, list[str]]
) -> dict[str, Any]:
    """What the report says of the released dates and event count: the mode, the
    columns, each date dimension's level in words, the shift's range; never an offset."""
    dates = problem.dates
    words = {
        d.name: labels[d.name][levels[d.name]]
        for d in problem.dimensions
        if d.name in levels
        and (d.kind in ("anchor", "interval", "event_count") or (dates and d.name in dates.columns))
    }
    return {
        "dates": None
        if dates is None
        else {
            "mode": dates.mode,
            "columns": list(dates.columns),
            "shift_days": dates.shift_days,
            "levels": {n: w for n, w in words.items() if n != EVENT_COUNT},
        },
        "event_count": None
        if EVENT_COUNT not in problem.names
        else {"top_code": problem.event_count_top, "level": words.get(EVENT_COUNT)},
    }


def date_levels_shown(config: DeidConfig, column: str) -> dict[str, Any] | None:
    """What Step 7's page shows for a column the date settings handle (None: not a date
    column), instead of a saved hierarchy the search does not read: the mode, the levels
    the search generalizes along (absolute: the calendar's; anchored: the intervals' bins,
    with the anchor's), with a shift its range and what is measured (the intervals to the
    day, the anchor no finer than the range). ``height``: the highest level of the column."""
    dates = person_dates(config)
    if dates is None or column not in dates.columns:
        return None
    if dates.mode == "absolute":
        return {
            "mode": "absolute",
            "levels": list(CALENDAR_LEVELS),
            "height": len(CALENDAR_LEVELS) - 1,
            "anchor_levels": [],
            "shift_days": None,
        }
    spec = date_spec(config)
    assert spec is not None
    anchor = list(ANCHOR_LEVEL_NAMES)
    if dates.shift_days is not None:
        return {
            "mode": "shift",
            "levels": [INTERVAL_LEVEL_NAMES[0]],
            "height": 0,
            "anchor_levels": anchor[spec.anchor_min_level : spec.anchor_min_level + 1],
            "shift_days": dates.shift_days,
        }
    return {
        "mode": "anchored",
        "levels": list(INTERVAL_LEVEL_NAMES),
        "height": len(INTERVAL_LEVEL_NAMES) - 1,
        "anchor_levels": anchor,
        "shift_days": None,
    }


def engine_heights(config: DeidConfig) -> dict[str, int]:
    """Heights of the dimensions whose levels the engine builds, for the maximum levels
    of Step 7: declared dates (calendar: 4; anchored intervals: 5), the anchor (4), the
    event count (3)."""
    out: dict[str, int] = {}
    dates = person_dates(config)
    if dates is not None:
        anchored = dates.mode == "anchored"
        for column in dates.columns:
            out[column] = len(INTERVAL_LEVEL_NAMES if anchored else CALENDAR_LEVELS) - 1
        if anchored:
            out[ANCHOR] = len(ANCHOR_LEVEL_NAMES) - 1
    if config.event_count is not None and config.event_count.enabled:
        out[EVENT_COUNT] = len(EVENT_COUNT_LEVELS) - 1
    return out
