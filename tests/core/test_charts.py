"""Server-side SVG charts: well-formed, accessible, escaped, readable without colour."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from apps.core.charts import (
    Chart,
    bar_chart,
    grouped_bar_chart,
    horizontal_bar_chart,
    nice_ticks,
    scatter_chart,
)

NS = {"svg": "http://www.w3.org/2000/svg"}
EVIL = '<script>&"x"'


def parse(chart: Chart) -> ET.Element:
    root = ET.fromstring(chart.svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("role") == "img"
    assert root.get("viewBox", "").startswith("0 0 ")
    assert "DejaVu Sans" in root.get("font-family", "")
    return root


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iterfind(".//svg:text", NS)]


def bars(root: ET.Element) -> list[ET.Element]:
    return root.findall(".//svg:rect[@class='bar']", NS)


def points(root: ET.Element) -> list[ET.Element]:
    return [e for e in root.iter() if "point" in (e.get("class") or "").split()]


def pattern_ids(root: ET.Element) -> set[str]:
    return {p.get("id", "") for p in root.iterfind(".//svg:pattern", NS)}


def test_bar_chart_structure_labels_and_table() -> None:
    chart = bar_chart(
        "Class sizes", ["1", "2", "3", "4"], [3, 1200, 0, 45], x_label="Size", y_label="Rows"
    )
    root = parse(chart)
    assert root.find("svg:title", NS) is not None
    assert root.find("svg:title", NS).text == "Class sizes"  # type: ignore[union-attr]
    desc = root.find("svg:desc", NS)
    assert desc is not None and "Highest: 2 (1,200)" in (desc.text or "")
    assert len(bars(root)) == 4
    assert {"3", "1,200", "0", "45"} <= set(texts(root))
    assert {"Size", "Rows"} <= set(texts(root))
    assert chart.table.headers == ("Size", "Rows")
    assert chart.table.rows == (("1", "3"), ("2", "1,200"), ("3", "0"), ("4", "45"))
    assert not pattern_ids(root)  # nothing highlighted, no legend or hatching needed


def test_highlighted_bars_use_the_hatch_pattern_and_are_named() -> None:
    chart = bar_chart(
        "Class sizes",
        ["1", "2", "3", "4"],
        [3, 4, 10, 20],
        highlight={0, 1},
        highlight_label="below k=5",
    )
    root = parse(chart)
    (pid,) = pattern_ids(root)
    fills = [b.get("fill") for b in bars(root)]
    assert fills[:2] == [f"url(#{pid})"] * 2
    assert all(f and not f.startswith("url(") for f in fills[2:])
    assert "Below k=5" in texts(root)  # legend text
    assert [r[0] for r in chart.table.rows] == ["1 (below k=5)", "2 (below k=5)", "3", "4"]
    assert "(highlighted)" in bar_chart("t", ["a"], [1], highlight=[0]).table.rows[0][0]


def test_user_labels_are_escaped_everywhere() -> None:
    charts = [
        bar_chart(EVIL, [EVIL, "ok"], [1, 2], x_label=EVIL, description=EVIL),
        grouped_bar_chart("t", [EVIL], [(EVIL, [1.0]), ("b", [2.0])]),
        horizontal_bar_chart("t", [EVIL], [0.5], value_format="{:.0%}", y_label=EVIL),
        scatter_chart("t", [(0.1, 0.2, EVIL)], x_label=EVIL, y_label="y", highlight=0),
    ]
    for chart in charts:
        html = chart.as_html()
        assert "<script" not in chart.svg and "<script" not in html
        assert "&lt;script&gt;&amp;&quot;x&quot;" in html
        root = parse(chart)  # well-formed despite the label
        everything = " ".join(root.itertext())
        assert EVIL in everything


def test_characters_invalid_in_xml_are_dropped() -> None:
    root = parse(bar_chart("t\x00", ["a\x07b"], [1]))
    assert "ab" in texts(root)


def test_long_labels_are_truncated_with_the_full_label_in_a_tooltip() -> None:
    label = "Toronto Central Local Health Integration Network"
    root = parse(bar_chart("t", [label, "b"], [1, 2]))
    assert label not in texts(root)
    assert any(t.startswith("Toronto Central") and t.endswith("\u2026") for t in texts(root))
    titles = [t.text for t in root.iterfind(".//svg:g/svg:title", NS)]
    assert f"{label}: 1" in titles


def test_grouped_bars_legend_patterns_and_table() -> None:
    chart = grouped_bar_chart(
        "Age before and after",
        ["0-9", "10-19", "20+"],
        [("Before", [10, 20, 30]), ("After", [12, 18, 31])],
        x_label="Age",
    )
    root = parse(chart)
    assert len(bars(root)) == 6
    assert {"Before", "After"} <= set(texts(root))
    assert {"10", "20", "30", "12", "18", "31"} <= set(texts(root))
    fills = [b.get("fill") for b in bars(root)]
    before, after = fills[0::2], fills[1::2]
    assert len(set(before)) == 1 and len(set(after)) == 1 and before[0] != after[0]
    assert str(after[0]).startswith("url(#")  # second series hatched, not just another hue
    assert chart.table.headers == ("Age", "Before", "After")
    assert chart.table.rows == (("0-9", "10", "12"), ("10-19", "20", "18"), ("20+", "30", "31"))


def test_grouped_series_must_match_labels() -> None:
    with pytest.raises(ValueError):
        grouped_bar_chart("t", ["a", "b"], [("s", [1.0])])
    with pytest.raises(ValueError):
        bar_chart("t", ["a"], [1, 2])
    with pytest.raises(ValueError):
        bar_chart("t", ["a"], [1], highlight=[3])


def test_horizontal_bars_keep_the_given_order() -> None:
    labels = ["age", "sex", "postal code"]
    chart = horizontal_bar_chart(
        "Risk with each QI left out",
        labels,
        [0.31, 0.12, 0.2],
        value_format="{:.1%}",
        x_label="Maximum risk",
        highlight=[1],
    )
    root = parse(chart)
    rects = bars(root)
    assert len(rects) == 3
    ys = [float(r.get("y", "0")) for r in rects]
    assert ys == sorted(ys)
    assert {"31.0%", "12.0%", "20.0%"} <= set(texts(root))
    assert rects[1].get("fill", "").startswith("url(#")
    assert chart.table.rows == (
        ("age", "31.0%"),
        ("sex (highlighted)", "12.0%"),
        ("postal code", "20.0%"),
    )


def test_scatter_points_labels_and_highlight_shape() -> None:
    pts = [(0.0, 0.5, "A"), (0.05, 0.2, "B"), (0.02, 0.3, "C")]
    chart = scatter_chart(
        "Pareto front",
        pts,
        x_label="Rows suppressed",
        y_label="Information loss",
        highlight=1,
        connect=True,
    )
    root = parse(chart)
    marks = points(root)
    assert len(marks) == 3
    shapes = sorted(m.tag.split("}")[1] for m in marks)
    assert shapes == ["circle", "circle", "path"]  # the chosen point is a diamond
    assert {"A", "B", "C"} <= set(texts(root))
    assert "Selected: B" in texts(root)
    assert root.find(".//svg:polyline", NS) is not None
    line = root.find(".//svg:polyline", NS).get("points", "").split()  # type: ignore[union-attr]
    xs = [float(p.split(",")[0]) for p in line]
    assert len(xs) == 3 and xs == sorted(xs)
    assert chart.table.headers == ("Label", "Rows suppressed", "Information loss")
    assert chart.table.rows == (
        ("A", "0.00%", "0.500"),
        ("B (selected)", "5.00%", "0.200"),
        ("C", "2.00%", "0.300"),
    )
    plain = parse(scatter_chart("t", pts, x_label="x", y_label="y"))
    assert plain.find(".//svg:polyline", NS) is None
    assert [m.tag.split("}")[1] for m in points(plain)] == ["circle"] * 3


def test_empty_data_gives_a_valid_no_data_chart() -> None:
    for chart in (
        bar_chart("Nothing", [], []),
        grouped_bar_chart("Nothing", [], []),
        horizontal_bar_chart("Nothing", [], []),
        scatter_chart("Nothing", [], x_label="x", y_label="y"),
    ):
        root = parse(chart)
        assert "No data" in texts(root)
        assert chart.table.rows == ()
        assert chart.table.headers
        assert "<tbody></tbody>" in chart.as_html()


def test_all_zero_and_single_values() -> None:
    root = parse(bar_chart("Zeros", ["a", "b"], [0, 0]))
    assert len(bars(root)) == 2 and texts(root).count("0") >= 2
    root = parse(scatter_chart("One", [(0.1, 0.1, "only")], x_label="x", y_label="y"))
    assert len(points(root)) == 1


def test_as_html_figure_caption_and_table() -> None:
    chart = bar_chart("Sizes", ["a", "b"], [1, 2], x_label="Bucket", y_label="Count")
    html = chart.as_html()
    assert html.startswith('<figure class="chart"><figcaption>Sizes</figcaption><svg')
    assert html.endswith("</table></figure>")
    assert "<caption>Sizes</caption>" in html
    assert '<th scope="col">Bucket</th><th scope="col">Count</th>' in html
    table = ET.fromstring(html).find("table")
    assert table is not None
    body = [["".join(c.itertext()) for c in tr] for tr in table.iterfind("tbody/tr")]
    assert body == [["a", "1"], ["b", "2"]]


def test_ids_are_unique_per_chart() -> None:
    a = parse(bar_chart("A", ["x"], [1], highlight=[0]))
    b = parse(bar_chart("B", ["x"], [1], highlight=[0]))
    assert pattern_ids(a).isdisjoint(pattern_ids(b))
    assert a.get("aria-labelledby") != b.get("aria-labelledby")


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0, 97, [0, 20, 40, 60, 80, 100]),
        (0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0, 0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (5, 5, [0, 1, 2, 3, 4, 5]),
        (-3, 7, [-4, -2, 0, 2, 4, 6, 8]),
        (0.3, 0.6, [0.3, 0.4, 0.5, 0.6]),
        (0, 0.0037, [0, 0.001, 0.002, 0.003, 0.004]),
        (97, 0, [0, 20, 40, 60, 80, 100]),
    ],
)
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_tick_labels_stay_distinct_for_small_values() -> None:
    root = parse(bar_chart("Small", ["a", "b"], [0.2, 0.9]))  # default format "{:,.0f}"
    assert {"0.0", "0.2", "0.4", "1.0"} <= set(texts(root))
