"""Step 8's charts on hand-made distributions: each one is exactly the grouped bar chart of
its records per value before and after, and a value held by fewer records than the
threshold's class size is counted in one bar, never named, for a reader who may not see
the data."""

from __future__ import annotations

from typing import Any

from apps.assessments.presenters import chart_html
from apps.assessments.utility_charts import distribution_charts, utility_charts
from apps.core.charts import grouped_bar_chart

DISTRIBUTIONS: list[dict[str, Any]] = [
    # "*" (the top of the hierarchy) is not a value of anyone: never folded, however small.
    {
        "column": "age",
        "labels": ["20-29", "30-39", "40-49", "*"],
        "before": [12, 3, 15, 2],
        "after": [12, 0, 15, 0],
    },
    {"column": "zip", "labels": ["K1P", "M5V", "H2X"], "before": [1, 2, 20], "after": [0, 0, 20]},
    # Fully suppressed: shown with the variables, not here.
    {"column": "diagnosis", "labels": ["J45", "E11"], "before": [9, 11], "after": [0, 0]},
]

VARIABLES: list[dict[str, Any]] = [
    {
        "column": "sex",
        "status": "kept",
        "kind": "categorical",
        "labels": ["F", "M", "X"],
        "before": [14, 15, 1],
        "after": [12, 15, 0],
        "missing_before": 0,
        "rows_before": 30,
        "missing_after": 0,
        "rows_after": 27,
    },
    {
        "column": "diagnosis",
        "status": "suppressed",
        "kind": "categorical",
        "labels": ["J45", "E11", "I10", "(missing)"],
        "before": [10, 11, 3, 6],  # J45: exactly the class size, kept
        "after": [0, 0, 0, 27],
        "missing_before": 6,
        "rows_before": 30,
        "missing_after": 27,
        "rows_after": 27,
    },
    {
        "column": "income",
        "status": "suppressed",
        "kind": "numeric",
        "labels": ["0-10000", "10000-20000"],
        "before": [2, 1234],
        "after": [0, 0],
        "missing_before": 0,
        "rows_before": 1236,
        "missing_after": 1236,
        "rows_after": 1236,
    },
    {"column": "email", "status": "removed", "kind": "categorical"},
    {"column": "name", "status": "masked", "kind": "categorical"},
]


def _chart(
    column: str,
    labels: list[str],
    before: list[int],
    after: tuple[str, list[int]],
    x_label: str,
    description: str,
) -> str:
    return chart_html(
        grouped_bar_chart(
            f"{column}: records per value, before and after",
            labels,
            [("before", before), after],
            x_label=x_label,
            y_label="records",
            description=description,
        )
    )


QI_NOTE = (
    "Before: original values grouped by the generalized value they became. "
    "After: records released with that value (suppressed records removed)."
)


def test_the_quasi_identifiers_charts_fold_the_rare_values_for_a_reader_who_may_not_see_them() -> (
    None
):
    charts = distribution_charts(DISTRIBUTIONS[:2], hide_below=10)
    assert charts == [
        _chart(
            "age",
            ["20-29", "40-49", "*", "1 value held by fewer than 10 records"],
            [12, 15, 2, 3],
            ("after", [12, 15, 0, 0]),
            "age (generalized values)",
            QI_NOTE,
        ),
        _chart(
            "zip",
            ["H2X", "2 values held by fewer than 10 records"],
            [20, 3],
            ("after", [20, 0]),
            "zip (generalized values)",
            QI_NOTE,
        ),
    ]
    assert "M5V" not in charts[1] and "K1P" not in charts[1]


def test_a_reader_who_may_see_the_data_sees_every_value() -> None:
    assert distribution_charts(DISTRIBUTIONS[:1]) == [
        _chart(
            "age",
            ["20-29", "30-39", "40-49", "*"],
            [12, 3, 15, 2],
            ("after", [12, 0, 15, 0]),
            "age (generalized values)",
            QI_NOTE,
        )
    ]


def _variables(hide_below: int | None) -> list[str]:
    return [
        # A kept column is released as it is: nothing to fold.
        _chart(
            "sex",
            ["F", "M", "X"],
            [14, 15, 1],
            ("after", [12, 15, 0]),
            "sex",
            "values as in the original; only suppressed records are gone. Missing: 0 of 30 "
            "before, 0 of 27 released.",
        ),
        _chart(
            "diagnosis",
            ["J45", "E11", "(missing)", "1 value held by fewer than 10 records"]
            if hide_below
            else ["J45", "E11", "I10", "(missing)"],
            [10, 11, 6, 3] if hide_below else [10, 11, 3, 6],
            ("after (missing)", [0, 0, 27, 0] if hide_below else [0, 0, 0, 27]),
            "diagnosis",
            "fully suppressed (*): every released value counts as missing; the original "
            "distribution is shown. Missing: 6 of 30 before, 27 of 27 released.",
        ),
        # Numbers are shown as bins, never folded.
        _chart(
            "income",
            ["0-10000", "10000-20000"],
            [2, 1234],
            ("after (missing)", [0, 0]),
            "income (bins of the original range)",
            "fully suppressed (*): every released value counts as missing; the original "
            "distribution is shown. Missing: 0 of 1,236 before, 1,236 of 1,236 released.",
        ),
    ]


def test_step_8_charts_fold_only_a_suppressed_categorical_columns_rare_values() -> None:
    result = {"distributions": DISTRIBUTIONS, "variable_distributions": VARIABLES}
    charts = utility_charts(result, hide_below=10)
    assert charts == {
        "distributions": distribution_charts(DISTRIBUTIONS[:2], hide_below=10),
        "variables": _variables(10),
        "not_released": ["email", "name"],
        "suppressed": ["diagnosis", "income"],
    }
    assert "I10" not in charts["variables"][1]
    assert utility_charts(result)["variables"] == _variables(None)
