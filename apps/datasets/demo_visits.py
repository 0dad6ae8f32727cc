"""A synthetic table of hospital visits, several rows per patient (issue 25), for the demo.

One row per visit: the patient's chart number (repeated on each of their visits), sex,
birth year and forward sortation area (the same on every visit of a patient), and for the
visit its admission date, one ICD-10 diagnosis code, the length of stay in days and the
discharge disposition (the sensitive variable). Every value is invented; no name appears.

What makes it look like a hospital's discharge abstracts rather than noise:

* visits per patient are skewed (most patients come once, a few many times:
  ``P(n) ∝ n^-1.7`` for n = 1…``MAX_VISITS``);
* diagnoses are skewed too: about three visits in four carry one of a short list of
  common reasons for admission (weighted by how often they occur, restricted by age and
  sex), the rest a 3-character category drawn from the engine's own list of WHO ICD-10
  blocks (``apps.engine.longitudinal.codes``) with Zipf-like weights; a patient who
  returns often comes back for the same condition;
* admissions follow each other in time (a gap after each discharge), within 2021-2024;
  "Died in hospital" ends a patient's visits.

The same seed gives the same rows on every machine (Python's ``random.Random``).
"""

from __future__ import annotations

import datetime as dt
import random
from functools import cache
from pathlib import Path

import polars as pl

from apps.datasets.demo import _FSA_WEIGHTS, FSA_CITIES, _age
from apps.engine.longitudinal.codes import ICD10, code_ranges

__all__ = [
    "DEFAULT_PATIENTS",
    "DEFAULT_VISITS_SEED",
    "VISIT_COLUMNS",
    "generate_visits",
    "write_visits_csv",
]

DEFAULT_VISITS_SEED = 20261126
DEFAULT_PATIENTS = 2000
MAX_VISITS = 20
VISIT_COLUMNS = (
    "chart_number",
    "sex",
    "birth_year",
    "fsa",
    "admission_date",
    "diagnosis_code",
    "length_of_stay",
    "discharge_disposition",
)
_FIRST_DAY = dt.date(2021, 1, 1)
_LAST_DAY = dt.date(2024, 12, 31)

# Common reasons for admission: (ICD-10 code, weight, typical stay in days, who).
_COMMON: tuple[tuple[str, int, int, str], ...] = (
    ("O80", 60, 2, "birth"),  # single spontaneous delivery
    ("J44.1", 30, 6, "older"),  # COPD with acute exacerbation
    ("I50.0", 30, 7, "older"),  # congestive heart failure
    ("J18.9", 28, 5, "any"),  # pneumonia, unspecified
    ("N39.0", 20, 3, "any"),  # urinary tract infection
    ("I21.4", 16, 5, "older"),  # acute subendocardial myocardial infarction
    ("K80.2", 14, 2, "adult"),  # gallstones without cholecystitis
    ("K35.8", 12, 2, "any"),  # acute appendicitis
    ("S72.0", 12, 8, "older"),  # fracture of neck of femur
    ("I48.9", 12, 3, "older"),  # atrial fibrillation
    ("E11.9", 10, 3, "adult"),  # type 2 diabetes mellitus
    ("I63.9", 10, 9, "older"),  # cerebral infarction
    ("F20.9", 8, 14, "adult"),  # schizophrenia
    ("F32.9", 8, 9, "adult"),  # depressive episode
    ("A09", 8, 2, "any"),  # infectious gastroenteritis
    ("M17.1", 8, 3, "older"),  # primary gonarthrosis (knee replacement)
    ("N18.5", 6, 6, "older"),  # chronic kidney disease, stage 5
    ("C34.9", 6, 7, "older"),  # malignant neoplasm of bronchus or lung
    ("C50.9", 5, 4, "female_adult"),  # malignant neoplasm of breast
    ("C61", 4, 4, "male_older"),  # malignant neoplasm of prostate
    ("J45.9", 6, 2, "any"),  # asthma
    ("F10.2", 5, 7, "adult"),  # alcohol dependence
    ("G30.9", 3, 14, "oldest"),  # Alzheimer disease
    ("B20", 1, 8, "adult"),  # HIV disease
)
_COMMON_SHARE = 0.75
_SAME_CONDITION = 0.5  # a returning patient's visit is for their usual condition

# ICD-10 chapters the long tail leaves out: pregnancy (O, only through O80 above),
# perinatal conditions (P), external causes (V-Y, never a main diagnosis) and codes for
# special purposes (U).
_TAIL_EXCLUDED = frozenset("OPUVWXY")
# Categories of one sex only: male genital organs, female pelvic organs.
_MALE_ONLY = ("N40", "N51")
_FEMALE_ONLY = ("N70", "N98")

_DISPOSITIONS: tuple[tuple[str, int], ...] = (
    ("Home", 62),
    ("Home with support services", 18),
    ("Transferred to another hospital", 7),
    ("Long-term care", 5),
    ("Left against medical advice", 2),
)
_DIED = "Died in hospital"


@cache
def tail_categories() -> tuple[str, ...]:
    """Every 3-character category inside a WHO ICD-10 block of the engine's list, except
    the chapters left out of the tail, in a fixed (seeded) order of popularity."""
    out: list[str] = []
    for block in code_ranges(ICD10):
        if block.level != "block" or block.start[0] in _TAIL_EXCLUDED:
            continue
        first, last = block.start[0], block.end[0]
        for letter in sorted({first, last}):
            low = int(block.start[1:]) if letter == first else 0
            high = int(block.end[1:]) if letter == last else 99
            out += [f"{letter}{n:02d}" for n in range(low, high + 1)]
    ordered = sorted(set(out))
    random.Random(1).shuffle(ordered)
    return tuple(ordered)


def _fits(who: str, age: int, sex: str) -> bool:
    return {
        "any": True,
        "adult": age >= 18,
        "older": age >= 50,
        "oldest": age >= 65,
        "female_adult": sex == "F" and age >= 25,
        "male_older": sex == "M" and age >= 50,
        "birth": sex == "F" and 18 <= age <= 44,
    }[who]


def _tail_code(rng: random.Random, sex: str) -> str:
    categories = tail_categories()
    while True:
        # Zipf-like: rank r is drawn with probability ∝ 1 / r.
        rank = int(len(categories) ** rng.random()) - 1
        category = categories[min(rank, len(categories) - 1)]
        if sex != "F" and _FEMALE_ONLY[0] <= category <= _FEMALE_ONLY[1]:
            continue
        if sex != "M" and _MALE_ONLY[0] <= category <= _MALE_ONLY[1]:
            continue
        return category if rng.random() < 0.4 else f"{category}.{rng.randint(0, 9)}"


def _diagnosis(rng: random.Random, age: int, sex: str) -> tuple[str, int]:
    if rng.random() < _COMMON_SHARE:
        options = [(code, w, stay) for code, w, stay, who in _COMMON if _fits(who, age, sex)]
        code, _, stay = rng.choices(options, weights=[w for _, w, _ in options])[0]
        return code, stay
    return _tail_code(rng, sex), 3


def _visit_count(rng: random.Random) -> int:
    counts = range(1, MAX_VISITS + 1)
    return rng.choices(counts, weights=[n**-1.7 for n in counts])[0]


def generate_visits(
    patients: int = DEFAULT_PATIENTS, *, seed: int = DEFAULT_VISITS_SEED
) -> pl.DataFrame:
    """One row per visit of ``patients`` synthetic patients, in order of chart number and
    admission; identical output for identical ``seed``."""
    if patients < 0:
        raise ValueError("patients must be zero or more")
    rng = random.Random(seed)
    columns: dict[str, list[object]] = {name: [] for name in VISIT_COLUMNS}
    charts = rng.sample(range(100_000, 1_000_000), patients)
    span = (_LAST_DAY - _FIRST_DAY).days
    for chart in charts:
        sex = rng.choices(("F", "M", "X"), weights=(51, 48.6, 0.4))[0]
        fsa = rng.choices(FSA_CITIES, weights=_FSA_WEIGHTS)[0][0]
        wanted = _visit_count(rng)
        # Frequent visitors start earlier, so that their visits fit in the four years.
        day = _FIRST_DAY + dt.timedelta(days=rng.randrange(max(1, span // wanted)))
        age = _age(rng)
        birth_year = day.year - age - (1 if rng.random() < 0.5 else 0)
        usual: tuple[str, int] | None = None
        for visit in range(wanted):
            age_now = day.year - birth_year
            if usual is not None and rng.random() < _SAME_CONDITION:
                code, typical = usual
            else:
                code, typical = _diagnosis(rng, age_now, sex)
                usual = usual or (code, typical)
            stay = max(1, round(rng.gammavariate(2.0, typical / 2.0)))
            last = visit == wanted - 1
            dies = rng.random() < (0.02 + max(0, age_now - 60) * 0.002)
            disposition = _DIED if dies else _weighted(rng)
            columns["chart_number"].append(f"CH{chart}")
            columns["sex"].append(sex)
            columns["birth_year"].append(birth_year)
            columns["fsa"].append(fsa)
            columns["admission_date"].append(day)
            columns["diagnosis_code"].append(code)
            columns["length_of_stay"].append(stay)
            columns["discharge_disposition"].append(disposition)
            if dies or last:
                break
            gap = 1 + int(rng.expovariate(1 / 75))
            day = day + dt.timedelta(days=stay + gap)
            if day > _LAST_DAY:
                break
    schema: dict[str, pl.DataType] = {name: pl.String() for name in VISIT_COLUMNS}
    schema.update(birth_year=pl.Int64(), admission_date=pl.Date(), length_of_stay=pl.Int64())
    return pl.DataFrame(columns, schema=schema)


def _weighted(rng: random.Random) -> str:
    return rng.choices([d for d, _ in _DISPOSITIONS], weights=[w for _, w in _DISPOSITIONS])[0]


def write_visits_csv(
    path: Path, patients: int = DEFAULT_PATIENTS, seed: int = DEFAULT_VISITS_SEED
) -> Path:
    """Write the demo visits as UTF-8 CSV (dates as YYYY-MM-DD) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    generate_visits(patients, seed=seed).write_csv(path)
    return path
