"""An explanation that lifts a block must name what was found (issue #23, item 8): a word
that merely begins like the finding's name ("agency" for ages, "tell" for telephone numbers,
"ideal" for identification numbers, "classic" for classes) names nothing.

The families and their words are read from the module itself, so a word added to a family is
tested as soon as it exists."""

from __future__ import annotations

import pytest

from apps.assessments.release_reasons import (
    _FAMILY_WORDS,
    PREFIX_STEM_LENGTH,
    SINGLES_OUT,
    review_entry,
)
from apps.core.errors import ApplicationError

FILLER = "after reading the whole released column we decided that this"
# Endings that make another word of a short stem, not a form of it.
OTHER_WORDS = ("ncy", "nt", "nda", "llo", "ic", "ology")
# Endings that keep the word (plural, past, comparative).
FORMS = ("s", "es", "ed", "d", "er")


def _kinds(family: str) -> list[str]:
    return ["small_cells"] if family == SINGLES_OUT else [family]


def _short_stems() -> list[tuple[str, str]]:
    return [
        (family, stem)
        for family, stems in _FAMILY_WORDS.items()
        for stem in stems
        if stem.isalpha() and len(stem) < PREFIX_STEM_LENGTH
    ]


@pytest.mark.parametrize(("family", "stem"), _short_stems())
def test_a_word_that_only_begins_like_the_finding_names_nothing(family: str, stem: str) -> None:
    others = [f"{stem}{ending}" for ending in OTHER_WORDS]
    # (none of them is itself a word of the family)
    others = [w for w in others if not any(w == s for ss in _FAMILY_WORDS.values() for s in ss)]
    for word in others:
        with pytest.raises(ApplicationError, match="naming what was found"):
            review_entry(
                column="c",
                kinds=_kinds(family),
                reason=f"{FILLER} {word} is fine.",
                ground="",
                by="a",
            )


@pytest.mark.parametrize(("family", "stem"), _short_stems())
def test_the_finding_named_in_any_of_its_forms_is_an_explanation(family: str, stem: str) -> None:
    for word in (stem, *(f"{stem}{form}" for form in FORMS)):
        entry = review_entry(
            column="c", kinds=_kinds(family), reason=f"{FILLER} {word} is fine.", ground="", by="a"
        )
        assert entry["reason"].endswith(f"{word} is fine.")


def test_long_stems_match_the_words_they_begin() -> None:
    """Stems cut on purpose ("telephon", "identif", "homogen") still match their words."""
    for family, word in (("PHONE", "telephonique"), ("ID", "identification"),
                         ("predicts:dx", "homogeneous"), ("predicts:dx", "prediction")):  # fmt: skip
        review_entry(
            column="c", kinds=[family], reason=f"{FILLER} {word} is fine.", ground="", by="a"
        )
