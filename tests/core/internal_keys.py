"""The keys the code keeps, read from the code itself, and a finder for them in text people
read (pages, the signed report, e-mails, the API's display fields).

Nothing here lists known bad strings: every family of keys is collected from the registry
that defines it (model choices, TextChoices, job kinds, the questionnaires, the engine's
registries, profiling's types, the step slugs, the models' own field names), so a key added
to any of them is looked for as soon as it exists.

A key is *readable* when it is itself a word of the product's labels (``"draft"`` is how
the label "Draft" reads; ``"non_public"`` and ``"hmac"`` are not words of any label), or,
for a key of plain words (hyphenated or not), when the product's own prose (its templates'
text) uses it (``"profile"``, ``"data-risk"`` as in "the data-risk target"; never ``"aecs"``): only the others are looked for. A key in
square brackets is the placeholder the scrubber writes (``[POSTAL_CODE]``), quoted as such. Column names of the data on show are the custodian's words, not
keys, and are never looked for.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from django.apps import apps as django_apps
from django.db import models

# Text a page marks as code on purpose (the API's help, the audit trail's action codes).
_CODE_ELEMENTS = ("script", "style", "code", "pre", "kbd", "samp")
# Attributes read aloud by screen readers or shown on hover.
_READ_ATTRIBUTES = ("aria-label", "title", "alt", "placeholder")
# A key stands alone: not inside a longer word, a hyphenated word or a dotted name.
_BEFORE = r"(?<![\w\-.\[])"
_AFTER = r"(?![\w\-]|\.\w)"
# Seed file numbers instead of the guideline's name ("Seed 000 step 5").
SEED_NUMBER = re.compile(r"\b[Ss]eed \d{3}\b")


def model_choice_families() -> dict[str, dict[str, str]]:
    """``{"app.Model.field": {key: label}}`` for every field with choices in deidweb's apps,
    plus every TextChoices/IntegerChoices class they define (used by a field or not)."""
    families: dict[str, dict[str, str]] = {}
    for model in django_apps.get_models():
        if not model.__module__.startswith("apps."):
            continue
        for field in model._meta.get_fields():
            flat = getattr(field, "flatchoices", None)
            if flat:
                families[f"{model._meta.label}.{field.name}"] = {
                    str(key): str(text) for key, text in flat
                }
    for choices in _all_subclasses(models.Choices):
        if choices.__module__.startswith("apps."):
            families[f"{choices.__module__}.{choices.__qualname__}"] = {
                str(key): str(text) for key, text in choices.choices
            }
    return families


def _all_subclasses(cls: type) -> Iterable[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def registry_families() -> dict[str, set[str]]:
    """``{label family: keys}``: the registries whose keys must each have a label in
    ``apps.core.labels.LABELS[family]``."""
    from apps.assessments import configuration
    from apps.datasets.profiling import INFERRED_TYPES
    from apps.engine import context, threshold
    from apps.engine.freetext import SPAN_TYPES
    from apps.engine.population.uniqueness import MODEL_NAMES
    from apps.engine.sensitive.models import MODEL_KINDS
    from apps.engine.techniques.registry import TECHNIQUES
    from apps.jobs.kinds import JOB_HANDLERS

    return {
        "job_kind": set(JOB_HANDLERS),
        "invasion_factor": {key for key, _, _ in threshold.INVASION_FACTORS},
        "control": {key for key, _ in context.CONTROLS},
        "motive": {key for key, _, _ in context.MOTIVES},
        "threshold_profile": set(threshold.PROFILES),
        "threshold_preset": set(threshold.PRESETS),
        "masking_method": set(configuration.MASKING_METHODS),
        "masking_method_detail": set(configuration.MASKING_METHODS),
        "metric": set(configuration.METRICS),
        "privacy_model": set(MODEL_KINDS),
        "inferred_type": set(INFERRED_TYPES),
        "technique": {t.key for t in TECHNIQUES.values()},
        "span_type": set(SPAN_TYPES),
        "population_model": set(MODEL_NAMES),
    }


def other_keys() -> dict[str, set[str]]:
    """Keys that have no label of their own to show but must never be shown either: the
    step slugs (a step is shown by its number and title), the models' field names, the
    classification's kinds of variable and the population rule's name. Without labels to
    tell a word from a code, only the compound ones (``data-risk``, ``health_number``) are
    looked for: "account" or "release" are words too."""
    from apps.assessments.steps import STEPS
    from apps.classification.detectors import reasons, values

    fields = set()
    for model in django_apps.get_models():
        if model.__module__.startswith("apps."):
            fields |= {f.name for f in model._meta.get_fields() if "_" in f.name}
    kinds = set(reasons._R) | set(values._KIND_CHECKS)
    families = {
        "step_slug": {s.slug for s in STEPS},
        "model_field": fields,
        "variable_kind": kinds,
    }
    return {
        name: {k for k in keys if re.search(r"\w[_.\-]\w", k)} for name, keys in families.items()
    }


def unlabelled() -> list[str]:
    """Every key of a registry or a model's choices without its label in the one table."""
    from apps.core.labels import LABELS

    problems = []
    for family, keys in registry_families().items():
        table = LABELS.get(family, {})
        problems += [f"{family}: {key!r} has no label" for key in sorted(keys - set(table))]
    for name, pairs in model_choice_families().items():
        tables = [t for t in LABELS.values() if set(pairs) <= set(t)]
        if not any(all(t[k] == text for k, text in pairs.items()) for t in tables):
            problems.append(f"{name}: its choices {sorted(pairs)} are not a family of labels")
    return problems


def label_words() -> set[str]:
    """Every word of every label (the one table and the models' choices)."""
    from apps.core.labels import LABELS

    texts = [text for table in LABELS.values() for text in table.values()]
    texts += [text for pairs in model_choice_families().values() for text in pairs.values()]
    return set(re.findall(r"\w[\w.\-]*\w|\w", " ".join(texts)))


def prose_words() -> set[str]:
    """Every word of the templates' own text (tags, variables and code elements left out)."""
    from django.conf import settings

    words: set[str] = set()
    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in Path(folder).rglob("*.html"):
            text = path.read_text()
            text = re.sub(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", " ", text, flags=re.S)
            text = read_text(text)
            words |= set(re.findall(r"\w[\w.\-]*\w|\w", text))
    return words


def internal_keys(*, data_words: Iterable[str] = ()) -> set[str]:
    """Every key of the code that does not read as a word of the labels (minus the data's
    own words, e.g. its column names)."""
    keys: set[str] = set()
    for pairs in model_choice_families().values():
        keys |= set(pairs)
    for group in (registry_families(), other_keys()):
        for family_keys in group.values():
            keys |= family_keys
    words, prose = label_words(), prose_words()
    skip = set(data_words)
    return {
        key
        for key in keys
        if key
        and key not in skip
        and not key.isdigit()
        and not {key, key.capitalize()} & words
        and not (re.fullmatch(r"[a-z]+(-[a-z]+)*", key) and {key, key.capitalize()} & prose)
    }


def key_finder(keys: Iterable[str]) -> re.Pattern[str]:
    ordered = sorted(keys, key=len, reverse=True)
    return re.compile(_BEFORE + "(" + "|".join(re.escape(k) for k in ordered) + ")" + _AFTER)


def read_text(page: str) -> str:
    """What a person reads on a page: its text and the attributes read aloud, without the
    parts marked as code."""
    read = [
        html_lib.unescape(m.group(2))
        for m in re.finditer(rf'\s({"|".join(_READ_ATTRIBUTES)})="([^"]*)"', page)
    ]
    for element in _CODE_ELEMENTS:
        page = re.sub(rf"<{element}\b[^>]*>.*?</{element}>", " ", page, flags=re.S)
    page = re.sub(r"<[^>]+>", " ", page)
    return html_lib.unescape(page) + "\n" + "\n".join(read)


def found(text: str, finder: re.Pattern[str], where: str) -> list[str]:
    """Each key (or seed number) in ``text``, with what surrounds it."""
    hits = [m for m in finder.finditer(text)] + list(SEED_NUMBER.finditer(text))
    return [
        f"{where}: {m.group(0)!r} in …{' '.join(text[max(0, m.start() - 60) : m.end() + 40].split())}…"
        for m in hits
    ]


# JSON fields the API offers for people to read (the rest are keys by design).
_DISPLAY_FIELD = re.compile(
    r"(label|labels|title|explanation|words|message|error|summary|description|caption|describe"
    r"|reason|reasons|text|note|outcome|detail)$"
)


def display_strings(data: object, *, shown: bool = False) -> Iterable[str]:
    """The strings of an API answer held by a display field (or a list of them), at any
    depth; the other fields are keys and figures by design."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from display_strings(value, shown=bool(_DISPLAY_FIELD.search(str(key))))
    elif isinstance(data, list | tuple):
        for value in data:
            yield from display_strings(value, shown=shown)
    elif isinstance(data, str) and shown:
        yield data
