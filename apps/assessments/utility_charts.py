"""Step 8's charts (IPC 2016, step 8): each variable's records per value before and after
de-identification, for the utility page, the review page and the report. A value too rare
to name for a reader who may not see the data is counted, never named."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString

from apps.assessments.presenters import chart_html
from apps.core.charts import grouped_bar_chart

# Bars that are not a value of anyone: the top of a hierarchy and the missing value.
_NOT_A_VALUE = frozenset({"*", "(missing)"})


def rare_values_folded(
    labels: list[Any], series: list[list[int]], hide_below: int | None
) -> tuple[list[str], list[list[int]]]:
    """The bars of a per-value chart for someone who may not read the data: a value held by
    fewer than ``hide_below`` records before de-identification (the threshold's class size)
    is suppressed with its records, and its name would tell who was there, so such values
    become one bar that counts them ("3 values held by fewer than 10 records"). ``series``:
    the before and after counts, the first one deciding. ``None`` keeps every bar."""
    names = [str(label) for label in labels]
    if not hide_below or not series:
        return names, series
    first = series[0]
    kept = [i for i, name in enumerate(names) if first[i] >= hide_below or name in _NOT_A_VALUE]
    rare = [i for i in range(len(names)) if i not in set(kept)]
    if not rare:
        return names, series
    folded = [names[i] for i in kept] + [
        f"{len(rare)} value{'' if len(rare) == 1 else 's'} held by fewer than {hide_below} records"
    ]
    counts = [[values[i] for i in kept] + [sum(values[i] for i in rare)] for values in series]
    return folded, counts


def records_per_value_chart(
    dist: dict[str, Any],
    hide_below: int | None,
    *,
    after_label: str = "after",
    x_label: str,
    description: str,
) -> SafeString:
    """A column's records per value before and after de-identification (``dist``: its
    ``column``, ``labels``, ``before`` and ``after``); ``hide_below`` for readers who may not
    see the data (`rare_values_folded`)."""
    labels, (before, after) = rare_values_folded(
        dist["labels"], [list(dist["before"]), list(dist["after"])], hide_below
    )
    return chart_html(
        grouped_bar_chart(
            f"{dist['column']}: records per value, before and after",
            labels,
            [("before", before), (after_label, after)],
            x_label=x_label,
            y_label="records",
            description=description,
        )
    )


def distribution_charts(
    distributions: list[dict[str, Any]], *, hide_below: int | None = None
) -> list[SafeString]:
    """Per quasi-identifier, records per generalized value before and after; ``hide_below``
    (the threshold's class size) for readers who may not see the data
    (`rare_values_folded`)."""
    return [
        records_per_value_chart(
            dist,
            hide_below,
            x_label=f"{dist['column']} (generalized values)",
            description="Before: original values grouped by the generalized value they became. "
            "After: records released with that value (suppressed records removed).",
        )
        for dist in distributions
    ]


STATUS_NOTES = {
    "kept": "values as in the original; only suppressed records are gone",
    "suppressed": "fully suppressed (*): every released value counts as missing; the original "
    "distribution is shown",
    "removed": "not in the release",
    "masked": "replaced by pseudonyms: no distribution to compare",
}


def variable_charts(
    variables: list[dict[str, Any]], *, hide_below: int | None = None
) -> list[SafeString]:
    """Step 8: each variable's records per value before and after (apps.engine.utility).
    ``hide_below``: for readers who may not see the data, the values of a fully suppressed
    quasi-identifier held by fewer records are counted, not named (`rare_values_folded`);
    the other columns are released as they are, and numbers are shown as bins."""
    return [
        records_per_value_chart(
            v,
            hide_below if v["status"] == "suppressed" and v["kind"] != "numeric" else None,
            after_label="after" if v["status"] == "kept" else "after (missing)",
            x_label=v["column"]
            + (" (bins of the original range)" if v["kind"] == "numeric" else ""),
            description=(
                f"{STATUS_NOTES.get(v['status'], '')}. Missing: {v['missing_before']:,} "
                f"of {v['rows_before']:,} before, {v['missing_after']:,} of "
                f"{v['rows_after']:,} released."
            ),
        )
        for v in variables
        if v["status"] not in {"removed", "masked"}
    ]


def utility_charts(result: dict[str, Any], *, hide_below: int | None = None) -> dict[str, Any]:
    """Step 8's charts; ``hide_below`` for readers who may not see the data."""
    variables = result.get("variable_distributions") or []
    suppressed = {v["column"] for v in variables if v["status"] == "suppressed"}
    return {
        "distributions": distribution_charts(
            [d for d in result.get("distributions", []) if d["column"] not in suppressed],
            hide_below=hide_below,
        ),
        "variables": variable_charts(variables, hide_below=hide_below),
        "not_released": [v["column"] for v in variables if v["status"] in {"removed", "masked"}],
        "suppressed": sorted(suppressed),
    }
