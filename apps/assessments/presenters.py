"""Charts and tables for the step pages (and, later, the Step 9 report), built from the
stored results — never by recomputing anything."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from apps.assessments.population import fraction_label
from apps.assessments.solution_words import solution_words
from apps.core.charts import (
    Chart,
    bar_chart,
    grouped_bar_chart,
    horizontal_bar_chart,
    line_chart,
    scatter_chart,
)

# Lower bound of each class-size bucket, in the engine's order (1, 2, 3–4, 5–9, 10–19, 20+).
_BUCKET_LOW = {
    "1": 1,
    "2": 2,
    "3-4": 3,
    "3–4": 3,
    "5-9": 5,
    "5–9": 5,
    "10-19": 10,
    "10–19": 10,
    "20+": 20,
}


def _html(chart: Chart) -> SafeString:
    return mark_safe(chart.as_html())  # noqa: S308  # the chart module escapes every label


def risk_charts(result: dict[str, Any], overall: dict[str, Any] | None) -> dict[str, SafeString]:
    histogram = result["profile"]["class_size_histogram"]
    # JSON columns do not keep key order (PostgreSQL's jsonb sorts keys by length).
    labels = sorted(histogram, key=lambda label: _BUCKET_LOW.get(label, 0))
    k = (overall or {}).get("target_class_size")
    highlight = [i for i, label in enumerate(labels) if k and _BUCKET_LOW.get(label, 0) < k]
    charts = {
        "histogram": _html(
            bar_chart(
                "Equivalence classes by size",
                labels,
                [histogram[label]["classes"] for label in labels],
                x_label="class size (records sharing the same quasi-identifier values)",
                y_label="number of classes",
                highlight=highlight,
                description=(
                    f"Highlighted: classes smaller than {k}, the size the target requires."
                    if k
                    else "Classes of size 1 are unique records."
                ),
            )
        ),
        "rows_histogram": _html(
            bar_chart(
                "Records by the size of their class",
                labels,
                [histogram[label]["rows"] for label in labels],
                x_label="class size",
                y_label="records",
                highlight=highlight,
                description="How many records sit in classes of each size.",
            )
        ),
    }
    drivers = result.get("drivers") or []
    at_risk = (result.get("records_at_risk") or {}).get("rows")
    if drivers and all(d.get("records_at_risk") is not None for d in drivers):
        charts["drivers"] = _html(
            horizontal_bar_chart(
                "Records at risk with each quasi-identifier left out",
                [d["left_out"] for d in drivers],
                [d["records_at_risk"] for d in drivers],
                value_format="{:,.0f}",
                x_label="records whose risk exceeds the target",
                description=(
                    (
                        f"With all quasi-identifiers {at_risk:,} records are at risk; "
                        if at_risk is not None
                        else ""
                    )
                    + "the shorter a bar, the more leaving that variable out (or generalizing "
                    "it) lowers the risk."
                ),
            )
        )
    elif drivers:
        charts["drivers"] = _html(
            horizontal_bar_chart(
                f"{result['risk_measure'].capitalize()} with each quasi-identifier left out",
                [d["left_out"] for d in drivers],
                [d["data_risk"] for d in drivers],
                value_format="{:.4f}",
                x_label=result["risk_measure"],
                description=(
                    f"With all quasi-identifiers the {result['risk_measure']} is "
                    f"{result['data_risk']:.4f}; the lower a bar, the more that variable "
                    "drives the risk."
                ),
            )
        )
    if drivers and any(d.get("contribution") for d in drivers):
        ranked = sorted(drivers, key=lambda d: -d.get("contribution", 0.0))
        charts["contributions"] = _html(
            horizontal_bar_chart(
                "Share of the records' uniqueness each quasi-identifier takes part in",
                [d["left_out"] for d in ranked],
                [d.get("contribution", 0.0) for d in ranked],
                value_format="{:.1%}",
                x_label="share of the SUDA score of the minimal sample uniques",
                description=(
                    "Minimal sample uniques are the smallest sets of variables on which a "
                    "record is already unique; a variable in many small ones makes records "
                    "easy to single out (Elliot et al. 2002, SUDA; as sdcMicro reports it)."
                ),
            )
        )
    return charts


def pareto_chart(search: dict[str, Any], chosen: dict[str, int] | None) -> SafeString | None:
    pareto = search.get("pareto") or []
    if not pareto:
        return None
    rows = search.get("rows") or 1
    points = []
    highlight = None
    hierarchies = [
        {"column": q, "level_labels": labels}
        for q, labels in (search.get("level_labels") or {}).items()
    ]
    for i, alternative in enumerate(pareto):
        levels = alternative["levels"]
        label = (
            solution_words(levels, hierarchies)
            if hierarchies
            else "(" + ", ".join(str(levels[q]) for q in search["quasi_identifiers"]) + ")"
        )
        points.append(
            (alternative["suppressed_rows"] / rows, alternative["information_loss"], label)
        )
        if chosen is not None and levels == chosen:
            highlight = i
    return _html(
        scatter_chart(
            "Alternatives: information loss against records suppressed",
            points,
            x_label="records suppressed (share of all records)",
            y_label=f"information loss ({search.get('metric', 'loss')})",
            highlight=highlight,
            connect=True,
            description="Each point is a solution that meets the target; none is better on both "
            "axes. Labels say how each quasi-identifier is generalized (where they fit; every "
            "point has its words in the table and on hover).",
        )
    )


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


def distribution_charts(
    distributions: list[dict[str, Any]], *, hide_below: int | None = None
) -> list[SafeString]:
    """Per quasi-identifier, records per generalized value before and after; ``hide_below``
    (the threshold's class size) for readers who may not see the data
    (`rare_values_folded`)."""
    charts = []
    for dist in distributions:
        labels, (before, after) = rare_values_folded(
            dist["labels"], [list(dist["before"]), list(dist["after"])], hide_below
        )
        charts.append(
            _html(
                grouped_bar_chart(
                    f"{dist['column']}: records per value, before and after",
                    labels,
                    [("before", before), ("after", after)],
                    x_label=f"{dist['column']} (generalized values)",
                    y_label="records",
                    description="Before: original values grouped by the generalized value they became. "
                    "After: records released with that value (suppressed records removed).",
                )
            )
        )
    return charts


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
    charts = []
    for v in variables:
        if v["status"] in {"removed", "masked"}:
            continue
        after_label = "after" if v["status"] == "kept" else "after (missing)"
        hide = hide_below if v["status"] == "suppressed" and v["kind"] != "numeric" else None
        labels, (before, after) = rare_values_folded(
            v["labels"], [list(v["before"]), list(v["after"])], hide
        )
        charts.append(
            _html(
                grouped_bar_chart(
                    f"{v['column']}: records per value, before and after",
                    labels,
                    [("before", before), (after_label, after)],
                    x_label=v["column"]
                    + (" (bins of the original range)" if v["kind"] == "numeric" else ""),
                    y_label="records",
                    description=(
                        f"{STATUS_NOTES.get(v['status'], '')}. Missing: {v['missing_before']:,} "
                        f"of {v['rows_before']:,} before, {v['missing_after']:,} of "
                        f"{v['rows_after']:,} released."
                    ),
                )
            )
        )
    return charts


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


def class_size_before_after(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> SafeString | None:
    """Equivalence classes by size on the original data (Step 4) and on the released file
    (Step 7), side by side and labelled as such."""
    if not before or not after:
        return None
    hist_before = before.get("class_size_histogram") or {}
    hist_after = after.get("class_size_histogram") or {}
    if not hist_before and not hist_after:
        return None  # (a release measured in persons has no record-level classes)
    labels = sorted(set(hist_before) | set(hist_after), key=lambda lb: _BUCKET_LOW.get(lb, 0))
    return _html(
        grouped_bar_chart(
            "Equivalence classes by size: original data and released file",
            labels,
            [
                (
                    "original data (Step 4)",
                    [hist_before.get(lb, {}).get("classes", 0) for lb in labels],
                ),
                (
                    "released file (Step 7)",
                    [hist_after.get(lb, {}).get("classes", 0) for lb in labels],
                ),
            ],
            x_label="class size (records sharing the same quasi-identifier values)",
            y_label="number of classes",
            description="Before: the original records on the confirmed quasi-identifiers. "
            "After: the de-identified file as released, suppressed records removed.",
        )
    )


def person_risk_chart(result: dict[str, Any] | None) -> SafeString | None:
    """Risk counted in persons against the adversary power (p = 1…5 and all events): max
    and average risk over persons, the chosen power marked. A power whose exact count was
    over the budget is a gap, never an estimate."""
    if not result or result.get("unit") != "person" or not result.get("by_power"):
        return None
    rows = result["by_power"]
    labels = ["all events" if r["power"] == "all" else f"p = {r['power']}" for r in rows]
    chosen = next((i for i, r in enumerate(rows) if r["power"] == result.get("power")), None)
    return _html(
        line_chart(
            "Risk against the adversary power",
            labels,
            [
                ("max risk", [r.get("max_risk") for r in rows]),
                ("average risk over persons", [r.get("average_risk") for r in rows]),
            ],
            value_format="{:.4f}",
            tick_format="{:.2f}",
            x_label="events of a person the adversary knows",
            y_label="risk",
            highlight=chosen,
            highlight_label="chosen",
            description=(
                "The more of a person's events an adversary knows, the fewer other persons "
                "hold them all: the risk can only rise with the power. The dashed rule marks "
                "the power chosen for this assessment."
            ),
        )
    )


def population_chart(population: dict[str, Any] | None) -> SafeString | None:
    """Population uniques against the sampling fraction, one line per model (as ARX's plot)."""
    curve = (population or {}).get("curve") or []
    if not curve:
        return None
    own = next((i for i, p in enumerate(curve) if p.get("release")), None)
    series = [
        (name, [p[key] for p in curve])
        for key, name in (
            ("dankar", "Dankar's rule"),
            ("pitman", "Pitman"),
            ("zayatz", "Zayatz"),
            ("snb", "SNB"),
        )
    ]
    return _html(
        line_chart(
            "Population uniques against the sampling fraction",
            [fraction_label(p["sampling_fraction"]) for p in curve],
            series,
            value_format="{:.4%}",
            tick_format="{:.0%}",
            x_label="sampling fraction (records released ÷ population)",
            y_label="share of the population",
            highlight=own,
            highlight_label="this release",
            description=(
                "How the estimated share of people unique in the population changes with the "
                "share of the population the release holds; a missing point means the model "
                "found no estimate. The dashed rule marks this release's sampling fraction."
            ),
        )
    )


# Class-size buckets as the risk of re-identification of a record in them (1/size).
_RISK_BANDS = {
    "1": "1 (unique)",
    "2": "0.5",
    "3-4": "0.25-0.33",
    "3–4": "0.25-0.33",
    "5-9": "0.11-0.2",
    "5–9": "0.11-0.2",
    "10-19": "0.053-0.1",
    "10–19": "0.053-0.1",
    "20+": "0.05 or less",
}


def record_risk_rows(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The distribution of record risks (ARX's view): records by their probability of
    re-identification 1/f, before (original data) and after (the release)."""
    hist_before = (before or {}).get("class_size_histogram") or {}
    hist_after = (after or {}).get("class_size_histogram") or {}
    rows_before = sum(b.get("rows", 0) for b in hist_before.values()) or 1
    rows_after = sum(b.get("rows", 0) for b in hist_after.values()) or 1
    labels = sorted(set(hist_before) | set(hist_after), key=lambda lb: _BUCKET_LOW.get(lb, 0))
    return [
        {
            "risk": _RISK_BANDS.get(label, label),
            "class_size": label,
            "before": hist_before.get(label, {}).get("rows", 0),
            "before_share": hist_before.get(label, {}).get("rows", 0) / rows_before,
            "after": hist_after.get(label, {}).get("rows", 0),
            "after_share": hist_after.get(label, {}).get("rows", 0) / rows_after,
        }
        for label in labels
    ]
