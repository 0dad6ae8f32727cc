"""The Pareto chart names solutions in words and never draws a text over another one
(checked from the SVG's own coordinates); every point keeps its words in a tooltip."""

from __future__ import annotations

import re

from apps.assessments.presenters import pareto_chart
from apps.core.charts._svg import overlaps, text_box

LABELS = {
    "age": ["original", "intervals of 5", "intervals of 10", "intervals of 20", "suppressed (*)"],
    "postal_code": ["original", "first 3 character(s)", "first 1 character(s)", "suppressed (*)"],
    "sex": ["original", "suppressed (*)"],
}


def crowded_search() -> dict:  # type: ignore[type-arg]
    # 25 alternatives, many of them nearly on top of each other.
    pareto = []
    for i in range(25):
        pareto.append(
            {
                "levels": {"age": i % 5, "postal_code": (i // 5) % 4, "sex": i % 2},
                "suppressed_rows": 1000 - i * 40 - (i % 3),
                "information_loss": 0.1 + i * 0.01 + (i % 2) * 0.001,
            }
        )
    return {
        "pareto": pareto,
        "rows": 30_000,
        "metric": "loss",
        "quasi_identifiers": list(LABELS),
        "level_labels": LABELS,
    }


def test_no_text_over_another_and_words_not_level_numbers() -> None:
    search = crowded_search()
    chosen = search["pareto"][7]["levels"]
    svg = str(pareto_chart(search, chosen))
    boxes = []
    for attrs, content in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg):
        if "rotate(" in attrs:
            continue  # the y-axis title, drawn sideways at the edge
        get = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        text = (
            content.replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&#x27;", "'")
            .replace("&quot;", '"')
        )
        boxes.append(
            (
                text,
                text_box(
                    float(get["x"]),
                    float(get["y"]),
                    text,
                    float(get["font-size"]),
                    get["text-anchor"],
                ),
            )
        )
    clashes = [
        (a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if overlaps(a[1], b[1])
    ]
    assert clashes == []
    # The chosen point is labelled in words (bold), and every point keeps a tooltip.
    assert svg.count("<title>") == 25
    assert "age: intervals of 10 · postal_code: first 3 character(s) · sex: suppressed (*)" in svg
    assert "(2, 1, 1)" not in svg
    labelled = [t for t, _ in boxes if t.startswith("age:")]
    assert 2 <= len(labelled) < 25  # some labelled, not all crammed in
