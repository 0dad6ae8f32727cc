"""Charts rendered once, on the server, as plain SVG 1.1 for pages and WeasyPrint PDFs.

Each chart is readable without colour: bars carry value labels, series differ by fill
pattern, the highlighted point by marker shape, legends are text, and every chart comes
with its data table for screen readers.  Labels come from user data and are escaped.
No Django import, no scripts, no external CSS or fonts; `Chart.as_html()` returns a
plain str that the Django side marks safe.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from apps.core.charts._svg import (
    AXIS,
    GRID,
    STYLES,
    Box,
    Chart,
    ChartTable,
    Svg,
    Swatch,
    cap,
    circle,
    columns,
    coord,
    diamond,
    draw_legend,
    empty,
    esc,
    indices,
    make_id,
    mark,
    nice_ticks,
    num,
    overlaps,
    same_length,
    shorten,
    summary,
    text_box,
    text_width,
    tick_labels,
)
from apps.core.charts.line import line_chart

__all__ = [
    "Chart",
    "ChartTable",
    "bar_chart",
    "grouped_bar_chart",
    "horizontal_bar_chart",
    "line_chart",
    "nice_ticks",
    "scatter_chart",
]


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    value_format: str = "{:,.0f}",
    x_label: str = "",
    y_label: str = "",
    highlight: Collection[int] = (),
    highlight_label: str = "highlighted",
    description: str = "",
) -> Chart:
    """Vertical bars with their value above; highlighted bars are hatched."""
    same_length(labels, values)
    marked = indices(highlight, len(labels))
    texts = [value_format.format(v) for v in values]
    headers = (x_label or "Category", y_label or "Value")
    rows = tuple(
        (mark(lab, i in marked, highlight_label), t)
        for i, (lab, t) in enumerate(zip(labels, texts, strict=True))
    )
    uid = make_id("bar", title, labels, values, sorted(marked))
    if not labels:
        return empty(uid, title, description, headers)
    desc = description or summary("Bar chart", labels, values, texts, marked, highlight_label)
    legend = [(0, y_label or "Value"), (1, cap(highlight_label))] if marked else []
    svg = columns(
        uid,
        labels,
        [(y_label or "Value", values)],
        lambda i, _j: 1 if i in marked else 0,
        legend,
        value_format,
        x_label,
        y_label,
    )
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, rows))


def grouped_bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    value_format: str = "{:,.0f}",
    x_label: str = "",
    y_label: str = "",
    description: str = "",
) -> Chart:
    """One group of bars per label, one bar per series; series differ by fill pattern."""
    for _name, vals in series:
        same_length(labels, vals)
    headers = (x_label or "Category", *(name for name, _ in series))
    rows = tuple(
        (label, *(value_format.format(vals[i]) for _, vals in series))
        for i, label in enumerate(labels)
    )
    uid = make_id("grouped", title, labels, series)
    if not labels or not series:
        return empty(uid, title, description, headers)
    names = ", ".join(name for name, _ in series)
    desc = description or (
        f"Grouped bar chart of {len(series)} series ({names}) over {len(labels)} categories."
    )
    legend = [(j, name) for j, (name, _) in enumerate(series)]
    svg = columns(uid, labels, series, lambda _i, j: j, legend, value_format, x_label, y_label)
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, rows))


def horizontal_bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    value_format: str = "{:,.0f}",
    x_label: str = "",
    y_label: str = "",
    highlight: Collection[int] = (),
    highlight_label: str = "highlighted",
    description: str = "",
) -> Chart:
    """One horizontal bar per label, in the order given, value at the end of each bar."""
    same_length(labels, values)
    marked = indices(highlight, len(labels))
    texts = [value_format.format(v) for v in values]
    headers = (y_label or "Category", x_label or "Value")
    rows = tuple(
        (mark(lab, i in marked, highlight_label), t)
        for i, (lab, t) in enumerate(zip(labels, texts, strict=True))
    )
    uid = make_id("hbar", title, labels, values, sorted(marked))
    if not labels:
        return empty(uid, title, description, headers)
    desc = description or summary(
        "Horizontal bar chart", labels, values, texts, marked, highlight_label
    )
    nums = [num(v) for v in values]
    ticks = nice_ticks(min(0.0, *nums), max(0.0, *nums))
    tick_text = tick_labels(ticks, value_format)
    short = [shorten(label, 28) for label in labels]
    width, right = 640.0, 14 + max(text_width(t, 10) for t in texts)
    left = 20 + max(text_width(s) for s in short)
    svg = Svg(uid, width)
    items = [(0, x_label or "Value"), (1, cap(highlight_label))] if marked else []
    top = 8 + draw_legend(svg, [(svg.box(s), text) for s, text in items], 12, 8, width - 12)
    top += 18 if y_label else 6
    row, plot_h = 26.0, 26.0 * len(labels)
    lo, hi = ticks[0], ticks[-1]

    def x(v: float) -> float:
        return left + (width - left - right) * (v - lo) / (hi - lo)

    for t, text in zip(ticks, tick_text, strict=True):
        svg.line(x(t), top, x(t), top + plot_h, GRID)
        svg.text(x(t), top + plot_h + 15, text, size=10)
    svg.line(x(0), top, x(0), top + plot_h)
    if y_label:
        svg.text(left - 8, top - 6, y_label, anchor="end", bold=True)
    for i, (label, v, text) in enumerate(zip(labels, nums, texts, strict=True)):
        y = top + i * row + 5
        style = 1 if i in marked else 0
        x0, x1 = sorted((x(0), x(v)))
        svg.add(
            f"<g><title>{esc(f'{label}: {text}')}</title>{svg.bar(x0, y, x1 - x0, 16, style)}</g>"
        )
        svg.text(
            x(v) + (4 if v >= 0 else -4), y + 12, text, anchor="start" if v >= 0 else "end", size=10
        )
        svg.text(left - 8, y + 12, short[i], anchor="end")
    height = top + plot_h + 22
    if x_label:
        height += 18
        svg.text((left + width - right) / 2, height, x_label, bold=True)
    svg.height = height + 10
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, rows))


def scatter_chart(
    title: str,
    points: Sequence[tuple[float, float, str]],
    *,
    x_label: str,
    y_label: str,
    highlight: int | None = None,
    x_format: str = "{:.2%}",
    y_format: str = "{:.3f}",
    connect: bool = False,
    point_label: str = "Solutions",
    highlight_label: str = "selected",
    description: str = "",
) -> Chart:
    """Labelled points; the highlighted one is a diamond (others are circles), named in the legend."""
    if highlight is not None:
        indices((highlight,), len(points))
    headers = ("Label", x_label or "x", y_label or "y")
    rows = tuple(
        (mark(label, i == highlight, highlight_label), x_format.format(px), y_format.format(py))
        for i, (px, py, label) in enumerate(points)
    )
    uid = make_id("scatter", title, points, highlight, connect)
    if not points:
        return empty(uid, title, description, headers)
    desc = description or f"Scatter chart of {len(points)} points: {y_label} against {x_label}."
    if highlight is not None and not description:
        chosen = rows[highlight]
        desc += f" {cap(highlight_label)}: {points[highlight][2]} ({chosen[1]}, {chosen[2]})."
    xs, ys = [num(p[0]) for p in points], [num(p[1]) for p in points]
    xt, yt = nice_ticks(min(xs), max(xs)), nice_ticks(min(ys), max(ys))
    xt_text, yt_text = tick_labels(xt, x_format), tick_labels(yt, y_format)
    width, height = 640.0, 400.0
    left = 16 + max(text_width(t, 10) for t in yt_text) + (20 if y_label else 0)
    right, bottom = 28.0, 30.0 + (20 if x_label else 0)
    svg = Svg(uid, width, height)
    items: list[tuple[Swatch, str]] = []
    if highlight is not None:
        colour, accent = STYLES[0][0], STYLES[1][0]
        items = [
            (lambda x, y: circle(x + 7, y + 7, colour), point_label),
            (
                lambda x, y: diamond(x + 7, y + 7, accent),
                f"{cap(highlight_label)}: {points[highlight][2]}",
            ),
        ]
    top = 16 + draw_legend(svg, items, 12, 8, width - 12)

    def sx(v: float) -> float:
        return left + (width - left - right) * (v - xt[0]) / (xt[-1] - xt[0])

    def sy(v: float) -> float:
        return top + (height - top - bottom) * (yt[-1] - v) / (yt[-1] - yt[0])

    placed: list[Box] = []
    for t, text in zip(xt, xt_text, strict=True):
        svg.line(sx(t), top, sx(t), height - bottom, GRID)
        svg.text(sx(t), height - bottom + 15, text, size=10)
        placed.append(text_box(sx(t), height - bottom + 15, text, 10, "middle"))
    for t, text in zip(yt, yt_text, strict=True):
        svg.line(left, sy(t), width - right, sy(t), GRID)
        box = text_box(left - 6, sy(t) + 4, text, 10, "end")
        if not any(overlaps(box, other) for other in placed):  # the corner: x's first tick
            svg.text(left - 6, sy(t) + 4, text, anchor="end", size=10)
            placed.append(box)
    svg.line(left, height - bottom, width - right, height - bottom)
    svg.line(left, top, left, height - bottom)
    if x_label:
        svg.text((left + width - right) / 2, height - 8, x_label, bold=True)
    if y_label:
        svg.text(16, (top + height - bottom) / 2, y_label, bold=True, rotate=-90)
    if connect and len(points) > 1:
        path = " ".join(
            f"{coord(sx(a))},{coord(sy(b))}" for a, b in sorted(zip(xs, ys, strict=True))
        )
        svg.add(f'<polyline points="{path}" fill="none" stroke="{AXIS}" stroke-width="1.5"/>')
    # Every point gets a marker and a tooltip (and a row in the table); only labels that fit
    # without touching another text are drawn: the highlighted point's first, then the two
    # ends of the front, then the rest in order.
    area = (left, top, width - right, height - bottom)
    by_x = sorted(range(len(points)), key=lambda i: xs[i])
    label_order = ([highlight] if highlight is not None else []) + [
        i for i in dict.fromkeys([by_x[0], by_x[-1], *range(len(points))]) if i != highlight
    ]
    labels: dict[int, tuple[float, float, str, str]] = {}
    for i in label_order:
        short = shorten(points[i][2], 28)
        px, py = sx(xs[i]), sy(ys[i])
        for dx, dy, anchor in (
            (9, -7, "start"),
            (-9, -7, "end"),
            (9, 14, "start"),
            (-9, 14, "end"),
        ):
            box = text_box(px + dx, py + dy, short, 10, anchor)
            inside = (
                area[0] <= box[0] and box[2] <= area[2] and area[1] <= box[1] and box[3] <= area[3]
            )
            if inside and not any(overlaps(box, other) for other in placed):
                placed.append(box)
                labels[i] = (px + dx, py + dy, short, anchor)
                break
    order = [i for i in range(len(points)) if i != highlight] + (
        [highlight] if highlight is not None else []
    )
    for i in order:
        px, py, label = sx(xs[i]), sy(ys[i]), points[i][2]
        if i == highlight:
            marker = diamond(px, py, STYLES[1][0], 'class="point highlight" ')
        else:
            marker = circle(px, py, STYLES[0][0], 'class="point" ')
        svg.add(f"<g><title>{esc(f'{label}: {rows[i][1]}, {rows[i][2]}')}</title>{marker}")
        if i in labels:
            tx, ty, short, anchor = labels[i]
            svg.text(tx, ty, short, anchor=anchor, size=10, bold=i == highlight)
        svg.add("</g>")
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, rows))
