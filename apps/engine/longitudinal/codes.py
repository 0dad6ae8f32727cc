"""Built-in hierarchies of medical codes (LONGITUDINAL.md §2.8).

* ICD-10 (WHO): code as written → 3-character category → block → chapter → ``*``
  (``data/icd10_who.csv``).
* ICD-9-CM: code as written (5 digits) → 4 digits → 3 digits (category) → section →
  chapter → ``*`` (``data/icd9cm.csv``; V and E codes are their own chapters).

Codes are read leniently as written ("I21.0", "i210 ", "A17.0†" are I21; "250.01",
"25001" are 250; "38.9" is 038). A code whose category lies in no block (or no chapter)
is an error naming the codes, unless the *lenient* variant is chosen: then it takes its
chapter's range at the block level when it has a chapter, and ``*`` above its category
otherwise. Blocks and chapters are labelled by their range ("I20-I25", "I00-I99"); the
titles are available from :func:`code_titles` for reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from apps.engine.errors import HierarchyError, preview
from apps.engine.hierarchies import TOP, Hierarchy

DATA: Traversable = resources.files(__package__).joinpath("data")  # also inside a zip
ICD10 = "icd10"
ICD9CM = "icd9cm"
LENIENT = ":lenient"


@dataclass(frozen=True)
class CodeRange:
    """A chapter or block (section) of a code system: categories ``start..end``."""

    level: str  # "chapter", "block" or "section"
    code: str  # chapter number (empty for blocks)
    start: str
    end: str
    title: str

    @property
    def label(self) -> str:
        return f"{self.start}-{self.end}"


@cache
def code_ranges(system: str) -> tuple[CodeRange, ...]:
    """Chapters and blocks of ``system`` ("icd10" or "icd9cm"), in file order."""
    name = {ICD10: "icd10_who.csv", ICD9CM: "icd9cm.csv"}.get(system)
    if name is None:
        raise HierarchyError(f"unknown code system {system!r} (icd10, icd9cm)")
    out = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        level, code, start, end, title = line.split(";", 4)
        out.append(CodeRange(level, code, start, end, title))
    return tuple(out)


def code_titles(system: str) -> dict[str, str]:
    """Label ("I20-I25") → title of every block and chapter of ``system``."""
    return {r.label: r.title for r in code_ranges(system)}


# --------------------------------------------------------------------------- ICD-10

_ICD10 = re.compile(r"^([A-Z][0-9][0-9A-Z])([0-9A-Z]{0,4})$")


def icd10_category(code: str) -> str | None:
    """The 3-character category of an ICD-10 code as written, or None if it is not one."""
    text = re.sub(r"[\s.]", "", code.upper()).rstrip("†*+!")
    match = _ICD10.match(text)
    return match.group(1) if match else None


def _icd10_key(category: str) -> str:
    return category


# --------------------------------------------------------------------------- ICD-9-CM

_ICD9_V = re.compile(r"^V(\d{2})(?:\.?(\d{1,2}))?$")
_ICD9_E = re.compile(r"^E(\d{3})(?:\.?(\d))?$")
_ICD9_DOT = re.compile(r"^(\d{1,3})\.(\d{1,2})$")
_ICD9_PLAIN = re.compile(r"^(\d{3})(\d{0,2})$")
_ICD9_SHORT = re.compile(r"^(\d{1,2})$")


def icd9_parts(code: str) -> tuple[str, str] | None:
    """(category, 4-digit form) of an ICD-9-CM code as written, or None:
    "250.01" → ("250", "250.0"); "V01.71" → ("V01", "V01.7"); "E800.0" → ("E800", "E800.0")."""
    text = re.sub(r"\s", "", code.upper())
    for pattern, prefix in ((_ICD9_V, "V"), (_ICD9_E, "E")):
        match = pattern.match(text)
        if match:
            category = f"{prefix}{match.group(1)}"
            digits = match.group(2) or ""
            return category, f"{category}.{digits[0]}" if digits else category
    match = _ICD9_DOT.match(text) or _ICD9_PLAIN.match(text) or _ICD9_SHORT.match(text)
    if not match:
        return None
    category = match.group(1).zfill(3)
    digits = match.group(2) if match.lastindex and match.lastindex >= 2 else ""
    return category, f"{category}.{digits[0]}" if digits else category


def _icd9_key(category: str) -> tuple[int, int]:
    kind = {"V": 1, "E": 2}.get(category[0], 0)
    return kind, int(category[1:] if kind else category)


# --------------------------------------------------------------------------- hierarchies


def _find(ranges: Iterable[CodeRange], key: object, keyer: object) -> CodeRange | None:
    for r in ranges:
        if keyer(r.start) <= key <= keyer(r.end):  # type: ignore[operator]
            return r
    return None


def _build(
    system: str,
    column: str,
    values: Iterable[str | None],
    *,
    lenient: bool,
) -> Hierarchy:
    ranges = code_ranges(system)
    chapters = [r for r in ranges if r.level == "chapter"]
    blocks = [r for r in ranges if r.level != "chapter"]
    keyer = _icd10_key if system == ICD10 else _icd9_key
    rows: list[tuple[str, ...]] = []
    invalid: list[str] = []
    uncovered: list[str] = []
    for value in dict.fromkeys(v for v in values if v is not None):
        if system == ICD10:
            category = icd10_category(value)
            finer: tuple[str, ...] = (category,) if category else ()
        else:
            parts = icd9_parts(value)
            category = parts[0] if parts else None
            finer = (parts[1], parts[0]) if parts else ()
        if category is None:
            invalid.append(value)
            if lenient:
                rows.append((value, *([TOP] * (len(finer_levels(system)) + 2)), TOP))
            continue
        key = keyer(category)
        block = _find(blocks, key, keyer)
        chapter = _find(chapters, key, keyer)
        if block is None or chapter is None:
            uncovered.append(value)
            if not lenient:
                continue
            block_label = chapter.label if chapter is not None else TOP
            chapter_label = chapter.label if chapter is not None else TOP
        else:
            block_label, chapter_label = block.label, chapter.label
        rows.append((value, *finer, block_label, chapter_label, TOP))
    name = "ICD-10" if system == ICD10 else "ICD-9-CM"
    if not lenient and invalid:
        raise HierarchyError(
            f"{name} hierarchy of {column!r}: not {name} codes: {preview(invalid)}; "
            f"correct them or choose the lenient variant ({system}{LENIENT})"
        )
    if not lenient and uncovered:
        raise HierarchyError(
            f"{name} hierarchy of {column!r}: codes in no {name} block or chapter: "
            f"{preview(uncovered)}; correct them or choose the lenient variant "
            f"({system}{LENIENT}, which generalizes them to their chapter or '*')"
        )
    if not rows:
        rows.append((TOP, *([TOP] * (len(finer_levels(system)) + 2)), TOP))
    rows.sort(key=lambda row: row[0])
    return Hierarchy(column, tuple(rows))


def finer_levels(system: str) -> tuple[str, ...]:
    """Names of the levels between the code and its block."""
    return ("category",) if system == ICD10 else ("4 digits", "category")


def icd10_hierarchy(
    column: str, values: Iterable[str | None], *, lenient: bool = False
) -> Hierarchy:
    """ICD-10: code → 3-character category → block → chapter → ``*`` (levels 0-4)."""
    return _build(ICD10, column, values, lenient=lenient)


def icd9cm_hierarchy(
    column: str, values: Iterable[str | None], *, lenient: bool = False
) -> Hierarchy:
    """ICD-9-CM: code → 4 digits → 3 digits → section → chapter → ``*`` (levels 0-5)."""
    return _build(ICD9CM, column, values, lenient=lenient)
