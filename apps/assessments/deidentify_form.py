"""Step 7's settings form read: the page's text fields turned into the numbers and
structures the services take, each with a message naming the field when it is not one (a
"nan" or "abc" must never reach a service as a server error). The settings then go
through the one parser the API uses too (``apps.assessments.configuration.parse``); a
hierarchy builder's fields become its spec's params, a technique's fields one technique
entry (checked by ``techniques_set``). The page itself and its actions are in
``views_deidentify``."""

from __future__ import annotations

import math
import re
from typing import Any

from apps.assessments import deidentify
from apps.assessments.configuration import DeidConfig, parse
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.privacy_models import spec_from_form
from apps.assessments.selectors import quasi_identifiers, sensitive_columns
from apps.core.errors import ApplicationError
from apps.engine.hierarchies import DATE_LEVELS


def _number(text: str, label: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ApplicationError(f"{label} must be a number, not '{text.strip()}'.")
    return value


def whole_number(text: str, label: str) -> int:
    """A whole number 0 or more, of at most nine digits (levels, characters kept)."""
    if not re.fullmatch(r"\+?\d{1,9}", text.strip()):
        raise ApplicationError(f"{label} must be a whole number 0 or more, not '{text.strip()}'.")
    return int(text.strip())


def _numbers(text: str, label: str, read: Any, what: str = "numbers") -> list[Any]:
    parts = [part for part in text.replace(";", ",").split(",") if part.strip()]
    try:
        return [read(part, label) for part in parts]
    except ApplicationError:
        raise ApplicationError(
            f"{label} must be {what} separated by commas, not '{text.strip()}'."
        ) from None


def hierarchy_params_from_form(post: Any, kind: str) -> tuple[dict[str, Any], str]:
    """Builder settings from the form (text fields) into the spec's params."""
    if kind == HierarchySpec.Kind.INTERVAL:
        params: dict[str, Any] = {"widths": _numbers(post.get("widths", ""), "Widths", _number)}
        for key in ("bottom", "top"):
            if post.get(key, "").strip():
                params[key] = _number(post[key], key.capitalize())
        for key in ("bottom_label", "top_label"):
            if post.get(key, "").strip():
                params[key] = post[key].strip()
        return params, ""
    if kind == HierarchySpec.Kind.DATE:
        return {"levels": [lv for lv in DATE_LEVELS if post.get(f"date_{lv}")]}, ""
    if kind == HierarchySpec.Kind.PREFIX:
        lengths = _numbers(post.get("lengths", ""), "Prefix lengths", whole_number, "whole numbers")
        return {"lengths": lengths}, ""
    if kind == HierarchySpec.Kind.CATEGORICAL:
        groups: dict[str, list[str]] = {}
        for line in post.get("groups", "").splitlines():
            if ":" in line:
                name, members = line.split(":", 1)
                groups[name.strip()] = [m.strip() for m in members.split(",") if m.strip()]
        return {"levels": [groups], "keep_ungrouped": bool(post.get("keep_ungrouped"))}, ""
    if kind in (HierarchySpec.Kind.ICD10, HierarchySpec.Kind.ICD9CM):
        return {"lenient": bool(post.get(f"lenient_{kind}"))}, ""
    if kind == HierarchySpec.Kind.ARX:
        upload = post.get("arx_file")
        return {}, upload or post.get("arx_text", "")
    return {}, ""


def technique_from_form(post: Any, assessment: Assessment) -> dict[str, Any]:
    """One technique from the Step 7 form (values checked by techniques_set)."""
    kind = post.get("technique", "")
    if kind == "local_suppression":
        return {
            "technique": kind,
            "importance": {
                q: post.get(f"importance-{q}", "1") or "1" for q in quasi_identifiers(assessment)
            },
        }
    entry: dict[str, Any] = {"technique": kind, "column": post.get(f"column-{kind}", "")}
    for key in ("base", "top", "bottom", "k", "scale", "kind", "percent", "retain"):
        value = post.get(f"{kind}-{key}", "")
        if value.strip():
            entry[key] = value.strip()
    return entry


def config_from_form(post: Any, assessment: Assessment) -> DeidConfig:
    """Step 7's settings form: its text fields read as numbers (a message naming the field
    otherwise), then parsed as the API's are (``apps.assessments.configuration.parse``)."""
    assessment_editable(assessment)  # a frozen version is refused before its fields are read
    masking = {
        column: {
            "method": post.get(f"mask-{column}", "remove"),
            "keep_leading": whole_number(
                post.get(f"lead-{column}") or "0", f"Leading characters kept of '{column}'"
            ),
            "keep_trailing": whole_number(
                post.get(f"trail-{column}") or "0", f"Trailing characters kept of '{column}'"
            ),
        }
        for column in deidentify.direct_identifiers(assessment)
    }
    max_levels = {
        c.removeprefix("maxlevel-"): whole_number(
            v, f"The maximum level of '{c.removeprefix('maxlevel-')}'"
        )
        for c, v in post.dict().items()
        if c.startswith("maxlevel-") and v.strip()
    }
    try:
        limit = _number(post.get("suppression_limit", "5"), "The suppression limit") / 100
    except ApplicationError:
        raise ApplicationError("The suppression limit is a percentage, e.g. 5.") from None
    events = {}
    if "event_suppression_limit" in post:
        label = "The event suppression limit"
        events = {"event_suppression_limit": _number(post["event_suppression_limit"], label) / 100}
    privacy_models = [
        {
            "column": column,
            "spec": spec_from_form(
                post.get(f"pm-kind-{column}", ""),
                post.get(f"pm-l-{column}", ""),
                post.get(f"pm-c-{column}", ""),
                post.get(f"pm-t-{column}", ""),
            ),
        }
        for column in sensitive_columns(assessment)
    ]
    return parse(
        {
            "masking": masking,
            "suppression_limit": limit,
            "metric": post.get("metric", "loss"),
            "max_levels": max_levels,
            "privacy_models": privacy_models,
            "csv_formula_guard": post.get("csv_formula_guard") == "on",
            **events,
        },
        base=deidentify.deid_config(assessment),
    )
