"""One data set through polars and through Spark Connect (Sail): the same figures.

Each test runs the same pass on both engines and compares what a release rests on: the
class histogram (decoded tuples and their counts, the dictionaries), the risk profile,
the profile's per-column counts, l-diversity, the search's optimum, the released rows
(sorted, and a digest per column) and the release's re-measured figures.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from apps.engine.criteria import KAnonymity
from apps.engine.encoded import EncodedData
from apps.engine.masking import MaskSpec, decrypt_column, new_key, relink_column
from apps.engine.risk import encoded_class_sizes, risk_profile
from apps.engine.rows import PolarsRows, TableSource, release_solution
from apps.engine.search import optimal_search, problem_from_encoded
from apps.engine.techniques.date_shift import DateShiftParams
from apps.engine.techniques.rounding import RoundingParams, TopBottomParams
from tests.engine.spark.conftest import QUASI, People

pytestmark = pytest.mark.spark


def sorted_tuples(encoded: EncodedData) -> list[tuple[object, ...]]:
    return sorted(encoded.decoded().rows(), key=repr)


def column_digests(frame: pl.DataFrame) -> dict[str, str]:
    """Per column: SHA-256 of its values as text, sorted (order-free, type-sensitive)."""
    out = {}
    for name in frame.columns:
        values = sorted(repr(v) for v in frame.get_column(name).to_list())
        out[name] = hashlib.sha256("\n".join(values).encode()).hexdigest()
    return out


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_histogram_and_risk_profile_are_the_same(people: People, sail_engine, kind) -> None:
    source = (
        TableSource(path=str(people.parquet))
        if kind == "parquet"
        else TableSource(path=str(people.csv), sep=";", null_values=("K2B",))
    )
    on_polars = PolarsRows().histogram(source, QUASI)
    on_spark = sail_engine.histogram(source, QUASI)
    assert on_spark.rows == on_polars.rows == people.frame.height
    assert on_spark.quasi == on_polars.quasi
    assert [d.to_list() for d in on_spark.dictionaries] == [
        d.to_list() for d in on_polars.dictionaries
    ]
    assert sorted_tuples(on_spark) == sorted_tuples(on_polars)
    assert on_spark.tuples.schema == on_polars.tuples.schema
    polars_profile = risk_profile(encoded_class_sizes(on_polars)).to_dict()
    assert risk_profile(encoded_class_sizes(on_spark)).to_dict() == polars_profile
    # hand-checked: the counts add up to the rows, per class as counted in Python
    expected: dict[tuple[object, ...], int] = {}
    frame = (
        people.frame
        if kind == "parquet"
        else pl.read_csv(people.csv, separator=";", infer_schema=False)
    )
    for row in frame.select(QUASI).iter_rows():
        key = tuple(None if v is None else str(v) for v in row)
        if kind == "csv" and key[2] == "K2B":
            key = (key[0], key[1], None, key[3])
        expected[key] = expected.get(key, 0) + 1
    assert {r[:-1]: r[-1] for r in on_spark.decoded().rows()} == expected


def test_profile_counts_are_the_same(people: People, sail_engine) -> None:
    source = TableSource(path=str(people.parquet))
    columns = ["age", "visit", "income", "region", "email", "score"]
    on_polars = PolarsRows().column_counts(source, columns, top=5)
    on_spark = sail_engine.column_counts(source, columns, top=5)
    assert on_spark == on_polars
    income = next(c for c in on_spark if c.column == "income")
    assert income.missing == people.frame.get_column("income").null_count() > 0
    region = next(c for c in on_spark if c.column == "region")
    assert region.distinct == 7


def test_l_diversity_is_the_same(people: People, sail_engine) -> None:
    source = TableSource(path=str(people.parquet))
    on_polars = PolarsRows().l_diversity(source, ["age", "sex"], ["region", "score"])
    on_spark = sail_engine.l_diversity(source, ["age", "sex"], ["region", "score"])
    assert on_spark == on_polars
    assert on_spark[0].smallest_l >= 1


def _problem(people: People, encoded: EncodedData):  # type: ignore[no-untyped-def]
    lookups = [
        people.hierarchies[q].lookup(d) for q, d in zip(QUASI, encoded.dictionaries, strict=True)
    ]
    return problem_from_encoded(encoded, lookups), lookups


def test_search_optimum_is_the_same(people: People, sail_engine) -> None:
    source = TableSource(path=str(people.parquet))
    results = []
    for engine in (PolarsRows(), sail_engine):
        problem, _ = _problem(people, engine.histogram(source, QUASI))
        results.append(
            optimal_search(problem, KAnonymity(5), metric="loss", suppression_limit=0.05)
        )
    on_polars, on_spark = results
    assert on_polars.levels is not None
    assert on_spark.levels == on_polars.levels
    assert on_spark.solution.suppressed_rows == on_polars.solution.suppressed_rows
    assert on_spark.solution.information_loss == on_polars.solution.information_loss
    assert on_spark.nodes_total == on_polars.nodes_total


def _release(engine, people: People, out: Path | str, keys, techniques=(), direct=None):  # type: ignore[no-untyped-def]
    source = TableSource(path=str(people.parquet))
    encoded = engine.histogram(source, QUASI)
    problem, lookups = _problem(people, encoded)
    return release_solution(
        engine,
        source,
        problem=problem,
        lookups=lookups,
        dictionaries=encoded.dictionaries,
        levels={"age": 2, "visit": 2, "region": 1, "sex": 0},
        criterion=KAnonymity(3),
        out=str(out),
        suppression_limit=0.2,
        direct=direct
        or {
            "name": MaskSpec(method="hmac", length=16),
            "email": "encrypt",
            "health_card": MaskSpec(method="mask", keep_leading=3),
        },
        keys=keys,
        techniques=techniques,
        seed=11,
    )


def test_released_rows_are_the_same(people: People, sail_engine, tmp_path: Path) -> None:
    keys = {"name": new_key(), "email": new_key()}
    techniques = (
        RoundingParams(columns=("weight",), base=5),
        TopBottomParams(column="score", top=900, bottom=50),
        DateShiftParams(person="name", columns=(), max_days=10, key=new_key()),
    )
    on_polars = _release(PolarsRows(), people, tmp_path / "polars.parquet", keys, techniques)
    on_spark = _release(sail_engine, people, tmp_path / "spark", keys, techniques)
    mine = pl.read_parquet(on_polars.written.location)
    theirs = pl.read_parquet(on_spark.written.location)
    assert theirs.schema == mine.schema
    assert "name" in theirs.columns and theirs.height == mine.height
    assert 0 < theirs.height < people.frame.height  # some rows were suppressed
    assert column_digests(theirs) == column_digests(mine)
    assert theirs.sort(theirs.columns).rows() == mine.sort(mine.columns).rows()
    # the figures re-measured on each engine's written release
    assert on_spark.measure == on_polars.measure
    assert on_spark.measure.passes
    # masked as asked: keyed pseudonyms of 16 hex characters, tokens that decrypt
    assert theirs.get_column("name").str.len_chars().unique().to_list() == [16]
    clear = decrypt_column(theirs.drop_nulls("email").head(20), "email", keys["email"])
    assert all(v.startswith("p") and v.endswith("@example.org") for v in clear["email"])
    assert theirs.get_column("score").max() <= 900
    # the manifest counts the rows written
    assert on_spark.written.manifest.rows == theirs.height
    assert on_spark.written.secrets.keys == keys


def test_random_pseudonyms_relink_to_the_same_values(
    people: People, sail_engine, tmp_path: Path
) -> None:
    direct = {"health_card": "random", "name": "remove", "email": "remove"}
    on_spark = _release(sail_engine, people, tmp_path / "spark", {}, direct=direct)
    on_polars = _release(PolarsRows(), people, tmp_path / "polars.parquet", {}, direct=direct)
    theirs = pl.read_parquet(on_spark.written.location)
    mine = pl.read_parquet(on_polars.written.location)
    assert "name" not in theirs.columns and "email" not in theirs.columns
    table = on_spark.written.secrets.linking_tables["health_card"]
    assert table.height == people.frame.get_column("health_card").drop_nulls().n_unique()
    back = relink_column(theirs, "health_card", table)
    again = relink_column(
        mine, "health_card", on_polars.written.secrets.linking_tables["health_card"]
    )
    assert back.sort(back.columns).rows() == again.sort(again.columns).rows()
    assert (
        theirs.get_column("health_card").null_count() == mine.get_column("health_card").null_count()
    )
