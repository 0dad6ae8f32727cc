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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


def withhold_raw_values(value: Any, protected: set[str]) -> Any:
    """``value`` (a JSON answer) with the values of the ``protected`` columns withheld."""
    if not protected:
        return value
    if isinstance(value, list):
        return [withhold_raw_values(v, protected) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("column"), str) and value["column"] in protected:
        return _describes_protected(value)
    out: dict[str, Any] = {}
    for key, inner in value.items():
        if isinstance(key, str) and key in protected and isinstance(inner, dict):
            out[key] = _describes_protected(inner)
        elif isinstance(key, str) and key in protected and isinstance(inner, list):
            out[key] = inner if _numbers_only(inner) else []
        else:
            out[key] = withhold_raw_values(inner, protected)
    return out
