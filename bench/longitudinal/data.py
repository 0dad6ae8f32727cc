"""The longitudinal benchmark's data (bench/bench_longitudinal.py), seeded and generated
into ``WORK`` (/tmp), never into the repository (:func:`generate`): a person table (sex,
birth year, region) and an event table of hospital visits, 1 + Poisson(9) visits per
person: an ICD-10 diagnosis drawn from about 20,000 codes (:func:`_codes`) with Zipf-like
frequencies, and an admission date (first visit uniform over 2018-2021, then gaps of
exponential length, mean 60 days). :func:`read_problem` reads both tables and builds the
longitudinal problem from them (event count, anchor, intervals, ICD-10 levels), timing
that step; bench/bench_settle.py uses both too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[2]
WORK = Path("/tmp/deidweb-bench-longitudinal")
SEED = 2025


def _codes(rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """About 20,000 ICD-10 codes: every category of every WHO block, with .0-.9."""
    from apps.engine.longitudinal.codes import ICD10, code_ranges

    categories = []
    for block in code_ranges(ICD10):
        if block.level != "block":
            continue
        letter0, letter1 = block.start[0], block.end[0]
        for letter in sorted({letter0, letter1}):
            low = int(block.start[1:]) if letter == letter0 else 0
            high = int(block.end[1:]) if letter == letter1 else 99
            categories += [f"{letter}{n:02d}" for n in range(low, high + 1)]
    codes = np.array([f"{c}.{d}" for c in categories for d in range(10)])
    rng.shuffle(codes)
    return codes


def generate(persons: int, *, force: bool = False) -> tuple[Path, Path]:
    """Write the person and visit tables for ``persons`` (kept unless ``force``)."""
    WORK.mkdir(parents=True, exist_ok=True)
    person_path = WORK / f"persons_{persons}.parquet"
    event_path = WORK / f"visits_{persons}.parquet"
    if person_path.exists() and event_path.exists() and not force:
        return person_path, event_path
    rng = np.random.default_rng(SEED)
    ids = np.arange(1, persons + 1)
    pl.DataFrame(
        {
            "pid": ids,
            "sex": rng.choice(np.array(["F", "M"]), persons),
            "birth_year": rng.integers(1930, 2006, persons).astype(str),
            "region": rng.choice(np.array([f"R{r:02d}" for r in range(12)]), persons),
        }
    ).write_parquet(person_path)
    visits = 1 + rng.poisson(9, persons)
    total = int(visits.sum())
    person = np.repeat(ids, visits)
    codes = _codes(rng)
    ranks = np.arange(1, len(codes) + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.1
    diag = codes[rng.choice(len(codes), total, p=weights / weights.sum())]
    first = rng.integers(0, 4 * 365, persons)
    gaps = rng.exponential(60.0, total).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(visits)[:-1]])
    gaps[starts] = 0
    within = np.cumsum(gaps) - np.repeat(np.cumsum(gaps)[starts], visits)
    days = np.repeat(first, visits) + within
    admission = (np.datetime64("2018-01-01") + days.astype("timedelta64[D]")).astype(str)
    pl.DataFrame({"pid": person, "diag": diag, "admission": admission}).write_parquet(event_path)
    return person_path, event_path


def read_problem(person_path: Path, event_path: Path) -> tuple[Any, float]:
    """The problem of the two tables, and the seconds building it took from the tables in
    memory (reading the Parquet files is not timed)."""
    from apps.engine.hierarchies import interval_hierarchy, suppression_hierarchy
    from apps.engine.longitudinal import (
        DateSpec,
        EventCountSpec,
        EventTable,
        from_tables,
        prepare,
    )

    persons = pl.read_parquet(person_path)
    events = pl.read_parquet(event_path)
    started = time.perf_counter()
    data = from_tables(
        persons=persons,
        person_key="pid",
        person_quasi=["sex", "birth_year", "region"],
        events=[EventTable("visits", events, "pid", ("diag", "admission"))],
    )
    years = persons["birth_year"].unique().to_list()
    problem = prepare(
        data,
        hierarchies={
            "sex": suppression_hierarchy("sex", ["F", "M"]),
            "birth_year": interval_hierarchy("birth_year", years, [5, 10]),
            "region": suppression_hierarchy("region", persons["region"].unique().to_list()),
            "diag": "icd10",
        },
        dates=DateSpec(("admission",), "anchored"),
        event_count=EventCountSpec(),
        require_hierarchies=True,
    )
    return problem, time.perf_counter() - started
