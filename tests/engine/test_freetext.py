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


# Issue 23: record numbers (medical record, health card, claim numbers) in notes. The
# detectors read their shape and the words that name them, not a list of known strings:
# numbers drawn at random in each shape, after words of each kind, and bare.
RECORD_WORDS = ["MRN", "mrn:", "HCN", "Chart #", "chart no.", "record number", "Claim",
                "claim # ", "dossier n°", "Patient ID", "health card", "OHIP"]  # fmt: skip


def _record_numbers(rng) -> list[str]:  # type: ignore[no-untyped-def]
    import string

    def digits(n: int) -> str:
        return "".join(rng.choice(string.digits) for _ in range(n))

    def letters(n: int) -> str:
        return "".join(rng.choice(string.ascii_letters) for _ in range(n))

    def interleaved(groups: int) -> str:
        return "".join(letters(1) + digits(rng.randint(1, 2)) for _ in range(groups))

    return [
        digits(6),  # a bare run of six digits: "seen, 482913, today"
        digits(rng.randint(7, 9)),
        letters(rng.randint(1, 3)).lower() + digits(rng.randint(5, 8)),  # ab123456
        interleaved(rng.randint(4, 6)),  # A1B2C3D4
        digits(1) + interleaved(4),  # 7a8b9c0d1e
    ]


@pytest.mark.parametrize("seed", range(6))
def test_record_numbers_of_any_shape_are_found_and_scrubbed(seed: int) -> None:
    import random

    rng = random.Random(seed)
    notes = []
    for number in _record_numbers(rng):
        notes.append(f"Seen today, {number}, follow up in 3 weeks.")
        notes.append(f"Filed as {number}.")
    context = [  # a context word makes shorter numbers count: 4 or 5 digits, or with letters
        f"{word} {number} on file."
        for word, number in zip(
            RECORD_WORDS,
            [
                str(rng.randint(3000, 9999))
                if rng.random() < 0.5
                else str(rng.randint(10000, 99999))
                for _ in RECORD_WORDS[:6]
            ]
            + [
                f"{rng.choice(['CL', 'H', 'ab'])}-{rng.randint(100, 99999)}"
                for _ in RECORD_WORDS[6:]
            ],
            strict=True,
        )
    ]
    notes += context
    scan = scan_series(notes)
    assert scan.rows_with_spans == len(notes), [n for n in notes if scrub_text(n) == n]
    assert scan.spans == {"ID": len(notes)}
    for note in notes:
        kept = re.sub(r"\[ID\]", "", scrub_text(note))
        assert not re.search(r"\d{4}", kept), (note, scrub_text(note))
    # After scrubbing, the re-scan finds nothing; the words naming the number stay.
    clean = pl.DataFrame({"n": notes}).select(scrub_expr(pl.col("n")))
    assert scan_frame(clean, ["n"])[0].spans == {}
    assert scrub_text("MRN 482913 and 553311 553312") == "MRN [ID] and [ID] [ID]"
    assert scrub_text("Chart #4821, claim no. CL-88213") == "Chart #[ID], claim no. [ID]"


@pytest.mark.parametrize(
    "text",
    [
        "Paid $125000.00 in 2023; income 125000.50; $1,250,000 and 1,234,567 dollars.",
        "p = 0.123456, ratio 3x2x1, WBC 5.2x10e9/L, 1000mg twice daily, weighs 72 kg.",
        "Born 1950; type 2 diabetes since 2019; record 2023 visits; chart 1987 reviewed.",
        "H1N1, COVID-19, SpO2 98%, HbA1c 7.2, G6PD, B12, ICD10 E119, BP 120/80, room 12B.",
        "Policy 12 applies; record 3 visits; the ID card was shown; chart reviewed.",
    ],
)
def test_amounts_years_and_measures_are_not_record_numbers(text: str) -> None:
    assert scrub_text(text) == text
    assert scan_series([text]).spans == {}


def test_dates_and_postal_codes_keep_their_own_placeholders() -> None:
    assert scrub_text("Seen 2024-03-05 near K1A 0B1, MRN 482913.") == (
        "Seen [DATE] near [POSTAL_CODE], MRN [ID]."
    )
    assert scan_series(["Seen 2024-03-05 near K1A 0B1, MRN 482913."]).spans == {
        "DATE": 1,
        "ID": 1,
        "POSTAL_CODE": 1,
    }
