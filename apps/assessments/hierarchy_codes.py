"""Step 7 hierarchies for diagnosis codes, built from the engine's code tables
(LONGITUDINAL.md §2.8; apps.engine.longitudinal.codes).

ICD-10 follows the WHO tabular list: a code (I21.0) belongs to a 3-character category
(I21), the category to a block of neighbouring categories (I20-I25), the block to a
chapter (I00-I99), and the chapter to ``*``. ICD-9-CM adds a 4-digit level (250.0)
between the code and its 3-digit category, and names its blocks sections. Blocks and
chapters are labelled by their range of categories, as the engine writes them.

Only the column's own values are placed in the tree. A value that is not a code of the
chosen system, or whose category lies outside every block or chapter, is refused naming
the column and a few such values, unless the settings ask for the engine's lenient variant
(``lenient``): then such a value keeps its chapter's range at the block level when it has
a chapter, and becomes ``*`` above itself otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from apps.assessments.models import HierarchySpec
from apps.core.errors import ApplicationError
from apps.engine.errors import HierarchyError
from apps.engine.hierarchies import Hierarchy
from apps.engine.longitudinal import codes

Kind = HierarchySpec.Kind
CODE_KINDS = frozenset({Kind.ICD10, Kind.ICD9CM})
# Level 0 is "original code": the pages say it as "kept as is" (solution_words.level_in_words).
# Offending values named in a message.
SHOWN = 5
LEVEL_NAMES = {
    Kind.ICD10: ["original code", "3-character category", "block", "chapter", "suppressed (*)"],
    Kind.ICD9CM: [
        "original code", "4 digits", "3-digit category", "section", "chapter", "suppressed (*)",
    ],
}  # fmt: skip
SYSTEM_NAMES = {Kind.ICD10: "ICD-10", Kind.ICD9CM: "ICD-9-CM"}
# A WHO ICD-10 category is a letter and two digits; at most four characters follow it.
# (A third character that is a letter, as in the postal prefix "K1A", is not offered.)
_ICD10_LOOK = re.compile(r"^[A-Z]\d\d(\.?[0-9A-Z]{1,4})?[†*+!]?$")
# Share of the different values that must look like ICD-10 codes for the kind to be offered.
SUGGEST_SHARE = 0.8


def _shown(values: Sequence[str]) -> str:
    listed = ", ".join(f"'{v}'" for v in values[:SHOWN])
    more = len(values) - SHOWN
    return f"{listed} and {more} more" if more > 0 else listed


def _parses(kind: str, value: str) -> bool:
    if kind == Kind.ICD10:
        return codes.icd10_category(value) is not None
    return codes.icd9_parts(value) is not None


def code_hierarchy(
    column: str, kind: str, params: dict[str, Any], values: Sequence[str | None]
) -> Hierarchy:
    """The code → category → block → chapter → * hierarchy of ``values`` (module docstring)."""
    lenient = bool(params.get("lenient"))
    name = SYSTEM_NAMES[kind]  # type: ignore[index]
    present = [v for v in dict.fromkeys(values) if v is not None]
    invalid = [v for v in present if not _parses(kind, v)]
    if invalid and not lenient:
        raise ApplicationError(
            f"Hierarchy of '{column}': {len(invalid)} value(s) are not {name} codes: "
            f"{_shown(invalid)}. Correct them in the data, choose another kind, or tick "
            f"'generalize codes outside {name}' to release them only as *.",
            {"column": column, "values": invalid[:SHOWN]},
        )
    build = codes.icd10_hierarchy if kind == Kind.ICD10 else codes.icd9cm_hierarchy
    try:
        return build(column, present, lenient=lenient)
    except HierarchyError:
        pass  # codes in no block or chapter: named below, in the page's words
    uncovered = [v for v in present if not _covered(kind, column, v)]
    raise ApplicationError(
        f"Hierarchy of '{column}': {len(uncovered)} value(s) are written as {name} codes but "
        f"lie in no {name} block or chapter: {_shown(uncovered)}. Correct them in the data, "
        f"or tick 'generalize codes outside {name}' to release them at their chapter (or *).",
        {"column": column, "values": uncovered[:SHOWN]},
    )


def _covered(kind: str, column: str, value: str) -> bool:
    build = codes.icd10_hierarchy if kind == Kind.ICD10 else codes.icd9cm_hierarchy
    try:
        build(column, [value])
    except HierarchyError:
        return False
    return True


def code_level_labels(kind: str, height: int) -> list[str] | None:
    """Names of every level of a code hierarchy (None for another kind)."""
    names = LEVEL_NAMES.get(kind)  # type: ignore[call-overload]
    if names is None or len(names) != height + 1:
        return None
    return list(names)


def looks_like_icd10(values: Sequence[str | None]) -> bool:
    """Whether most different values (``SUGGEST_SHARE``) are written as WHO ICD-10 codes."""
    present = [v for v in dict.fromkeys(values) if v is not None and v.strip()]
    if not present:
        return False
    looking = sum(1 for v in present if _ICD10_LOOK.match(re.sub(r"\s", "", v.upper())))
    return looking >= SUGGEST_SHARE * len(present)


def suggested_code_spec(values: Sequence[str | None]) -> dict[str, Any]:
    """Settings offered with the ICD-10 kind: lenient when some values are not codes of
    the classification (so the offer can be built; the page says so)."""
    try:
        code_hierarchy("", Kind.ICD10, {}, values)
    except ApplicationError:
        return {"lenient": True}
    return {}
