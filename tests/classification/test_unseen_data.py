"""Suggestions that fail safe on data no test was tuned on (issue 22, findings 1 and 2).

The values are the evidence: a column of ages, states, months, days or dates under a neutral
name must come out a quasi-identifier with a confidence that bulk accept takes, saying in plain
words what was seen; a list of category words that happen to be given names or surnames is
neither free text nor a direct identifier."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.classification.detectors import Suggestion, suggest_roles
from apps.classification.models import Variable
from apps.classification.services import variables_accept_suggestions
from apps.datasets.profiling import profile_parquet
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES
from tests.classification.public_extract import (
    CATEGORY_LISTS,
    EXPECTED_QUASI,
    public_extract,
)
from tests.conftest import read_now

TODAY = dt.date(2026, 1, 15)


def suggest(frame: pl.DataFrame, tmp_path: Path) -> dict[str, Suggestion]:
    path = tmp_path / "frame.parquet"
    frame.write_parquet(path)
    return {s.column: s for s in suggest_roles(profile_parquet(path), frame, today=TODAY)}


@pytest.mark.parametrize(("rows", "seed"), [(1500, 2211), (400, 97), (3000, 40_503)])
def test_every_quasi_identifier_family_is_found_by_its_values(
    rows: int, seed: int, tmp_path: Path
) -> None:
    result = suggest(public_extract(rows, seed=seed), tmp_path)
    found = {c: (result[c].role, result[c].kind) for c in EXPECTED_QUASI}
    assert found == {c: ("quasi", kind) for c, kind in EXPECTED_QUASI.items()}
    for column in EXPECTED_QUASI:
        suggestion = result[column]
        assert suggestion.confidence in ("high", "medium"), (column, suggestion)
        # The evidence says what was seen in the values, in plain words.
        assert any("sampled values" in e for e in suggestion.evidence), suggestion.evidence


def test_evidence_names_the_shape_without_a_raw_extreme(tmp_path: Path) -> None:
    result = suggest(public_extract(1500), tmp_path)
    assert any("ages" in e for e in result["c01"].evidence), result["c01"].evidence
    assert any("US states" in e for e in result["c02"].evidence), result["c02"].evidence
    assert any("month names" in e for e in result["c03"].evidence), result["c03"].evidence
    assert any("day of the month" in e for e in result["c04"].evidence), result["c04"].evidence
    assert any("Canadian provinces" in e for e in result["c08"].evidence)
    assert any("countries" in e for e in result["c12"].evidence), result["c12"].evidence
    # Neither the oldest age nor the sentinel code is quoted (reviewers read the evidence).
    assert not any("999" in e or " 99 " in e for e in result["c01"].evidence)


def test_near_unique_zip_codes_are_still_places_but_record_numbers_are_not(
    tmp_path: Path,
) -> None:
    """400 ZIP codes drawn from thousands are nearly all different, as record numbers are;
    record numbers fill their range, ZIP codes spread over it."""
    rng = random.Random(9)
    zips = [f"{rng.randrange(1000, 99999):05d}" for _ in range(400)]
    numbers = [f"{i:05d}" for i in range(17, 417)]
    result = suggest(pl.DataFrame({"k1": zips, "k2": numbers}), tmp_path)
    assert (result["k1"].role, result["k1"].kind) == ("quasi", "postal_code")
    assert any("near-unique per row" in e for e in result["k1"].evidence)
    assert (result["k2"].role, result["k2"].kind) == ("direct", "unique_values")


@pytest.mark.parametrize("seed", [2211, 97])
def test_category_words_that_are_names_are_not_free_text_nor_identifiers(
    seed: int, tmp_path: Path
) -> None:
    frame = public_extract(1500, seed=seed)
    # The premise: most of these category values are in the name lists.
    known = {n.lower() for n in (*FIRST_NAMES, *LAST_NAMES)}
    share = sum(v.lower() in known for v in frame["c16"]) / frame.height
    assert share > 0.6, share
    result = suggest(frame, tmp_path)
    for column in CATEGORY_LISTS:
        suggestion = result[column]
        assert suggestion.role != "direct", (column, suggestion)
        assert suggestion.kind not in ("name", "free_text", "free_text_identifiers"), suggestion
        assert not suggestion.needs_review, suggestion
        assert not any("names found" in e for e in suggestion.evidence), suggestion.evidence


def test_a_small_vocabulary_of_given_names_is_not_a_name_column(tmp_path: Path) -> None:
    """Every value a given name, every value repeated hundreds of times: a category list."""
    rng = random.Random(5)
    words = ("Rose", "Victoria", "Madison", "Heather", "Jade", "Georgia", "Jordan")
    values = [rng.choice(words) for _ in range(900)]
    suggestion = suggest(pl.DataFrame({"v3": values}), tmp_path)["v3"]
    assert suggestion.role != "direct", suggestion
    assert not suggestion.needs_review


def test_names_that_vary_are_still_names(tmp_path: Path) -> None:
    """The counterpart: a column of many different first names is a direct identifier."""
    rng = random.Random(11)
    names = sorted(FIRST_NAMES)
    values = [rng.choice(names) for _ in range(900)]
    suggestion = suggest(pl.DataFrame({"v3": values}), tmp_path)["v3"]
    assert (suggestion.role, suggestion.kind) == ("direct", "name")


def test_small_integer_scales_stay_for_a_person(tmp_path: Path) -> None:
    """A 1-5 score is not an age, a month or a day: nothing points anywhere, so a person
    decides (low confidence, which bulk accept leaves alone)."""
    rng = random.Random(3)
    frame = pl.DataFrame({"q7": [rng.randint(1, 5) for _ in range(600)]})
    suggestion = suggest(frame, tmp_path)["q7"]
    assert (suggestion.role, suggestion.confidence) == ("other", "low")


@pytest.mark.django_db
def test_bulk_accept_leaves_no_age_state_month_day_or_date_as_other(custodian, analyst):
    from apps.datasets.services import dataset_upload

    frame = public_extract(1200, seed=8080)
    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("extract.csv", frame.write_csv().encode()),
        )
    )
    variables_accept_suggestions(dataset=dataset, user=analyst)
    roles = dict(Variable.objects.filter(dataset=dataset).values_list("name", "role"))
    assert {c: roles[c] for c in EXPECTED_QUASI} == dict.fromkeys(EXPECTED_QUASI, "quasi")
    for column in CATEGORY_LISTS:
        assert roles[column] != "direct"
    # Category lists nothing recognizes are left for a person, never confirmed as Other.
    left = Variable.objects.filter(dataset=dataset, role="")
    assert {v.suggestion_confidence for v in left} <= {"low"}
    assert not Variable.objects.filter(dataset=dataset, role="other", suggestion_confidence="low")


_DAY0 = dt.date(2001, 1, 1)
SHAPES = {
    "lower-case province codes": (lambda r: r.choice(["on", "qc", "bc", "ab", "ns"]), "geography"),
    "French provinces": (lambda r: r.choice(["Québec", "Colombie-Britannique", "Nouvelle-Écosse"]), "geography"),
    "alpha-3 countries": (lambda r: r.choice(["USA", "CAN", "MEX", "FRA", "IND", "CHN"]), "geography"),
    "French month abbreviations": (lambda r: r.choice(["janv.", "févr.", "avr.", "juil.", "déc."]), "month"),
    "French weekdays": (lambda r: r.choice(["lundi", "mardi", "jeudi", "samedi"]), "weekday"),
    "month numbers with a zero": (lambda r: f"{r.randint(1, 12):02d}", "month"),
    "month-first dates": (lambda r: (_DAY0 + dt.timedelta(r.randrange(9000))).strftime("%m/%d/%Y"), "event_date"),
    "written dates": (lambda r: (_DAY0 + dt.timedelta(r.randrange(9000))).strftime("%B %d, %Y"), "event_date"),
    "months of years": (lambda r: (_DAY0 + dt.timedelta(r.randrange(9000))).strftime("%Y-%m"), "year_month"),
    "age groups": (lambda r: r.choice(["20-24", "25-29", "30-34", "85-89", "90+"]), "age"),
    "ages as text, some unknown": (lambda r: r.choice([str(r.randint(16, 90)), "Unknown"]), "age"),
    "years of birth": (lambda r: r.randint(1921, 2010), "year"),
}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shapes_under_a_neutral_name(shape: str, tmp_path: Path) -> None:
    make, kind = SHAPES[shape]
    rng = random.Random(shape)
    suggestion = suggest(pl.DataFrame({"x": [make(rng) for _ in range(300)]}), tmp_path)["x"]
    assert (suggestion.role, suggestion.kind) == ("quasi", kind), suggestion
    assert suggestion.confidence in ("high", "medium")


NOT_SHAPES = {
    "on and off": lambda r: r.choice(["on", "off"]),
    "a 1-7 scale": lambda r: r.randint(1, 7),
    "measurements": lambda r: round(r.uniform(10, 200), 1),
    "outcomes": lambda r: r.choice(["Fatal", "Not fatal", "Incapacitating"]),
}


@pytest.mark.parametrize("shape", sorted(NOT_SHAPES))
def test_what_has_no_shape_is_left_to_a_person(shape: str, tmp_path: Path) -> None:
    rng = random.Random(shape)
    frame = pl.DataFrame({"x": [NOT_SHAPES[shape](rng) for _ in range(300)]})
    suggestion = suggest(frame, tmp_path)["x"]
    assert (suggestion.role, suggestion.confidence) == ("other", "low"), suggestion


def _rule_words(*kinds: str) -> list[str]:
    """The one-word phrases of the name rules of these kinds, read from the detectors."""
    from apps.classification.detectors.names import _NAME_RULES

    return sorted(
        phrase[0].rstrip("*")
        for rule in _NAME_RULES
        if rule.kind in kinds
        for phrase in rule.phrases
        if len(phrase) == 1 and len(phrase[0].rstrip("*")) > 2
    )


def _postal(rng: random.Random) -> str:
    letters = "ABCEGHJKLMNPRSTVXY"
    return f"{rng.choice(letters)}{rng.randint(0, 9)}{rng.choice(letters)} {rng.randint(0, 9)}{rng.choice(letters)}{rng.randint(0, 9)}"


# Shapes an intruder can know whatever the column is about: dates, calendar words, places.
KNOWABLE = {
    shape: SHAPES[shape]
    for shape in ("French provinces", "alpha-3 countries", "French weekdays", "month-first dates",
                  "written dates", "months of years", "years of birth", "French month abbreviations")
} | {"postal codes": (_postal, "postal_code")}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(KNOWABLE))
def test_a_health_word_in_the_name_does_not_outrank_dates_places_or_calendar_values(
    shape: str, tmp_path: Path
) -> None:
    """A column named for a condition or a treatment whose values are dates of onset,
    months, places or years is a quasi-identifier: suggested as sensitive, bulk accept took
    it and released it as it was, never generalized nor measured as a quasi-identifier."""
    make, kind = KNOWABLE[shape]
    words = _rule_words("health_information")
    assert len(words) > 20
    rng = random.Random(shape)
    names = [
        f"{rng.choice(words)}_{rng.choice(['since', 'onset', 'first', 'last'])}" for _ in range(4)
    ]
    frame = pl.DataFrame({name: [make(rng) for _ in range(300)] for name in names})
    result = suggest(frame, tmp_path)
    for name in names:
        assert (result[name].role, result[name].kind) == ("quasi", kind), result[name]
        assert any(f"'{name}'" in e for e in result[name].evidence), result[name].evidence


def test_health_words_over_measurements_and_categories_stay_sensitive(tmp_path: Path) -> None:
    """The counterpart: numbers and category words under a health name are what the name
    says."""
    rng = random.Random(17)
    words = _rule_words("health_information")
    frame = pl.DataFrame(
        {
            f"{words[0]}_value": [round(rng.uniform(2, 14), 1) for _ in range(300)],
            f"{words[1]}_count": [rng.randint(0, 40) for _ in range(300)],
            f"{words[2]}_status": [
                rng.choice(["Positive", "Negative", "Pending"]) for _ in range(300)
            ],
        }
    )
    result = suggest(frame, tmp_path)
    assert {s.role for s in result.values()} == {"sensitive"}, result


def test_an_age_at_an_event_is_an_age(tmp_path: Path) -> None:
    """ "age_at_death", "admission_age": the age is what the values are, not a date (a date
    hierarchy cannot be built over whole numbers, so the age was kept or suppressed)."""
    rng = random.Random(23)
    events = _rule_words("event_date", "date_of_birth")
    names = [f"age_at_{w}" for w in events] + [f"{w}_age" for w in events]
    frame = pl.DataFrame({name: [rng.randint(0, 104) for _ in range(300)] for name in names})
    result = suggest(frame, tmp_path)
    wrong = {n: (s.role, s.kind) for n, s in result.items() if (s.role, s.kind) != ("quasi", "age")}
    assert wrong == {}


# Survey and register extracts code a missing value with numbers outside the range (-9, -8,
# 999) and with a full stop; dates are written with two-digit years.
CODED = {
    "ages with survey codes": (
        lambda r: r.choice([str(r.randint(16, 95))] * 6 + ["-9", "-8", "-7", "999", ".", "NA"]),
        "age",
    ),
    "month-first dates, two-digit years": (
        lambda r: (_DAY0 + dt.timedelta(r.randrange(9000))).strftime("%m/%d/%y"),
        "event_date",
    ),
    "day-first dates, two-digit years": (
        lambda r: (_DAY0 + dt.timedelta(r.randrange(9000))).strftime("%d-%m-%y"),
        "event_date",
    ),
}


@pytest.mark.parametrize("shape", sorted(CODED))
def test_coded_and_short_shapes_under_a_neutral_name(shape: str, tmp_path: Path) -> None:
    make, kind = CODED[shape]
    rng = random.Random(shape)
    suggestion = suggest(pl.DataFrame({"x": [make(rng) for _ in range(400)]}), tmp_path)["x"]
    assert (suggestion.role, suggestion.kind) == ("quasi", kind), suggestion
    assert suggestion.confidence in ("high", "medium")


def test_spanish_column_names_and_values(tmp_path: Path) -> None:
    """Columns named in Spanish, as a Mexican or US-Hispanic extract names them."""
    rng = random.Random(52)
    rows = 400
    frame = pl.DataFrame(
        {
            "sexo": [rng.choice(["Hombre", "Mujer"]) for _ in range(rows)],
            "genero_paciente": [rng.choice(["Masculino", "Femenino"]) for _ in range(rows)],
            "municipio_residencia": [rng.choice(["Zapopan", "Tlaquepaque", "Tonalá"]) for _ in range(rows)],
            "escolaridad": [rng.choice(["Primaria", "Secundaria", "Licenciatura"]) for _ in range(rows)],
            "ocupacion": [rng.choice(["Empleado", "Comerciante", "Hogar"]) for _ in range(rows)],
            "estado_civil": [rng.choice(["Casado", "Soltero", "Viudo"]) for _ in range(rows)],
            "apellido_paterno": [rng.choice(sorted(LAST_NAMES)) for _ in range(rows)],
            "telefono_celular": [f"55 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}" for _ in range(rows)],
            "direccion": [f"Calle {rng.randint(1, 99)} #{rng.randint(1, 999)}" for _ in range(rows)],
        }
    )  # fmt: skip
    result = suggest(frame, tmp_path)
    found = {name: (s.role, s.kind) for name, s in result.items()}
    assert found == {
        "sexo": ("quasi", "sex"),
        "genero_paciente": ("quasi", "sex"),
        "municipio_residencia": ("quasi", "geography"),
        "escolaridad": ("quasi", "education"),
        "ocupacion": ("quasi", "occupation"),
        "estado_civil": ("quasi", "marital_status"),
        "apellido_paterno": ("direct", "name"),
        "telefono_celular": ("direct", "phone"),
        "direccion": ("direct", "address"),
    }


def test_an_identifier_named_so_in_a_format_the_checks_do_not_know_stays_confident(
    tmp_path: Path,
) -> None:
    """Phone numbers abroad under a phone column name fail the North American check; unique
    per row, they are a direct identifier that bulk accept removes, not a low-confidence
    suggestion a new officer must argue with."""
    rng = random.Random(71)
    frame = pl.DataFrame(
        {
            "phone_home": [f"+{rng.randint(30, 99)} {rng.randint(10, 99)} {rng.randint(10**7, 10**8 - 1)}" for _ in range(400)],
            "mobile_of_contact": [f"0{rng.randint(6, 7)}{rng.randint(10**7, 10**8 - 1)}" for _ in range(400)],
        }
    )  # fmt: skip
    for suggestion in suggest(frame, tmp_path).values():
        assert (suggestion.role, suggestion.confidence) == ("direct", "medium"), suggestion


def _coded_descriptions(rng: random.Random, rows: int) -> list[str]:
    """A coded list of long labels, a fifth of them named after people (as diseases,
    syndromes and procedures are), each label held by several rows."""
    surnames = sorted(n for n in LAST_NAMES if n.isalpha() and len(n) >= 5)
    named = [
        f"{s}'s syndrome, with late onset and other complications" for s in rng.sample(surnames, 20)
    ]
    plain = [f"{what} of the {where} region, initial encounter for closed injury"
             for what in ("Fracture", "Sprain", "Contusion", "Laceration", "Dislocation")
             for where in ("left knee", "right hip", "lower back", "upper arm", "left ankle",
                           "right wrist", "neck", "chest wall", "left foot", "right shoulder")]  # fmt: skip
    return [rng.choice(named) if rng.random() < 0.2 else rng.choice(plain) for _ in range(rows)]


@pytest.mark.parametrize("rows", [400, 1500])
def test_a_coded_list_of_long_labels_is_not_free_text(rows: int, tmp_path: Path) -> None:
    """Long labels repeated from row to row are a category list, even when profiling calls
    them free text by their length: a label named after a person is not a name found in a
    text, and the column is not a direct identifier that bulk accept removes."""
    rng = random.Random(rows)
    values = _coded_descriptions(rng, rows)
    result = suggest(pl.DataFrame({"x": values, "diagnosis_text": values}), tmp_path)
    assert (result["x"].role, result["x"].confidence) == ("other", "low"), result["x"]
    assert (result["diagnosis_text"].role, result["diagnosis_text"].kind) == (
        "sensitive",
        "health_information",
    ), result["diagnosis_text"]
    for suggestion in result.values():
        assert not any("names found" in e for e in suggestion.evidence), suggestion.evidence


def test_notes_that_repeat_a_few_phrases_are_still_read(tmp_path: Path) -> None:
    """The counterpart: notes in which some phrases repeat but most are written for one
    person remain free text, and the names in them make the column a direct identifier."""
    rng = random.Random(8)
    firsts = sorted(n for n in FIRST_NAMES if n.isalpha() and len(n) >= 4)
    notes = [
        rng.choice(["No concerns raised at this visit.", "Follow up in two weeks as planned."])
        if rng.random() < 0.5
        else f"Seen with her daughter {rng.choice(firsts)}, reports pain for {rng.randint(2, 30)} days."
        for _ in range(900)
    ]
    suggestion = suggest(pl.DataFrame({"x": notes}), tmp_path)["x"]
    assert (suggestion.role, suggestion.kind) == ("direct", "free_text_identifiers"), suggestion


def test_numeric_codes_are_far_from_the_values_not_at_the_end_of_their_range() -> None:
    from apps.classification.quasi_values import numeric_missing_codes

    ages = [str(a) for a in range(100)]  # 99 is the oldest age, not a code
    assert numeric_missing_codes(ages) == set()
    assert numeric_missing_codes([*ages, "999", "-9", "-1"]) == {"999", "-9", "-1"}
    assert numeric_missing_codes([str(y) for y in range(1950, 2021)] + ["9999"]) == {"9999"}
    assert numeric_missing_codes(["1", "2", "3", "4", "5", "99", "77"]) == {"99", "77"}
    assert numeric_missing_codes([str(i) for i in range(1, 1000)]) == set()  # 999 is a count
    temperatures = [str(t) for t in range(-30, 35)]
    assert numeric_missing_codes(temperatures) == set()  # negatives among negatives
