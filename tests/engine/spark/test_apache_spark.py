"""End to end on a real Apache Spark (local mode, its Spark Connect server started by a
fixture): measure → search → apply → manifest verified, through the command line, with
the data read by path and by catalog table name; a changed file fails the check; a
running job is interrupted by `cancel`."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from apps.engine.cli import main
from apps.engine.errors import EngineInputError
from apps.engine.rows import open_engine
from tests.engine.spark.conftest import QUASI, People

pytestmark = pytest.mark.spark


def _run(argv: list[str], capsys, code: int = 0) -> dict:  # type: ignore[no-untyped-def]
    assert main(argv) == code, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    report.pop("seconds", None)
    report.pop("search_seconds", None)
    return report


def test_measure_search_apply_verify_on_apache_spark(
    people: People, spark_remote: str, tmp_path: Path, capsys
) -> None:
    spark = ["--engine", "spark", "--spark-remote", spark_remote]
    with open_engine("spark", remote=spark_remote) as engine:
        engine.session.read.parquet(str(people.parquet)).write.saveAsTable("people")
    measure = ["measure", "table:people", "--quasi", ",".join(QUASI), "--json"]
    on_spark = _run(measure + spark, capsys)
    on_polars = _run(["measure", str(people.parquet), *measure[2:]], capsys)
    on_spark.pop("file"), on_polars.pop("file")
    assert on_spark == on_polars
    assert on_spark["rows"] == 3000
    hierarchy = [x for q in QUASI for x in ("--hierarchy", f"{q}={people.hierarchy_files[q]}")]
    search = [
        "search",
        str(people.parquet),
        "--quasi",
        ",".join(QUASI),
        *hierarchy,
        "--k",
        "5",
        "--suppression-limit",
        "0.05",
        "--no-pareto",
        "--json",
    ]
    found = _run(search + spark, capsys)
    assert found == _run(search, capsys)
    levels = ",".join(f"{q}={lv}" for q, lv in found["levels"].items())
    out, manifest = tmp_path / "release", tmp_path / "release.manifest.json"
    applied = _run(
        [
            "apply",
            *search[1:-2],
            "--levels",
            levels,
            "--direct",
            "name=hmac",
            "--direct",
            "email=encrypt",
            "--out",
            str(out),
            "--manifest",
            str(manifest),
            "--json",
            *spark,
        ],
        capsys,
    )
    assert applied["passes"] is True
    assert applied["suppressed_rows"] == found["suppressed_rows"]
    assert applied["min_class_size"] >= 5
    released = pl.read_parquet(out / "*.parquet")
    assert released.height == applied["rows_out"] == 3000 - found["suppressed_rows"]
    assert released.get_column("name").str.len_chars().unique().to_list() == [32]
    verify = ["verify", str(manifest), "--digest", applied["manifest_digest"], "--json", *spark]
    assert _run(verify, capsys)["ok"] is True
    part = sorted(out.glob("*.parquet"))[0]
    # bytes appended on the cluster's local disk (Hadoop's .crc beside it now disagrees):
    # the file is reported changed, by name, not a check that cannot run
    original = part.read_bytes()
    with part.open("ab") as handle:
        handle.write(b"appended after the approval")
    failed = _run(verify, capsys, code=1)
    assert failed["ok"] is False and failed["changed"] == [part.name]
    assert failed["missing"] == failed["added"] == []
    part.write_bytes(original)
    assert _run(verify, capsys)["ok"] is True
    pl.read_parquet(part).head(1).write_parquet(part)
    failed = _run(verify, capsys, code=1)
    assert failed["ok"] is False and failed["changed"] == [part.name]


def test_cancel_interrupts_a_running_job_on_apache_spark(spark_remote: str) -> None:
    def _slow(batches):  # type: ignore[no-untyped-def]  # nested: pickled by value
        import time

        for batch in batches:
            time.sleep(120)
            yield batch

    with open_engine("spark", remote=spark_remote) as engine:
        frame = engine.session.range(2).repartition(2)
        slow = frame.mapInArrow(_slow, frame.schema)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                engine._runner.run(slow.collect, message="A slow pass", progress=None)  # type: ignore[attr-defined]
            except BaseException as exc:  # noqa: BLE001 - what the job would see
                errors.append(exc)

        worker = threading.Thread(target=run)
        started = time.monotonic()
        worker.start()
        time.sleep(8)
        engine.cancel()
        worker.join(timeout=60)
        assert not worker.is_alive(), "the cancelled pass did not stop"
        assert time.monotonic() - started < 60
        assert errors and isinstance(errors[0], EngineInputError)
        assert "interrupted" in str(errors[0])


def test_the_executors_run_the_engine_code_sent_with_the_session(spark_remote: str) -> None:
    """Not the cluster's own installation (here: another checkout's): the client's code."""

    def where(batches):  # type: ignore[no-untyped-def]  # nested: pickled by value
        import pyarrow as pa

        import apps.engine.rows.batches as shipped

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"file": [shipped.__file__]})

    with open_engine("spark", remote=spark_remote) as engine:
        engine._ship_engine()  # type: ignore[attr-defined]
        rows = engine.session.range(1).mapInArrow(where, "file string").collect()  # type: ignore[attr-defined]
    assert "deidweb-engine-" in rows[0]["file"]
