"""Line chart over categories: one line per series, each with its own marker shape and dash.

Made for ARX's plot of population uniques against the sampling fraction: the x axis is a
list of categories (the fractions), a series may miss values (an estimate not available),
which leaves a gap in its line and "not available" in the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.core.charts._svg import (
    GRID,
    INK,
    STYLES,
    WHITE,
    Chart,
    ChartTable,
    Svg,
    Swatch,
    cap,
    coord,
    draw_legend,
    empty,
    esc,
    make_id,
    nice_ticks,
    num,
    shorten,
    text_width,
    tick_labels,
)

# Per series: marker shape and dash pattern, so the lines differ without colour.
_DASHES = ("", "6 3", "2 3", "8 3 2 3")
MISSING = "not available"


def _marker(shape: int, x: float, y: float, colour: str, attrs: str = "") -> str:
    r = 5.0
    if shape % 4 == 0:
        return f'<circle {attrs}cx="{coord(x)}" cy="{coord(y)}" r="{r}" fill="{colour}" stroke="{WHITE}" stroke-width="1.5"/>'
    if shape % 4 == 1:
        return (
            f'<rect {attrs}x="{coord(x - r)}" y="{coord(y - r)}" width="{coord(2 * r)}" '
            f'height="{coord(2 * r)}" fill="{colour}" stroke="{WHITE}" stroke-width="1.5"/>'
        )
    if shape % 4 == 2:
        d = f"M{coord(x)} {coord(y - 6)}L{coord(x + 6)} {coord(y + 5)}L{coord(x - 6)} {coord(y + 5)}Z"
    else:
        d = f"M{coord(x)} {coord(y - 7)}L{coord(x + 7)} {coord(y)}L{coord(x)} {coord(y + 7)}L{coord(x - 7)} {coord(y)}Z"
    return f'<path {attrs}d="{d}" fill="{colour}" stroke="{WHITE}" stroke-width="1.5"/>'


def _key(style: int) -> Swatch:
    colour = STYLES[style % len(STYLES)][0]
    dash = _DASHES[style % len(_DASHES)]
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""

    def draw(x: float, y: float) -> str:
        line = (
            f'<line x1="{coord(x - 2)}" y1="{coord(y + 7)}" x2="{coord(x + 16)}" '
            f'y2="{coord(y + 7)}" stroke="{colour}" stroke-width="2"{dash_attr}/>'
        )
        return line + _marker(style, x + 7, y + 7, colour)

    return draw


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    value_format: str = "{:.2%}",
    tick_format: str | None = None,
    x_label: str = "",
    y_label: str = "",
    highlight: int | None = None,
    highlight_label: str = "highlighted",
    description: str = "",
) -> Chart:
    """Lines over categories; None values are gaps; a highlighted category gets a dashed rule.

    The first series is drawn wider, underneath the others, so that it stays visible where
    another series coincides with it (Dankar's rule picks one of the models).
    """
    for name, values in series:
        if len(values) != len(labels):
            raise ValueError(f"series {name!r}: {len(values)} values for {len(labels)} labels")
    if highlight is not None and not 0 <= highlight < len(labels):
        raise ValueError(f"highlight index out of range: {highlight}")
    headers = (x_label or "Category", *(name for name, _ in series))
    rows = tuple(
        (
            f"{label} ({highlight_label})" if i == highlight else label,
            *(MISSING if vals[i] is None else value_format.format(vals[i]) for _, vals in series),
        )
        for i, label in enumerate(labels)
    )
    uid = make_id("line", title, labels, series, highlight)
    present = [num(v) for _, vals in series for v in vals if v is not None]
    if not labels or not present:
        blank = empty(uid, title, description, headers)
        # the table still says, per category, that nothing was available
        return Chart(title, blank.description, blank.svg, ChartTable(title, headers, rows))
    desc = description or (
        f"Line chart of {len(series)} series ({', '.join(n for n, _ in series)}) "
        f"over {len(labels)} categories."
    )
    ticks = nice_ticks(min(0.0, *present), max(0.0, *present))
    tick_text = tick_labels(ticks, tick_format or value_format)
    left = 14 + max(text_width(t, 10) for t in tick_text) + (20 if y_label else 0)
    width, right = 640.0, 16.0
    slot = (width - left - right) / len(labels)
    short = [shorten(label, 16) for label in labels]
    slanted = any(text_width(s, 10) > slot - 4 for s in short)
    svg = Svg(uid, width)
    items = [(_key(j), name) for j, (name, _) in enumerate(series)]
    top = 8 + draw_legend(svg, items, 12, 8, width - 12) + 14
    plot_h, lo, hi = 240.0, ticks[0], ticks[-1]

    def x(i: int) -> float:
        return left + (i + 0.5) * slot

    def y(v: float) -> float:
        return top + plot_h * (hi - v) / (hi - lo)

    for t, text in zip(ticks, tick_text, strict=True):
        svg.line(left, y(t), width - right, y(t), GRID)
        svg.text(left - 6, y(t) + 4, text, anchor="end", size=10)
    svg.line(left, y(lo), width - right, y(lo))
    svg.line(left, top, left, top + plot_h)
    if y_label:
        svg.text(16, top + plot_h / 2, y_label, bold=True, rotate=-90)
    if highlight is not None:
        hx = coord(x(highlight))
        svg.add(
            f'<line class="highlight" x1="{hx}" y1="{coord(top)}" x2="{hx}" '
            f'y2="{coord(top + plot_h)}" stroke="{INK}" stroke-dasharray="4 3"/>'
        )
        svg.text(x(highlight), top - 4, cap(highlight_label), size=10, bold=True)
    for j, (name, values) in enumerate(series):
        colour = STYLES[j % len(STYLES)][0]
        dash = _DASHES[j % len(_DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        run: list[str] = []
        for i, v in enumerate([*values, None]):
            if v is not None:
                run.append(f"{coord(x(i))},{coord(y(num(v)))}")
                continue
            if len(run) > 1:
                svg.add(
                    f'<polyline class="series" points="{" ".join(run)}" fill="none" '
                    f'stroke="{colour}" stroke-width="{5 if j == 0 else 2}"{dash_attr}/>'
                )
            run = []
        for i, v in enumerate(values):
            if v is None:
                continue
            tip = f"{name}, {labels[i]}: {value_format.format(v)}"
            marker = _marker(j, x(i), y(num(v)), colour, 'class="point" ')
            svg.add(f"<g><title>{esc(tip)}</title>{marker}</g>")
    for i, label in enumerate(short):
        svg.text(
            x(i),
            top + plot_h + 15,
            label,
            anchor="end" if slanted else "middle",
            size=10,
            rotate=-35 if slanted else 0,
        )
    height = top + plot_h + (max(text_width(s, 10) for s in short) * 0.58 + 18 if slanted else 20)
    if x_label:
        height += 18
        svg.text((left + width - right) / 2, height, x_label, bold=True)
    svg.height = height + 10
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, rows))
