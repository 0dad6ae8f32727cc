"""Identifiers inside free text: find them, count them, replace them by typed placeholders.

Free text (clinical notes, comments, reasons for a call) can name a person anywhere in a
sentence. The guidelines do not let an automatic check clear such a column: a person reads
it, or it stays out of the release (IPC guideline, step 2 on direct identifiers; Portage
guidance on qualitative data). What software can do is find what it recognizes, so that a
column with names or phone numbers is never released as "other", and replace each span it
finds by a placeholder saying what was there (``[NAME]``, ``[PHONE]``, ``[DATE]``…).

Detectors, applied in this order on the text left by the previous ones (so a span is counted
once, by the first detector that recognizes it):

- e-mail addresses and web addresses;
- exact dates: ISO (2024-03-05), numeric (05/03/2024) and written with a month name in
  English or French (March 5, 2024; 5 mars 2024) — a month and year alone is not counted;
- North American phone numbers in the usual spellings;
- identification numbers: 10-digit health numbers with an optional version code, SINs
  written in three groups, record numbers such as ``ONR-100231``;
- record numbers by their context: a number after a word that names one (MRN, HCN, chart,
  record, claim, health card, dossier…: "MRN 482913", "chart #4821", "claim no. CL-88213");
- record numbers by their shape alone: a run of 6 digits or more standing alone (not the
  integer or decimal part of an amount or a measure: "$125000.00", "0.123456" stay), letters
  followed by 5 digits or more ("ab123456"), letters and digits interleaved in four groups or
  more ("A1B2C3D4"), and a Quebec health card's four letters and eight digits;
- Canadian postal codes and street addresses (a civic number followed by a street type);
- exact ages ("77-year-old", "aged 77", "77 ans", "77 yo");
- names: a word after a title or a relation ("Dr. Tremblay", "Patient Léa", "Daughter
  Amira"), and capitalized words found in the embedded lists of common given names and
  surnames (:mod:`apps.engine.namelists`).

Everything is a polars expression (Rust regular expressions), so a column of millions of
notes is scanned and scrubbed without a Python loop. No detector finds every identifier:
a name that is not on the lists and follows no title is missed, which is why a scrubbed
column still needs a person's reading and the report says which detectors ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from apps.engine.namelists import FIRST_NAMES, LAST_NAMES

__all__ = [
    "DETECTORS",
    "SPAN_TYPES",
    "ColumnScan",
    "Detector",
    "detector_descriptions",
    "scan_frame",
    "scan_series",
    "scrub_expr",
    "scrub_text",
]


@dataclass(frozen=True)
class Detector:
    span_type: str  # NAME, PHONE, ...
    description: str  # what it recognizes, in words, for the report
    pattern: str  # a Rust regular expression
    replacement: str  # may keep context through $1 ("Dr. [NAME]")
    # Replacements in a row: a pattern that reads the character on each side of its span
    # (the regular expressions have no look-around) cannot find two spans one character
    # apart in one pass ("482913 553311"); a second pass finds the other.
    passes: int = 1


def _strip(name: str) -> str:
    import unicodedata

    return "".join(
        ch for ch in unicodedata.normalize("NFD", name) if unicodedata.category(ch) != "Mn"
    )


def _alternation(words: Iterable[str]) -> str:
    # Longest first, so "Marie-Claude" wins over "Marie".
    unique = sorted(set(words), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w) for w in unique)


_NAMES = _alternation(
    w for name in (*FIRST_NAMES, *LAST_NAMES) for w in {name, _strip(name)} if len(w) >= 2
)
_MONTHS_EN = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)"
)
_MONTHS_ANY = (
    r"(?i:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|janvier|février|fevrier|"
    r"mars|avril|mai|juin|juillet|août|aout|septembre|octobre|novembre|décembre|decembre|"
    r"janv|févr|fevr|avr|juil|déc)"
)
_TITLES = (
    r"(?:Dr|Dre|Mr|Mrs|Ms|Miss|Mx|Mme|Mlle|Prof|Sr|Fr|Rev|Docteur|Docteure|Madame|Monsieur|"
    r"Mademoiselle)\.?"
)
_RELATIONS = (
    r"(?i:patient|patiente|client|cliente|resident|résident|son|daughter|wife|husband|spouse|"
    r"partner|mother|father|mom|dad|sister|brother|aunt|uncle|niece|nephew|grandson|"
    r"granddaughter|friend|neighbour|neighbor|caregiver|nurse|named|called|fils|fille|"
    r"épouse|epouse|époux|epoux|conjoint|conjointe|mère|mere|père|pere|sœur|soeur|frère|"
    r"frere|ami|amie|infirmière|infirmiere|nommé|nommée|appelé|appelée|signed|signé)"
)
_NAME_WORD = r"\p{Lu}[\p{Ll}'’]+(?:-\p{Lu}?[\p{Ll}'’]+)*"
# Words that name a record number: medical record, health card, chart, claim, file numbers,
# in English and French; the number may follow "number", "no.", "#", a colon.
_RECORD_WORDS = (
    r"(?i:MRN|HCN|OHIP|RAMQ|NAM|chart|record|dossier|claim|r[ée]clamation|health[ -]card|"
    r"carte[ -]sant[ée]|member|policy|police|patient[ -]id|client[ -]id|pt[ -]id|ID)"
)
_RECORD_NUMBER = (
    # letters then 3 digits or more (CL-88213), 5 digits or more, digits in groups
    # (4821 339 102, 123-4567), or 4 digits that are not a year (#4821, not 2023)
    r"(?:[A-Za-z]{1,4}-?\d{3,}[\dA-Za-z-]*|\d{5,}[\dA-Za-z-]*|\d{2,5}(?:[- ]\d{2,}){1,3}"
    r"|(?:[03-9]\d{3}|1[0-8]\d\d|2[1-9]\d\d))\b"
)
_STREET_TYPES = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Drive|Dr|Crescent|Cres|Court|Ct|Lane|"
    r"Ln|Way|Place|Pl|Parkway|Pkwy|Terrace|Terr|Circle|Cir|Square|Sq|Trail|Trl|Highway|Hwy|"
    r"Line|Sideroad|Concession|Gate|Grove|Heights|Hts)"
)

DETECTORS: tuple[Detector, ...] = (
    Detector(
        "EMAIL",
        "e-mail addresses",
        r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}",
        "[EMAIL]",
    ),
    Detector(
        "URL",
        "web addresses (http://, https://, www.)",
        r"(?i:https?://|www\.)[^\s<>\"]+",
        "[URL]",
    ),
    Detector(
        "DATE",
        "exact dates: 2024-03-05, 05/03/2024, March 5, 2024, 5 mars 2024",
        r"\b(?:19|20)\d{2}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])\b"
        r"|\b\d{1,2}[/.-]\d{1,2}[/.-](?:19|20)?\d{2}\b"
        rf"|\b{_MONTHS_EN}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? (?:19|20)\d{{2}})?\b"
        rf"|\b\d{{1,2}}(?:st|nd|rd|th|er)? {_MONTHS_ANY}\.?(?:,? (?:19|20)\d{{2}})?\b",
        "[DATE]",
    ),
    Detector(
        "PHONE",
        "North American telephone numbers: (416) 555-0199, 416-555-0199, +1 416 555 0199",
        r"(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\)|\b[2-9]\d{2})[ .-]?[2-9]\d{2}[ .-]?\d{4}\b"
        r"(?: ?(?i:ext|x|poste)\.? ?\d{1,5}\b)?",
        "[PHONE]",
    ),
    Detector(
        "ID",
        "identification numbers: health numbers (10 digits and a version code), SINs "
        "(3 groups of 3 digits), runs of 7 digits or more, record numbers (ABC-12345)",
        r"\b\d{4}[ -]?\d{3}[ -]?\d{3}(?:[ -]?[A-Z]{2})?\b"
        r"|\b\d{3}[ -]\d{3}[ -]\d{3}\b"
        r"|\b[A-Z]{1,5}-?\d{4,}\b",
        "[ID]",
    ),
    Detector(
        "ID",
        "record numbers after a word naming them: MRN 482913, chart #4821, claim no. CL-88213",
        rf"\b({_RECORD_WORDS}(?:\s*(?i:number|num|nos?|n°|nº|numéro|numero|#|id))?\.?\s*[:#]?\s*)"
        + _RECORD_NUMBER,
        "$1[ID]",
    ),
    Detector(
        "ID",
        "identifier-shaped codes: 6 digits or more standing alone (not an amount or a decimal), "
        "letters and 5 digits or more (ab123456), letters and digits interleaved (A1B2C3D4)",
        # A run of digits with the character on each side, so that the integer and decimal
        # parts of "$125000.00", "125000.50" or "0.123456" are not read as identifiers.
        r"(^|[^\w$€£.,/-])(\d{6,})([^\w.,/%$€-]|[.,](?:\D|$)|$)"
        r"|\b[A-Za-z]{1,5}-?\d{5,}[A-Za-z]{0,2}\b"
        r"|\b[A-Za-z]*\d+(?:[A-Za-z]+\d+){3,}[A-Za-z]*\b"
        r"|\b[A-Z]{4} ?\d{4} ?\d{4}\b",
        "$1[ID]$3",
        passes=2,
    ),
    Detector(
        "POSTAL_CODE",
        "Canadian postal codes (K1A 0B1)",
        r"\b[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z] ?\d[ABCEGHJ-NPRSTV-Z]\d\b",
        "[POSTAL_CODE]",
    ),
    Detector(
        "ADDRESS",
        "street addresses: a civic number and a street (12 Elm Street, 450 rue Sainte-Anne)",
        rf"\b\d{{1,5}}[A-Za-z]?(?:-\d{{1,5}})? (?:{_NAME_WORD}[ .]){{1,4}}?{_STREET_TYPES}\b\.?"
        r"|\b\d{1,5},? (?i:rue|avenue|av\.|boulevard|boul\.|chemin|ch\.|route|rang|place) "
        rf"(?:(?:de la|de l'|du|des|de|d'|la|le) ?)?{_NAME_WORD}(?:[ -]{_NAME_WORD})*",
        "[ADDRESS]",
    ),
    Detector(
        "AGE",
        "exact ages: 77-year-old, aged 77, age 77, 77 yo, 77 ans",
        r"\b\d{1,3}[- ](?i:years?|yrs?|yo)[- ](?i:old)\b"
        r"|\b(?i:aged?|âgée?|agee?)(?: de)?:? \d{1,3}\b"
        r"|\b\d{1,3} ?(?i:y/o|yo|yrs|ans)\b",
        "[AGE]",
    ),
    Detector(
        "NAME",
        "names after a title or a relation (Dr. Tremblay, Patient Léa, Daughter Amira)",
        rf"\b({_TITLES}|{_RELATIONS}) {_NAME_WORD}(?: {_NAME_WORD})?",
        "$1 [NAME]",
    ),
    Detector(
        "NAME",
        "capitalized words on the embedded lists of common given names and surnames",
        rf"\b(?:{_NAMES})\b",
        "[NAME]",
    ),
)
SPAN_TYPES: tuple[str, ...] = tuple(dict.fromkeys(d.span_type for d in DETECTORS))
SPAN_LABELS = {
    "EMAIL": "e-mail addresses",
    "URL": "web addresses",
    "DATE": "exact dates",
    "PHONE": "phone numbers",
    "ID": "identification numbers",
    "POSTAL_CODE": "postal codes",
    "ADDRESS": "street addresses",
    "AGE": "exact ages",
    "NAME": "names",
}
MAX_EXAMPLES = 3
EXAMPLE_LENGTH = 160


def detector_descriptions() -> list[dict[str, str]]:
    """What ran, for the report: one line per detector, in the order they run."""
    return [
        {"type": d.span_type, "placeholder": f"[{d.span_type}]", "description": d.description}
        for d in DETECTORS
    ]


def scrub_expr(expr: pl.Expr) -> pl.Expr:
    """The text with every detected span replaced by its placeholder; missing stays missing."""
    text = expr.cast(pl.String)
    for detector in DETECTORS:
        for _ in range(detector.passes):
            text = text.str.replace_all(detector.pattern, detector.replacement)
    return text


def scrub_text(value: str) -> str:
    """One value, scrubbed (the same expressions as a column)."""
    return str(pl.select(scrub_expr(pl.lit(value, dtype=pl.String))).item())


@dataclass(frozen=True)
class ColumnScan:
    column: str
    values: int  # non-missing values scanned
    rows_with_spans: int
    spans: dict[str, int] = field(default_factory=dict)  # type → spans found (0s left out)
    rows_by_type: dict[str, int] = field(default_factory=dict)  # type → values with one or more
    examples: tuple[str, ...] = ()  # values with spans, scrubbed (never the raw text)

    @property
    def total(self) -> int:
        return sum(self.spans.values())

    @property
    def share(self) -> float:
        return self.rows_with_spans / self.values if self.values else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "values": self.values,
            "rows_with_spans": self.rows_with_spans,
            "spans": dict(self.spans),
            "rows_by_type": dict(self.rows_by_type),
            "examples": list(self.examples),
        }

    def in_words(self) -> str:
        """'3 names and 2 phone numbers in 4 of 50 values'."""
        parts = [f"{n} {SPAN_LABELS.get(t, t.lower())}" for t, n in self.spans.items() if n]
        if not parts:
            return f"nothing detected in {self.values} values"
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{listed} in {self.rows_with_spans} of {self.values} values"


def _scan_exprs(column: str) -> list[pl.Expr]:
    text = pl.col(column).cast(pl.String)
    exprs = [text.is_not_null().sum().alias("values")]
    any_hit: pl.Expr = pl.lit(False)
    by_type: dict[str, pl.Expr] = {}
    for index, detector in enumerate(DETECTORS):
        hits = text.str.count_matches(detector.pattern)
        text = text.str.replace_all(detector.pattern, detector.replacement)
        for _ in range(1, detector.passes):
            hits = hits + text.str.count_matches(detector.pattern)
            text = text.str.replace_all(detector.pattern, detector.replacement)
        exprs.append(hits.sum().alias(f"d{index}"))
        any_hit = any_hit | (hits > 0)
        by_type[detector.span_type] = by_type.get(detector.span_type, pl.lit(False)) | (hits > 0)
    exprs.append(any_hit.fill_null(False).sum().alias("rows"))
    exprs += [hit.fill_null(False).sum().alias(f"t_{t}") for t, hit in by_type.items()]
    return exprs


def _examples(frame: pl.LazyFrame, column: str) -> tuple[str, ...]:
    text = pl.col(column).cast(pl.String)
    scrubbed = scrub_expr(pl.col(column))
    rows = (
        frame.select(text.alias("raw"), scrubbed.alias("clean"))
        .filter(pl.col("raw").is_not_null() & (pl.col("raw") != pl.col("clean")))
        .head(MAX_EXAMPLES)
        .collect(engine="streaming")
    )
    out = []
    for clean in rows.get_column("clean").to_list():
        shown = clean if len(clean) <= EXAMPLE_LENGTH else clean[: EXAMPLE_LENGTH - 1] + "…"
        out.append(shown)
    return tuple(out)


def scan_frame(
    data: pl.DataFrame | pl.LazyFrame, columns: Sequence[str], *, examples: bool = True
) -> list[ColumnScan]:
    """Scan each of ``columns`` (cast to text) and count the spans each detector finds.

    Given a query (a release read with ``scan_parquet``), each column is one streaming
    aggregate: batches of rows are scanned in turn and only the sums are kept, so a
    release of any number of rows is scanned in bounded memory (6 M rows: 134 MB peak,
    against 860 MB with the release loaded first)."""
    frame = data.lazy()
    scans = []
    for column in columns:
        figures = frame.select(_scan_exprs(column)).collect(engine="streaming").row(0, named=True)
        spans: dict[str, int] = {}
        for index, detector in enumerate(DETECTORS):
            found = int(figures[f"d{index}"] or 0)
            if found:
                spans[detector.span_type] = spans.get(detector.span_type, 0) + found
        rows = int(figures["rows"] or 0)
        scans.append(
            ColumnScan(
                column=column,
                values=int(figures["values"] or 0),
                rows_with_spans=rows,
                spans=spans,
                rows_by_type={t: int(figures[f"t_{t}"] or 0) for t in spans},
                examples=_examples(frame, column) if examples and rows else (),
            )
        )
    return scans


def scan_series(values: pl.Series | Sequence[str], *, column: str = "text") -> ColumnScan:
    series = values if isinstance(values, pl.Series) else pl.Series(column, list(values))
    return scan_frame(pl.DataFrame({column: series.cast(pl.String)}), [column])[0]
