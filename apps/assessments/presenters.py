"""Charts and tables for the step pages and the Step 9 report, built from the stored
results — never by recomputing anything. Step 8's per-value charts are in
``utility_charts``; a solution in words is in ``solution_words``."""

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


def chart_html(chart: Chart) -> SafeString:
    return mark_safe(chart.as_html())  # noqa: S308  # the chart module escapes every label


def risk_charts(result: dict[str, Any], overall: dict[str, Any] | None) -> dict[str, SafeString]:
    histogram = result["profile"]["class_size_histogram"]
    # JSON columns do not keep key order (PostgreSQL's jsonb sorts keys by length).
    labels = sorted(histogram, key=lambda label: _BUCKET_LOW.get(label, 0))
    k = (overall or {}).get("target_class_size")
    highlight = [i for i, label in enumerate(labels) if k and _BUCKET_LOW.get(label, 0) < k]
    charts = {
        "histogram": chart_html(
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
        "rows_histogram": chart_html(
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
        charts["drivers"] = chart_html(
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
        charts["drivers"] = chart_html(
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
        charts["contributions"] = chart_html(
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
    return chart_html(
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
    return chart_html(
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
    return chart_html(
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
    return chart_html(
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
