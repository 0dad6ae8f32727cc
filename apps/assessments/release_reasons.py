"""The analyst's explanation of a finding on a released column, which lifts its block.

A finding in the release (identifiers the detectors still find in a column, a column that
singles people out or predicts a sensitive variable) blocks the submission until it is
treated or explained. An explanation is either one of a fixed list of grounds, or a
sentence of the analyst's own that names what was found — "x x x x x x" explained nothing
and lifted the block. Either way it is recorded with the findings it answers: when the
release is written again and something new is found, the block returns. The reviewer sees
the explanation beside the finding (IPC 2016, step 2; Portage/CARL on free text).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from apps.core.errors import ApplicationError

MIN_REVIEW_WORDS = 6
MIN_DISTINCT_WORDS = 4


@dataclass(frozen=True)
class Ground:
    key: str
    text: str  # what the reviewer reads
    answers: frozenset[str]  # the families of findings it can answer


IDENTIFIER_FAMILIES = frozenset(
    {"NAME", "PHONE", "EMAIL", "URL", "DATE", "AGE", "ID", "POSTAL_CODE", "ADDRESS"}
)
SINGLES_OUT = "singles_out"  # small cells, uniques, data risk above the target
PREDICTS = "predicts"

GROUNDS: tuple[Ground, ...] = (
    Ground(
        "not_about_people",
        "What the detectors found does not refer to a person: names of drugs, products, "
        "places or organizations, or dates and numbers that are not about anyone.",
        IDENTIFIER_FAMILIES,
    ),
    Ground(
        "read_every_value",
        "A person read every released value of this column and found nothing that "
        "identifies anyone.",
        IDENTIFIER_FAMILIES,
    ),
    Ground(
        "not_knowable",
        "No one outside the custodian can know a person's value of this column: it is "
        "recorded nowhere else, so an intruder can neither single anyone out with it nor "
        "place anyone in a class by it.",
        frozenset({SINGLES_OUT, PREDICTS}),
    ),
)
GROUNDS_BY_KEY = {g.key: g for g in GROUNDS}

# Words that name each family of findings (English and French, accents stripped; see
# `_names` for how a word matches one).
_FAMILY_WORDS: dict[str, tuple[str, ...]] = {
    "NAME": ("name", "nom", "prenom", "surname"),
    "PHONE": ("phone", "telephon", "tel"),
    "EMAIL": ("email", "e-mail", "mail", "courriel"),
    "URL": ("url", "web", "website", "webpage", "link", "lien", "site", "address"),
    "DATE": ("date",),
    "AGE": ("age",),
    "ID": ("number", "numero", "identif", "id", "code"),
    "POSTAL_CODE": ("postal", "postcode", "zip"),
    "ADDRESS": ("address", "adresse", "street", "rue", "avenue"),
    SINGLES_OUT: ("small", "rare", "few", "cell", "unique", "alone", "single", "risk", "class"),
    PREDICTS: ("predict", "homogen", "sensitive", "reveal", "sensible"),
}
FAMILY_LABELS = {
    "NAME": "names",
    "PHONE": "phone numbers",
    "EMAIL": "e-mail addresses",
    "URL": "web addresses",
    "DATE": "exact dates",
    "AGE": "exact ages",
    "ID": "identification numbers",
    "POSTAL_CODE": "postal codes",
    "ADDRESS": "street addresses",
    SINGLES_OUT: "records it singles out",
}


def _words(text: str) -> list[str]:
    plain = "".join(
        ch for ch in unicodedata.normalize("NFD", text.lower()) if unicodedata.category(ch) != "Mn"
    )
    return re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", plain)


def family_of(kind: str) -> str:
    """The family of a finding's kind: a span type, ``singles_out``, or ``predicts:<s>``."""
    if kind in ("small_cells", "uniques", "risk"):
        return SINGLES_OUT
    return kind


# A stem this long is cut on purpose ("telephon", "identif", "homogen") and matches every
# word it begins; a shorter one is a word of its own and matches only its forms: "ages",
# "aged" name ages, "agency" does not; "tell" is not a telephone, "ideal" not an identifier.
PREFIX_STEM_LENGTH = 6
_FORMS = ("", "s", "es", "d", "ed", "er", "ers", "est", "ing", "ly", "y")


def _names(word: str, stem: str) -> bool:
    if len(stem) >= PREFIX_STEM_LENGTH:
        return word.startswith(stem)
    forms = {stem + ending for ending in _FORMS}
    if stem.endswith("e"):
        forms |= {stem[:-1] + ending for ending in ("ing", "ed")}  # dating, naming
    return word in forms


def _names_family(words: list[str], family: str) -> bool:
    if family.startswith(PREDICTS + ":"):
        variable = family.split(":", 1)[1]
        stems = (*_FAMILY_WORDS[PREDICTS], *_words(variable), variable.lower())
    else:
        stems = _FAMILY_WORDS.get(family, (family.lower(),))
    return any(_names(w, stem) for w in words for stem in stems)


def family_label(family: str) -> str:
    if family.startswith(PREDICTS + ":"):
        return f"what it predicts of {family.split(':', 1)[1]}"
    return FAMILY_LABELS.get(family, family.lower())


def review_entry(
    *, column: str, kinds: Iterable[str], reason: str, ground: str, by: str
) -> dict[str, Any]:
    """The stored explanation of a column's findings (``kinds``), or an ApplicationError
    naming what is missing. ``ground``: a key of `GROUNDS` fit for every finding; else
    ``reason`` must be a sentence (6 words, 4 different) naming each family of findings."""
    families = sorted({family_of(k) for k in kinds})
    text = " ".join(reason.split())
    if ground:
        chosen = GROUNDS_BY_KEY.get(ground)
        if chosen is None:
            raise ApplicationError(
                f"'{ground}' is not one of the grounds offered.",
                {"column": column, "field": "ground"},
            )
        unanswered = [f for f in families if f.split(":", 1)[0] not in chosen.answers]
        if unanswered:
            raise ApplicationError(
                f"“{chosen.text}” does not answer {', '.join(family_label(f) for f in unanswered)} "
                f"in '{column}': explain those in your own words.",
                {"column": column, "field": "ground"},
            )
    else:
        words = _words(text)
        missing = [f for f in families if not _names_family(words, f)]
        if len(words) < MIN_REVIEW_WORDS or len(set(words)) < MIN_DISTINCT_WORDS or missing:
            named = ", ".join(family_label(f) for f in (missing or families))
            raise ApplicationError(
                f"Explain in a sentence (at least {MIN_REVIEW_WORDS} words) why what was found "
                f"in '{column}' does not identify anyone, naming what was found ({named}), or "
                "choose one of the grounds offered.",
                {"column": column, "field": "reason"},
            )
    return {"reason": text, "ground": ground, "by": by, "kinds": sorted(set(kinds))}


def review_text(entry: Any) -> str:
    """What the reviewer reads of an explanation: the ground's sentence and/or the reason."""
    if not isinstance(entry, dict):
        return ""
    ground = GROUNDS_BY_KEY.get(str(entry.get("ground") or ""))
    parts = [ground.text] if ground else []
    if entry.get("reason"):
        parts.append(str(entry["reason"]))
    return " — ".join(parts)


def review_by(entry: Any) -> str:
    """Who recorded an explanation."""
    return str(entry.get("by") or "") if isinstance(entry, dict) else ""


def review_covers(entry: Any, kinds: Iterable[str]) -> bool:
    """Whether a stored explanation answers every current finding (one recorded before the
    findings were kept with it answers nothing)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("kinds"), list):
        return False
    return set(kinds) <= set(entry["kinds"])


def grounds_for(kinds: Iterable[str]) -> list[Ground]:
    """The grounds that can answer every one of these findings (offered on the page)."""
    families = {family_of(k).split(":", 1)[0] for k in kinds}
    return [g for g in GROUNDS if families and families <= set(g.answers)]
