"""What a role that may not read raw values (reviewers) gets of an assessment's results.

Step 8 measures every column before and after, Step 7 scans released text for identifiers,
and the results keep what they found — the most frequent values of each column, examples of
text. For analysts and administrators those are the point; a reviewer decides on the
figures, and must not read e-mail addresses, names or notes through them
(``Membership.can_see_raw_values``). The pages show reviewers no such value; the API answers
them the same results with the values of the *protected columns* — direct identifiers and
free text, whatever their role — withheld, the counts and shapes kept.

Withholding is structural, so it reaches any result that describes a column, now or later:
a dictionary whose ``"column"`` is protected, or found under a protected column's name as a
key, keeps its numbers, its yes/no answers and a few descriptive words (``KEPT_TEXT``); every
other text, and every list or dictionary not made of numbers only, is emptied, and it says
``"values_withheld": true``.

A quasi-identifier's values are the results' subject (the distributions before and after, the
groups of a hierarchy), but a value held by fewer records than the threshold's class size
(``class_threshold``) points at a few people — a town of two: such a *rare value* is withheld
wherever a text of the answer is exactly it (``None`` in its place, a key left out unless
it is a number, which as a key counts something), as the
hierarchy previews and the report already tell them (apps.engine.hierarchies.mapping). The
lists that hold every original value at once (a hierarchy's ARX table, a categorical
hierarchy's groups) are left out by the role's serializer (``hierarchy_for_role``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apps.assessments.hierarchies import class_threshold, value_counts
from apps.assessments.models import Assessment
from apps.classification.models import Variable

# Texts a column's description may keep: what it is and how it was treated, never a value.
KEPT_TEXT = frozenset(
    {
        "column",
        "name",
        "status",
        "kind",
        "role",
        "role_label",
        "type",
        "method",
        "technique",
        "title",
        "in_words",
        "reviewed",
        "reviewed_by",
        "rule",
    }
)
FREE_TEXT_KINDS = frozenset({"free_text", "free_text_identifiers"})


def protected_columns(assessment: Assessment, variables: Iterable[dict[str, Any]] = ()) -> set[str]:
    """The assessment's direct identifiers and free-text columns: by the data set's current
    classification and by the frozen record's (``variables``), whichever names more."""
    protected = {
        name
        for name, role, inferred, kind in Variable.objects.filter(
            dataset_id=assessment.dataset_id
        ).values_list("name", "role", "inferred_type", "suggestion_kind")
        if role == "direct" or inferred == "free_text" or kind in FREE_TEXT_KINDS
    }
    for v in variables:
        if v.get("role") == "direct" or v.get("type") == "free_text":
            protected.add(str(v.get("name", "")))
    protected |= set(assessment.deid.masking)
    return protected


def rare_values(assessment: Assessment) -> frozenset[str]:
    """The values of the data set's quasi-identifiers held by fewer records than the
    threshold's class size, as the engine compares them (text)."""
    k = class_threshold(assessment)
    rare: set[str] = set()
    quasi = Variable.objects.filter(dataset_id=assessment.dataset_id, role="quasi")
    for column in quasi.values_list("name", flat=True):
        rare |= {value for value, n in value_counts(assessment, column).items() if n < k}
    return frozenset(rare)


def hierarchy_params_for_role(
    kind: str, params: dict[str, Any], *, raw_values: bool
) -> dict[str, Any]:
    """A hierarchy's parameters; for a role not allowed raw values, without the lists of
    original values (a categorical hierarchy's groups, a code list)."""
    params = dict(params or {})
    if not raw_values:
        if kind == "categorical":
            params.pop("levels", None)
        params.pop("codes", None)  # values of the column, however few records hold them
    return params


def hierarchy_for_role(spec: dict[str, Any], *, raw_values: bool) -> dict[str, Any]:
    """One hierarchy of a record (``apps.reviews.snapshot``): whole for a role allowed raw
    values; otherwise without its ARX table (every original value with its groups) and its
    value lists — the levels' names and sizes stay."""
    if raw_values:
        return dict(spec)
    kept = {key: value for key, value in spec.items() if key != "arx_csv"}
    kept["params"] = hierarchy_params_for_role(
        str(spec.get("kind", "")), spec.get("params") or {}, raw_values=False
    )
    return kept


def _numbers_only(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int | float):
        return True
    if isinstance(value, list):
        return all(_numbers_only(v) for v in value)
    return False


def _describes_protected(description: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in description.items():
        if isinstance(value, str):
            kept[key] = value if key in KEPT_TEXT else ""
        elif _numbers_only(value):
            kept[key] = value
        elif isinstance(value, dict) and key == "spans":  # span type → count
            kept[key] = {str(k): v for k, v in value.items() if _numbers_only(v)}
        elif isinstance(value, list):
            kept[key] = []
        else:
            kept[key] = {}
    kept["values_withheld"] = True
    return kept


def withhold_raw_values(value: Any, protected: set[str], rare: frozenset[str] = frozenset()) -> Any:
    """``value`` (a JSON answer) with the values of the ``protected`` columns withheld, and
    every text that is a ``rare`` quasi-identifier value."""
    if not protected and not rare:
        return value
    if isinstance(value, str):
        return None if value in rare else value
    if isinstance(value, list):
        return [withhold_raw_values(v, protected, rare) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("column"), str) and value["column"] in protected:
        return _describes_protected(value)
    out: dict[str, Any] = {}
    for key, inner in value.items():
        # A key that is a rare value is left out; a number as a key is a count or a size
        # (a histogram's "27": 1), not a value, whatever value it spells.
        if isinstance(key, str) and key in rare and not key.isdigit():
            continue
        if isinstance(key, str) and key in protected and isinstance(inner, dict):
            out[key] = _describes_protected(inner)
        elif isinstance(key, str) and key in protected and isinstance(inner, list):
            out[key] = inner if _numbers_only(inner) else []
        else:
            out[key] = withhold_raw_values(inner, protected, rare)
    return out
