"""The report's charts (Steps 4, 7 and 8: classes and risks, the search's front, the
per-value distributions), drawn from the stored results and made ready for print."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from apps.assessments.hierarchies import class_threshold
from apps.assessments.models import Assessment
from apps.assessments.presenters import (
    class_size_before_after,
    pareto_chart,
    person_risk_chart,
    population_chart,
    risk_charts,
)
from apps.assessments.utility_charts import distribution_charts


def report_charts(
    *,
    assessment: Assessment,
    risk: dict[str, Any],
    overall: dict[str, Any] | None,
    search: dict[str, Any],
    applied: dict[str, Any],
) -> dict[str, Any]:
    """Every chart of the report; ``risk`` with its class-size buckets in order of size
    (`with_ordered_buckets`)."""
    charts: dict[str, Any] = {}
    if risk.get("profile"):
        charts["risk"] = {k: _for_print(v) for k, v in risk_charts(risk, overall).items()}
    charts["population"] = _for_print(population_chart(risk.get("population")))
    charts["persons"] = _for_print(person_risk_chart(risk))
    if search:
        charts["pareto"] = _for_print(pareto_chart(search, assessment.chosen_levels))
    charts["class_sizes"] = _for_print(
        class_size_before_after(applied.get("risk_before"), applied.get("risk_after"))
    )
    charts["distributions"] = [
        _for_print(c)
        for c in distribution_charts(
            applied.get("distributions") or [], hide_below=class_threshold(assessment)
        )
    ]
    return charts


# The charts' inline style (max-width with height:auto) makes WeasyPrint draw every chart as
# a square; without it the print stylesheet scales them by their own aspect ratio.
_SCREEN_SVG_STYLE = ' style="max-width:100%;height:auto"'


def _for_print(chart: SafeString | None) -> SafeString | None:
    if chart is None:
        return None
    return mark_safe(str(chart).replace(_SCREEN_SVG_STYLE, ""))  # noqa: S308  # already escaped


def _bucket_low(label: str) -> int:
    digits = ""
    for char in label:
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else 0


def with_ordered_buckets(result: dict[str, Any]) -> dict[str, Any]:
    profile = result.get("profile") or {}
    histogram = profile.get("class_size_histogram")
    if not histogram:
        return result
    ordered = dict(sorted(histogram.items(), key=lambda item: _bucket_low(item[0])))
    return {**result, "profile": {**profile, "class_size_histogram": ordered}}
