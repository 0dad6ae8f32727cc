"""SVG drawing for `apps.core.charts`: the Chart types, axes, patterns, legends, helpers."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from html import escape

FONT = "DejaVu Sans, Arial, sans-serif"
INK = "#1a1a1a"
AXIS = "#4d4d4d"
GRID = "#d4d4d4"
WHITE = "#ffffff"
# Dark hues on white (contrast >= 7:1); each style also has its own fill pattern.
STYLES: tuple[tuple[str, str], ...] = (
    ("#1f4e79", "solid"),
    ("#9a3412", "hatch"),
    ("#14532d", "cross"),
    ("#581c87", "dots"),
)
CHAR_W = 0.62  # average glyph advance in ems, to estimate the extent of a text
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
Swatch = Callable[[float, float], str]  # draws a 14x14 legend key at (x, y)


@dataclass(frozen=True)
class ChartTable:
    """The chart's data as strings, for a table printed under the chart."""

    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def as_html(self) -> str:
        head = "".join(f'<th scope="col">{esc(h)}</th>' for h in self.headers)
        body = "".join(
            "<tr>"
            + "".join(
                f'<th scope="row">{esc(c)}</th>' if j == 0 else f"<td>{esc(c)}</td>"
                for j, c in enumerate(row)
            )
            + "</tr>"
            for row in self.rows
        )
        return (
            f'<table class="chart-data"><caption>{esc(self.caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        )


@dataclass(frozen=True)
class Chart:
    """A rendered chart: SVG markup plus the same data as a table."""

    title: str
    description: str
    svg: str
    table: ChartTable

    def as_html(self) -> str:
        """`<figure>` with caption, SVG and data table; escaped, ready for mark_safe."""
        return (
            f'<figure class="chart"><figcaption>{esc(self.title)}</figcaption>'
            f"{self.svg}{self.table.as_html()}</figure>"
        )


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round tick values covering [lo, hi] (Heckbert's nice numbers)."""
    lo, hi = sorted((num(lo), num(hi)))
    if lo == hi:
        lo, hi = (0.0, 1.0) if lo == 0 else (min(lo, 0.0), max(hi, 0.0))
    step = _nice(_nice(hi - lo, False) / max(n - 1, 1), True)
    # the epsilon keeps float noise (0.3 / 0.1 = 2.999…) from adding a tick
    first, last = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
    digits = max(0, 1 - math.floor(math.log10(step)))
    count = round((last - first) / step) + 1
    return [round(first + i * step, digits) + 0.0 for i in range(count)]


# -- drawing -----------------------------------------------------------------------------


class Svg:
    """Accumulates the markup of one chart; ids are prefixed with `uid` (unique per page)."""

    def __init__(self, uid: str, width: float, height: float = 0.0) -> None:
        self.uid, self.width, self.height = uid, width, height
        self.defs: dict[str, str] = {}
        self.body: list[str] = []

    def add(self, markup: str) -> None:
        self.body.append(markup)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        anchor: str = "middle",
        size: int = 11,
        bold: bool = False,
        rotate: float = 0,
    ) -> None:
        attrs = f'x="{coord(x)}" y="{coord(y)}" text-anchor="{anchor}" font-size="{size}"'
        attrs += ' font-weight="bold"' if bold else ""
        attrs += f' transform="rotate({coord(rotate)} {coord(x)} {coord(y)})"' if rotate else ""
        self.add(f"<text {attrs}>{esc(text)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = AXIS) -> None:
        self.add(
            f'<line x1="{coord(x1)}" y1="{coord(y1)}" x2="{coord(x2)}" y2="{coord(y2)}" stroke="{stroke}"/>'
        )

    def fill(self, style: int) -> str:
        style %= len(STYLES)
        colour, kind = STYLES[style]
        if kind == "solid":
            return colour
        pid = f"{self.uid}-p{style}"
        marks = {
            "hatch": f'<path d="M2 0V8" stroke="{colour}" stroke-width="3"/>',
            "cross": f'<path d="M2 0V8M0 2H8" stroke="{colour}" stroke-width="2"/>',
            "dots": f'<circle cx="4" cy="4" r="2" fill="{colour}"/>',
        }[kind]
        turn = "" if kind == "dots" else ' patternTransform="rotate(45)"'
        self.defs[pid] = (
            f'<pattern id="{pid}" patternUnits="userSpaceOnUse" width="8" height="8"{turn}>'
            f'<rect width="8" height="8" fill="{WHITE}"/>{marks}</pattern>'
        )
        return f"url(#{pid})"

    def bar(self, x: float, y: float, w: float, h: float, style: int) -> str:
        colour = STYLES[style % len(STYLES)][0]
        return (
            f'<rect class="bar" x="{coord(x)}" y="{coord(y)}" width="{coord(max(w, 0))}" '
            f'height="{coord(max(h, 0))}" fill="{self.fill(style)}" stroke="{colour}" stroke-width="1.5"/>'
        )

    def box(self, style: int) -> Swatch:
        return lambda x, y: self.bar(x, y, 14, 14, style).replace('class="bar" ', "")

    def render(self, title: str, desc: str) -> str:
        w, h, u = coord(self.width), coord(self.height), self.uid
        defs = f"<defs>{''.join(self.defs.values())}</defs>" if self.defs else ""
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" viewBox="0 0 {w} {h}" '
            f'width="{w}" height="{h}" style="max-width:100%;height:auto" role="img" '
            f'aria-labelledby="{u}-title {u}-desc" font-family="{FONT}" fill="{INK}">'
            f'<title id="{u}-title">{esc(title)}</title><desc id="{u}-desc">{esc(desc)}</desc>'
            f'{defs}<rect width="{w}" height="{h}" fill="{WHITE}"/>{"".join(self.body)}</svg>'
        )


def columns(
    uid: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    style_of: Callable[[int, int], int],
    legend: Sequence[tuple[int, str]],
    value_format: str,
    x_label: str,
    y_label: str,
) -> Svg:
    """Vertical bars, grouped per label when there are several series."""
    n, m = len(labels), len(series)
    nums = [[num(v) for v in vals] for _, vals in series]
    texts = [[value_format.format(v) for v in vals] for _, vals in series]
    flat = [v for vals in nums for v in vals]
    ticks = nice_ticks(min(0.0, *flat), max(0.0, *flat))
    tick_text = tick_labels(ticks, value_format)
    left = 14 + max(text_width(t, 10) for t in tick_text) + (20 if y_label else 0)
    width = max(640.0, left + 16 + n * max(36.0, 16.0 * m + 14))
    slot = (width - left - 16) / n
    group = min(slot * 0.8, 64.0 * m)  # a lone bar stays a bar, not a wall
    bar_w = group / m
    widest = max(text_width(t, 10) for row in texts for t in row)
    upright = widest > bar_w + 6  # value labels turned to run up the bar's axis
    short = [shorten(label, 24) for label in labels]
    slanted = any(text_width(s) > slot - 4 for s in short)
    svg = Svg(uid, width)
    top = 8 + draw_legend(svg, [(svg.box(s), text) for s, text in legend], 12, 8, width - 12)
    top += widest + 8 if upright else 18
    plot_h, lo, hi = 240.0, ticks[0], ticks[-1]

    def y(v: float) -> float:
        return top + plot_h * (hi - v) / (hi - lo)

    for t, text in zip(ticks, tick_text, strict=True):
        svg.line(left, y(t), width - 16, y(t), GRID)
        svg.text(left - 6, y(t) + 4, text, anchor="end", size=10)
    svg.line(left, y(0), width - 16, y(0))
    if y_label:
        svg.text(16, top + plot_h / 2, y_label, bold=True, rotate=-90)
    for i, label in enumerate(labels):
        for j, (name, _) in enumerate(series):
            v, text = nums[j][i], texts[j][i]
            bx = left + i * slot + (slot - group) / 2 + j * bar_w
            y0, y1 = sorted((y(v), y(0)))
            tip = f"{label}: {text}" if m == 1 else f"{label}, {name}: {text}"
            bar = svg.bar(bx + 0.5, y0, bar_w - 1, y1 - y0, style_of(i, j))
            svg.add(f"<g><title>{esc(tip)}</title>{bar}</g>")
            cx = bx + bar_w / 2
            if upright:
                svg.text(
                    cx + 3.5,
                    y0 - 4 if v >= 0 else y1 + 4,
                    text,
                    anchor="start" if v >= 0 else "end",
                    size=10,
                    rotate=-90,
                )
            else:
                svg.text(cx, y0 - 4 if v >= 0 else y1 + 13, text, size=10)
        cx, ly = left + (i + 0.5) * slot, top + plot_h + 15
        svg.text(
            cx, ly, short[i], anchor="end" if slanted else "middle", rotate=-35 if slanted else 0
        )
    height = top + plot_h + (max(text_width(s) for s in short) * 0.58 + 18 if slanted else 20)
    if x_label:
        height += 18
        svg.text((left + width - 16) / 2, height, x_label, bold=True)
    svg.height = height + 10
    return svg


def draw_legend(
    svg: Svg, items: Sequence[tuple[Swatch, str]], x0: float, y0: float, max_x: float
) -> float:
    """Draws keys and their text in rows from (x0, y0); returns the height taken."""
    if not items:
        return 0.0
    x, y = x0, y0
    for swatch, label in items:
        text = shorten(label, 48)
        w = 20 + text_width(text) + 18
        if x > x0 and x + w > max_x:
            x, y = x0, y + 20
        svg.add(swatch(x, y))
        svg.text(x + 20, y + 11, text, anchor="start")
        x += w
    return y - y0 + 20


def circle(x: float, y: float, colour: str, attrs: str = "") -> str:
    return f'<circle {attrs}cx="{coord(x)}" cy="{coord(y)}" r="5" fill="{colour}" stroke="{WHITE}" stroke-width="1.5"/>'


def diamond(x: float, y: float, colour: str, attrs: str = "") -> str:
    d = f"M{coord(x)} {coord(y - 8)}L{coord(x + 8)} {coord(y)}L{coord(x)} {coord(y + 8)}L{coord(x - 8)} {coord(y)}Z"
    return f'<path {attrs}d="{d}" fill="{colour}" stroke="{INK}" stroke-width="1.5"/>'


def empty(uid: str, title: str, description: str, headers: tuple[str, ...]) -> Chart:
    desc = description or "No data."
    svg = Svg(uid, 640.0, 200.0)
    svg.text(320, 105, "No data", size=14)
    return Chart(title, desc, svg.render(title, desc), ChartTable(title, headers, ()))


# -- small helpers -------------------------------------------------------------------------


def _nice(x: float, rounded: bool) -> float:
    exp = math.floor(math.log10(x))
    f = x / 10**exp
    if rounded:
        nf = 1 if f < 1.5 else 2 if f < 3 else 5 if f < 7 else 10
    else:
        nf = 1 if f <= 1 else 2 if f <= 2 else 5 if f <= 5 else 10
    return float(nf * 10.0**exp)


def tick_labels(ticks: Sequence[float], fmt: str) -> list[str]:
    """Ticks in the data's format, unless it makes two ticks read the same (e.g. 0.2 as "0")."""
    try:
        texts = [fmt.format(t) for t in ticks]
    except (ValueError, TypeError):
        texts = []
    if texts and len(set(texts)) == len(texts):
        return texts
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if "%}" in fmt:
        return [f"{t:.{max(0, -math.floor(math.log10(step * 100)))}%}" for t in ticks]
    return [f"{t:,.{max(0, -math.floor(math.log10(step)))}f}" for t in ticks]


def summary(
    kind: str,
    labels: Sequence[str],
    values: Sequence[float],
    texts: Sequence[str],
    marked: Collection[int],
    highlight_label: str,
) -> str:
    nums = [num(v) for v in values]
    hi, lo = nums.index(max(nums)), nums.index(min(nums))
    text = f"{kind} of {len(labels)} values. Highest: {labels[hi]} ({texts[hi]})."
    if len(labels) > 1:
        text += f" Lowest: {labels[lo]} ({texts[lo]})."
    if marked:
        names = ", ".join(labels[i] for i in sorted(marked))
        text += f" {cap(highlight_label)} ({len(marked)}): {names}."
    return text


def same_length(labels: Sequence[str], values: Sequence[float]) -> None:
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels but {len(values)} values")


def indices(highlight: Collection[int], n: int) -> frozenset[int]:
    bad = sorted(i for i in highlight if not 0 <= i < n)
    if bad:
        raise ValueError(f"highlight index out of range: {bad}")
    return frozenset(highlight)


def mark(label: str, marked: bool, highlight_label: str) -> str:
    return f"{label} ({highlight_label})" if marked else label


def make_id(*parts: object) -> str:
    return "chart-" + hashlib.sha1(repr(parts).encode(), usedforsecurity=False).hexdigest()[:10]


def _clean(text: str) -> str:
    return _NOT_XML.sub("", str(text))


def esc(text: str) -> str:
    return escape(_clean(text), quote=True)


def shorten(text: str, limit: int) -> str:
    text = _clean(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def text_width(text: str, size: float = 11) -> float:
    return len(text) * size * CHAR_W


Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def text_box(x: float, y: float, text: str, size: float, anchor: str) -> Box:
    """The box a text drawn at (x, y) (its baseline) covers, by the same width estimate the
    layout uses; for keeping labels apart."""
    w = text_width(text, size)
    x0 = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
    return (x0, y - size, x0 + w, y + size * 0.25)


def overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def num(v: float) -> float:
    v = float(v)
    return v if math.isfinite(v) else 0.0


def coord(x: float) -> str:
    return f"{x:.1f}"
