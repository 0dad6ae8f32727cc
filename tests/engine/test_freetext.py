"""The free-text detectors and the scrubber: every detector on hand-made sentences, the counts
of a scan, and the demo register's notes scrubbed clean of what its generator put in them."""

from __future__ import annotations

import re

import polars as pl
import pytest

from apps.datasets.demo import generate_register
from apps.engine.freetext import SPAN_TYPES, scan_frame, scan_series, scrub_expr, scrub_text
from apps.engine.masking import mask_direct_identifiers
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("Write to lea.green@gmail.com today", "Write to [EMAIL] today"),
        ("See https://example.org/p/123 or www.x.ca", "See [URL] or [URL]"),
        ("Admitted 2024-03-05, seen 05/03/2024.", "Admitted [DATE], seen [DATE]."),
        ("Admitted on March 5, 2024 and 12 mars 2024.", "Admitted on [DATE] and [DATE]."),
        ("Back in March 2024.", "Back in March 2024."),  # month and year: not exact
        ("Call (416) 555-0199 or 613.555.0100 ext. 12", "Call [PHONE] or [PHONE]"),
        ("Reach +1 905 555 0123.", "Reach [PHONE]."),
        ("Card 1234 567 890 AB, SIN 046 454 286", "Card [ID], SIN [ID]"),
        ("Chart ONR-100231 and 88812345.", "Chart [ID] and [ID]."),
        ("Lives near K1A 0B1 in Ottawa.", "Lives near [POSTAL_CODE] in Ottawa."),
        ("Home: 12 Elm Street, then 450 rue Sainte-Anne.", "Home: [ADDRESS], then [ADDRESS]."),
        ("A 77-year-old woman, aged 81; 64 yo; 90 ans.", "A [AGE] woman, [AGE]; [AGE]; [AGE]."),
        (
            "Seen by Dr. Okonkwo; Daughter Zelda called.",
            "Seen by Dr. [NAME]; Daughter [NAME] called.",
        ),
        ("Patient Léa Green asked for a nurse.", "Patient [NAME] asked for a nurse."),
        ("Mary and Tremblay came.", "[NAME] and [NAME] came."),
        ("Type 2 diabetes, stable for 3 days.", "Type 2 diabetes, stable for 3 days."),
    ],
)
def test_each_detector_replaces_its_spans(text: str, scrubbed: str) -> None:
    assert scrub_text(text) == scrubbed


def test_a_scan_counts_spans_by_type_and_masks_its_examples() -> None:
    notes = [
        "Patient Léa Green, 77-year-old, call 416-555-0199 or 416-555-0100.",
        "No concerns.",
        None,
        "Dr. Tremblay saw her on 2024-01-02.",
    ]
    scan = scan_series(pl.Series("note", notes, dtype=pl.String), column="note")
    assert scan.values == 3
    assert scan.rows_with_spans == 2
    assert scan.spans == {"DATE": 1, "PHONE": 2, "AGE": 1, "NAME": 2}
    assert scan.rows_by_type == {"DATE": 1, "PHONE": 1, "AGE": 1, "NAME": 2}
    assert scan.examples == (
        "Patient [NAME], [AGE], call [PHONE] or [PHONE].",
        "Dr. [NAME] saw her on [DATE].",
    )
    assert scan.in_words() == (
        "1 exact dates, 2 phone numbers, 1 exact ages and 2 names in 2 of 3 values"
    )


def test_scrubbing_keeps_missing_values_missing() -> None:
    frame = pl.DataFrame({"n": ["Call 416-555-0199", None]})
    assert frame.select(scrub_expr(pl.col("n"))).to_series().to_list() == ["Call [PHONE]", None]


def _words(texts: list[str]) -> set[str]:
    return {w for t in texts for w in re.findall(r"[^\W\d_]+(?:['-][^\W\d_]+)*", t)}


def test_the_demo_notes_scrub_clean_of_every_name_and_phone_the_generator_wrote() -> None:
    register = generate_register(3000)
    result = mask_direct_identifiers(register, {"clinical_note": "scrub"})
    notes = result.data.get_column("clinical_note").drop_nulls().to_list()
    assert len(notes) == register.get_column("clinical_note").drop_nulls().len()
    # No given name or surname of the lists is left as a word, no phone of the register.
    assert _words(notes) & set(FIRST_NAMES + LAST_NAMES) == set()
    phones = set(register.get_column("phone").drop_nulls().to_list())
    assert not [n for n in notes if any(p in n for p in phones)]
    digits = [re.sub(r"\D", "", p)[-10:] for p in phones]
    flat = " ".join(re.sub(r"\D", "", n) for n in notes)
    assert not [d for d in digits if d in flat]
    # Ages in words are gone too ("77-year-old" → "[AGE]").
    assert not [n for n in notes if re.search(r"\d+-year-old", n)]
    # The re-scan of the scrubbed column finds nothing.
    rescan = scan_frame(result.data, ["clinical_note"])[0]
    assert (rescan.rows_with_spans, rescan.spans) == (0, {})
    # What was replaced, counted independently from the generator's sentences.
    original = register.get_column("clinical_note").drop_nulls().to_list()
    before = scan_frame(register, ["clinical_note"])[0]
    assert before.rows_by_type["PHONE"] == sum("can be reached at" in n for n in original)
    assert before.rows_by_type["AGE"] == len(original)
    assert before.rows_by_type["NAME"] == sum(
        "Dr. " in n or " asked for a French" in n for n in original
    )


def test_span_types_are_the_placeholders() -> None:
    assert set(SPAN_TYPES) == {
        "EMAIL", "URL", "DATE", "PHONE", "ID", "POSTAL_CODE", "ADDRESS", "AGE", "NAME",
    }  # fmt: skip
    for span_type in SPAN_TYPES:
        assert scan_series([f"[{span_type}]"]).spans == {}
