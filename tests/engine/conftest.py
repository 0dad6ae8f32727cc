"""Shared fixtures of the engine tests: the ARX benchmark files, by path (never copied)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from tests.engine.benchmark_data import require

ARX_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "arx"
ADULT = ARX_DIR / "adult.csv"
ADULT_COLUMNS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
)


@pytest.fixture(scope="session")
def adult_path() -> Path:
    require(ADULT)
    return ADULT


def adult_class_sizes(columns: tuple[str, ...]) -> list[int]:
    """Independent reference: class sizes counted with csv + Counter, no polars."""
    with ADULT.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter=";")
        counter = Counter(tuple(row[c] for c in columns) for row in reader)
    return list(counter.values())
