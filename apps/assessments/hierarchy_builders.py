"""Building one hierarchy from a builder's settings (Step 7.2): the settings checked as
JSON gives them (the type of every setting of the kind), then the engine's builder of the
kind (intervals, dates, prefixes, categories, an ARX file or text, keep-or-suppress, ICD
codes) run over the column's distinct values, codes for a missing value added as groups
of their own, and every engine error turned into a rule violation naming the column; and
the readable names of the levels, for the pages and the report. Pure: it reads no data
set and saves nothing; the assessment's saved specs are ``apps.assessments.hierarchies``."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from apps.assessments.hierarchy_codes import CODE_KINDS, code_hierarchy, code_level_labels
from apps.assessments.models import HierarchySpec
from apps.core.errors import ApplicationError
from apps.engine import hierarchies as h
from apps.engine.errors import EngineError
from apps.engine.hierarchy_files import parse_hierarchy_text, uncovered, uncovered_message

Kind = HierarchySpec.Kind


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_params(column: str, kind: str, params: dict[str, Any]) -> None:
    """The builder settings as JSON gives them: the type of every setting of this kind.

    The API takes ``params`` as free JSON, so a string where a list belongs would otherwise
    be read letter by letter, and a list where a number belongs would fail deep inside."""

    def refuse(field: str, rule: str) -> ApplicationError:
        return ApplicationError(
            f"Hierarchy of '{column}': {field} must be {rule}.", {"column": column, "field": field}
        )

    def numbers(field: str, test: Any, rule: str) -> None:
        value = params.get(field)
        if not isinstance(value, list) or not value or not all(map(test, value)):
            raise refuse(field, rule)

    def optional(field: str, test: Any, rule: str) -> None:
        if params.get(field) is not None and not test(params[field]):
            raise refuse(field, rule)

    if kind == Kind.INTERVAL:
        numbers("widths", lambda w: _is_number(w) and w > 0, "a list of positive numbers")
        optional("bottom", _is_number, "a number")
        optional("top", _is_number, "a number")
        optional("bottom_label", lambda t: isinstance(t, str), "text")
        optional("top_label", lambda t: isinstance(t, str), "text")
    elif kind == Kind.DATE:
        optional(
            "levels",
            lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            f"a list of date levels ({', '.join(h.DATE_LEVELS)})",
        )
        optional("date_format", lambda t: isinstance(t, str), "text (a strptime format)")
    elif kind == Kind.PREFIX:
        numbers("lengths", lambda n: _is_whole(n) and n >= 0, "a list of whole numbers")
    elif kind == Kind.CATEGORICAL:
        optional("keep_ungrouped", lambda b: isinstance(b, bool), "true or false")
    elif kind in CODE_KINDS:
        optional("lenient", lambda b: isinstance(b, bool), "true or false")
    optional(
        "codes",
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "a list of values (codes for a missing value, each kept as a group of its own)",
    )


def build_hierarchy(
    column: str, kind: str, params: dict[str, Any], values: list[str | None], arx_text: str = ""
) -> h.Hierarchy:
    """Build the engine's hierarchy; its errors (uncovered values, bad widths…) become
    rule violations naming the column."""
    check_params(column, kind, params)
    codes = [c for c in dict.fromkeys(params.get("codes") or []) if c in set(values)]
    if codes:
        values = [v for v in values if v not in set(codes)]
    hierarchy = _build(column, kind, params, values, arx_text)
    if not codes:
        return hierarchy
    # Each code a group of its own at every level, up to the top.
    top = hierarchy.rows[0][-1]
    rows = [*hierarchy.rows, *((c, *[c] * (hierarchy.height - 1), top) for c in codes)]
    try:
        return h.Hierarchy(column, tuple(rows))
    except EngineError as exc:
        raise ApplicationError(f"Hierarchy of '{column}': {exc}", {"column": column}) from None


def _check_covered(hierarchy: h.Hierarchy, column: str, values: list[str | None]) -> None:
    """Every value of the column is a leaf: refused with the command line's message
    (``hierarchy_files.uncovered_message``: how many, at most three, cut short)."""
    missing = uncovered(hierarchy, [pl.Series(values, dtype=pl.String)])
    if missing:
        message = uncovered_message(column, missing, "the text or file given")
        raise ApplicationError(
            f"H{message[1:]}.",
            {"column": column, "uncovered": len(missing)},
        )


def _build(
    column: str, kind: str, params: dict[str, Any], values: list[str | None], arx_text: str
) -> h.Hierarchy:
    try:
        if kind == Kind.INTERVAL:
            return h.interval_hierarchy(
                column,
                values,
                [float(w) for w in params["widths"]],
                bottom=params.get("bottom"),
                top=params.get("top"),
                bottom_label=params.get("bottom_label") or None,
                top_label=params.get("top_label") or None,
            )
        if kind == Kind.DATE:
            return h.date_hierarchy(
                column,
                values,
                levels=params.get("levels") or h.DATE_LEVELS,
                date_format=params.get("date_format") or None,
            )
        if kind == Kind.PREFIX:
            return h.prefix_hierarchy(column, values, [int(n) for n in params["lengths"]])
        if kind == Kind.CATEGORICAL:
            return h.categorical_hierarchy(
                column, values, params["levels"], keep_ungrouped=bool(params.get("keep_ungrouped"))
            )
        if kind == Kind.ARX:
            named = f"Hierarchy of '{column}' (the text or file given)"
            try:
                hierarchy = parse_hierarchy_text(arx_text, column, named=named, sep=";", cli=False)
            except EngineError as exc:  # it names the column and the line already
                raise ApplicationError(str(exc), {"column": column}) from None
            _check_covered(hierarchy, column, values)
            hierarchy.lookup(pl.Series(values, dtype=pl.String))
            return hierarchy
        if kind == Kind.SUPPRESS:
            return h.suppression_hierarchy(column, values)
        if kind in CODE_KINDS:
            return code_hierarchy(column, kind, params, values)
    except EngineError as exc:
        raise ApplicationError(f"Hierarchy of '{column}': {exc}", {"column": column}) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise ApplicationError(
            f"Hierarchy of '{column}': incomplete settings ({exc}).", {"column": column}
        ) from None
    raise ApplicationError(f"'{kind}' is not a kind of hierarchy.", {"column": column})


def level_labels(kind: str, params: dict[str, Any], height: int) -> list[str]:
    """Readable names of a hierarchy's levels, for the pages and the report."""
    codes = code_level_labels(kind, height)
    if codes is not None:
        return codes
    if kind == Kind.INTERVAL:
        names = [f"intervals of {float(w):g}" for w in params.get("widths", [])]
    elif kind == Kind.DATE:
        names = list(params.get("levels") or h.DATE_LEVELS)
    elif kind == Kind.PREFIX:
        names = [f"first {n} character(s)" for n in params.get("lengths", [])]
    else:
        names = []
    names = names[:height]
    if len(names) < height:
        names += [f"level {i}" for i in range(len(names) + 1, height)] + ["suppressed (*)"]
    return ["original", *names]
