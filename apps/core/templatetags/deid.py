from __future__ import annotations

from django import template
from django.urls import reverse

from apps.core.labels import LABELS, invasion_explanation, label_for
from apps.engine.threshold import LEVELS

register = template.Library()


@register.simple_tag
def help_url(topic: str | None) -> str:
    return reverse("help", kwargs={"topic": topic or "start"})


@register.filter
def percent(value: float | str | None, digits: int = 1) -> str:
    if value is None or value == "":
        return "—"
    try:
        return f"{float(value) * 100:.{int(digits)}f}%"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def get_item(mapping: dict[str, object] | None, key: str) -> object:
    return (mapping or {}).get(key)


@register.simple_tag
def concat(*parts: object) -> str:
    """Join already formatted pieces: filters in a chain apply to the whole string so far."""
    return "".join("" if p is None else str(p) for p in parts)


@register.filter(name="label")
def label(key: str | None, family: str) -> str:
    """``{{ job.kind|label:"job_kind" }}``: a key in words, from the one table of display
    labels (apps.core.labels). An unknown family is a programming error and raises."""
    if family not in LABELS:
        raise template.TemplateSyntaxError(f"no family of labels called {family!r}")
    return label_for(family, key)


@register.filter(name="invasion_explanation")
def invasion_explanation_filter(invasion: dict[str, object] | None) -> str:
    """Step 3's score in words (apps.core.labels.invasion_explanation)."""
    return invasion_explanation(invasion or {})


@register.filter
def span_label(span_type: str | None) -> str:
    """A free-text detector's span type in words ("NAME" → "names")."""
    return label_for("span_type", span_type, empty="")


@register.filter
def masking_label(method: str | None) -> str:
    """A masking method in words (never its internal key)."""
    return label_for("masking_method", method, empty="")


@register.filter
def release_model_label(model: str | None) -> str:
    """A release model in words, as it reads inside a sentence ("semi-public")."""
    return label_for("release_model", model).lower() if model else "—"


@register.filter
def duration_words(seconds: float | None) -> str:
    """A duration as a person reads it: "0.4 ms", "2.5 s", "3 min"."""
    if seconds is None:
        return "—"
    value = float(seconds)
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def significant(value: float | str | None, digits: int = 4) -> str:
    """A figure to ``digits`` significant digits, never in exponent form and never rounded to
    zero when it is not zero: 0.1 → "0.1", 1/11 → "0.09091", 1e-06 → "0.000001"."""
    import numpy as np

    if value is None or value == "":
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if number != number or number in (float("inf"), float("-inf")):
        return str(number)
    if number == 0:
        return "0"
    return str(
        np.format_float_positional(
            number, precision=int(digits), unique=False, fractional=False, trim="-"
        )
    )


@register.filter(name="sig")
def sig(value: float | str | None, digits: int = 4) -> str:
    """Template filter for :func:`significant` (the product's way to print a risk figure)."""
    return significant(value, digits)


@register.filter
def metric_label(metric: str | None) -> str:
    """An information-loss metric by its name in the literature (never its internal key)."""
    return label_for("metric", metric, empty="")


@register.filter
def by_invasion_level(table: dict[str, object] | None) -> list[tuple[str, object]]:
    """A threshold table's rows from low to high invasion of privacy: the database keeps
    JSON object keys sorted by length (low, high, medium)."""
    rank = {level: i for i, level in enumerate(LEVELS)}
    return sorted((table or {}).items(), key=lambda row: (rank.get(row[0], len(rank)), row[0]))
