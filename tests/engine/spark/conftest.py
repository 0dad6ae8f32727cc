"""Fixtures of the Spark tests: the servers, the engines, and a typed data set.

The data set has the column types a lakehouse table has — integers, dates, floats with
missing values, text with missing values — and direct identifiers to mask; hierarchies
are built for its quasi-identifiers as the wizard builds them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from apps.engine.hierarchies import (
    Hierarchy,
    date_hierarchy,
    interval_hierarchy,
    prefix_hierarchy,
    suppression_hierarchy,
)
from tests.engine.spark.servers import apache_spark_server, sail_server

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def sail_remote() -> Iterator[str]:
    with sail_server() as remote:
        yield remote


@pytest.fixture(scope="session")
def spark_server() -> Iterator[object]:
    """Apache Spark's Spark Connect server (local mode): `LocalSpark`."""
    with apache_spark_server() as server:
        yield server


@pytest.fixture(scope="session")
def spark_remote(spark_server) -> str:
    return str(spark_server.remote)


@pytest.fixture(scope="session")
def sail_engine(sail_remote: str) -> Iterator[object]:
    from apps.engine.rows.spark.engine import SparkRows

    with SparkRows.connect(sail_remote) as engine:
        yield engine


REGIONS = ["K1A", "K2B", "M5V", "M4C", "H2X", "V6B", "T2P"]
QUASI = ("age", "visit", "region", "sex")


def typed_people(rows: int = 3_000, seed: int = 7) -> pl.DataFrame:
    """People with typed columns; a few rare combinations so that suppression has work."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 95, rows).astype(np.int32)
    visit = [dt.date(2019, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 900, rows)]
    region = [REGIONS[i] if i < len(REGIONS) else None for i in rng.integers(0, 8, rows)]
    sex = rng.choice(["F", "M"], rows).tolist()
    income = rng.normal(55_000, 20_000, rows).round(2)
    income_list = [None if i % 9 == 0 else float(v) for i, v in enumerate(income)]
    weight = [None if i % 11 == 0 else float(v) for i, v in enumerate(rng.normal(70, 12, rows))]
    names = [f"Person {i:05d}" for i in rng.permutation(rows)]
    emails = [None if i % 13 == 0 else f"p{i}@example.org" for i in range(rows)]
    health = [None if i % 17 == 0 else f"HC-{i % 997:04d}" for i in range(rows)]
    return pl.DataFrame(
        {
            "name": names,
            "email": emails,
            "health_card": health,
            "age": pl.Series(age, dtype=pl.Int32),
            "visit": pl.Series(visit, dtype=pl.Date),
            "region": pl.Series(region, dtype=pl.String),
            "sex": sex,
            "income": pl.Series(income_list, dtype=pl.Float64),
            "weight": pl.Series(weight, dtype=pl.Float64),
            "score": pl.Series(rng.integers(0, 1000, rows), dtype=pl.Int64),
        }
    )


def hierarchies_for(data: pl.DataFrame) -> dict[str, Hierarchy]:
    text = {q: data.get_column(q).cast(pl.String).to_list() for q in QUASI}
    return {
        "age": interval_hierarchy("age", text["age"], [5, 10, 20]),
        "visit": date_hierarchy("visit", text["visit"], levels=("month", "year")),
        "region": prefix_hierarchy("region", text["region"], [1]),
        "sex": suppression_hierarchy("sex", text["sex"]),
    }


@dataclass(frozen=True)
class People:
    frame: pl.DataFrame
    parquet: Path
    csv: Path
    hierarchies: dict[str, Hierarchy]
    hierarchy_files: dict[str, Path]


@pytest.fixture(scope="session")
def people(tmp_path_factory: pytest.TempPathFactory) -> People:
    folder = tmp_path_factory.mktemp("people")
    frame = typed_people()
    parquet = folder / "people.parquet"
    frame.write_parquet(parquet)
    csv = folder / "people.csv"
    frame.write_csv(csv, separator=";")
    hierarchies = hierarchies_for(frame)
    files = {}
    for q, h in hierarchies.items():
        path = folder / f"h_{q}.csv"
        path.write_text("\n".join(";".join(row) for row in h.rows) + "\n", encoding="utf-8")
        files[q] = path
    return People(frame, parquet, csv, hierarchies, files)
