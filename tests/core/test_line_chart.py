"""The line chart (population uniques against the sampling fraction): gaps, shapes, table."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from apps.core.charts import line_chart
from tests.core.test_charts import EVIL, NS, parse, points, texts


def test_lines_markers_gaps_and_table() -> None:
    chart = line_chart(
        "Uniques",
        ["0.1%", "1%", "10%"],
        [("Pitman", [0.1, None, 0.3]), ("Zayatz", [0.2, 0.25, 0.3])],
        x_label="fraction",
        y_label="share",
        highlight=1,
        highlight_label="this release",
    )
    root = parse(chart)
    lines = root.findall(".//svg:polyline[@class='series']", NS)
    # Pitman has a gap at 1%: two lone points, no line; Zayatz one line through 3 points
    assert len(lines) == 1 and len(lines[0].get("points", "").split()) == 3
    marks = points(root)
    assert len(marks) == 5
    assert sorted(m.tag.split("}")[1] for m in marks) == [
        "circle",
        "circle",
        "rect",
        "rect",
        "rect",
    ]
    assert root.find(".//svg:line[@class='highlight']", NS) is not None
    assert {"Pitman", "Zayatz", "This release", "fraction", "share"} <= set(texts(root))
    assert chart.table.headers == ("fraction", "Pitman", "Zayatz")
    assert chart.table.rows == (
        ("0.1%", "10.00%", "20.00%"),
        ("1% (this release)", "not available", "25.00%"),
        ("10%", "30.00%", "30.00%"),
    )


def test_escaped_and_validated() -> None:
    chart = line_chart(EVIL, [EVIL], [(EVIL, [0.5])])
    ET.fromstring(chart.svg)  # well-formed despite the label
    assert "<script>" not in chart.as_html()
    with pytest.raises(ValueError, match="2 values for 1 labels"):
        line_chart("t", ["a"], [("s", [1.0, 2.0])])
    with pytest.raises(ValueError, match="out of range"):
        line_chart("t", ["a"], [("s", [1.0])], highlight=3)


def test_nothing_available_gives_the_no_data_chart() -> None:
    chart = line_chart("t", ["a", "b"], [("s", [None, None])])
    assert "No data" in texts(parse(chart))
    assert chart.table.rows == (("a", "not available"), ("b", "not available"))
