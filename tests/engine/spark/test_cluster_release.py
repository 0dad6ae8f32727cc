"""The cluster path's own guarantees (on Sail): the manifest catches a changed file,
techniques needing the whole data are refused, random pseudonyms stay refused past
their limit, a raising progress callback stops the cluster's work, a bad address fails at once,
and the command line prints the polars engine's figures."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import polars as pl
import pytest

from apps.engine import masking
from apps.engine.cli import main
from apps.engine.errors import EngineInputError
from apps.engine.rows import PolarsRows, ReleaseManifest, TableSource
from apps.engine.techniques.microaggregation import MicroaggregationParams
from apps.engine.techniques.noise import NoiseParams
from tests.engine.spark.conftest import QUASI, People
from tests.engine.spark.test_conformance import _release

pytestmark = pytest.mark.spark


def test_manifest_detects_a_changed_an_added_and_a_missing_file(
    people: People, sail_engine, tmp_path: Path
) -> None:
    done = _release(sail_engine, people, tmp_path / "release", {})
    manifest = done.written.manifest
    assert manifest.rows == done.measure.rows_out
    assert all(len(f.sha256) == 64 for f in manifest.files)
    assert (
        ReleaseManifest.from_dict(json.loads(manifest.canonical_json())).digest == manifest.digest
    )
    assert sail_engine.verify_release(manifest).ok
    files = sorted((tmp_path / "release").glob("*.parquet"))
    # one row of one file rewritten: same name, other bytes
    first = pl.read_parquet(files[0])
    first.with_columns(pl.col("sex").reverse()).write_parquet(files[0])
    check = sail_engine.verify_release(manifest)
    assert not check.ok and check.changed == (files[0].name,)
    assert "changed" in check.message()
    shutil.copy(files[0], tmp_path / "release" / "part-extra.parquet")
    check = sail_engine.verify_release(manifest)
    assert check.added == ("part-extra.parquet",)
    shutil.rmtree(tmp_path / "release")
    check = sail_engine.verify_release(manifest)
    assert not check.ok and set(check.missing) == {f.name for f in manifest.files}


def test_writing_over_an_existing_release_is_refused(
    people: People, sail_engine, tmp_path: Path
) -> None:
    _release(sail_engine, people, tmp_path / "release", {})
    before = sorted(p.name for p in (tmp_path / "release").iterdir())
    with pytest.raises(EngineInputError):
        _release(sail_engine, people, tmp_path / "release", {})
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == before


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (
            MicroaggregationParams(columns=("income",), k=3),
            "Microaggregation cannot run on a cluster",
        ),
        (NoiseParams(columns=("income",)), "Noise cannot run on a cluster"),
    ],
)
def test_whole_data_techniques_are_refused_on_a_cluster(
    people: People, sail_engine, tmp_path: Path, params, words
) -> None:
    with pytest.raises(EngineInputError, match=words):
        _release(sail_engine, people, tmp_path / "r", {}, techniques=(params,))
    assert not (tmp_path / "r").exists()


def test_random_pseudonyms_past_their_limit_are_refused(
    people: People, sail_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(masking, "MAX_MAPPED_VALUES", 100)  # health_card has 997 values
    with pytest.raises(EngineInputError, match="'health_card' has about .* distinct values"):
        _release(sail_engine, people, tmp_path / "r", {}, direct={"health_card": "random"})
    assert not (tmp_path / "r").exists()


class Cancelled(Exception):
    pass


def test_a_raising_progress_callback_interrupts_and_is_re_raised(
    people: People, sail_engine
) -> None:
    calls: list[float] = []

    def progress(share: float, message: str) -> None:
        calls.append(share)
        raise Cancelled()

    with pytest.raises(Cancelled):
        sail_engine.histogram(TableSource(path=str(people.parquet)), QUASI, progress=progress)
    assert calls == [0.0]
    # the session still works afterwards
    assert sail_engine.histogram(TableSource(path=str(people.parquet)), ["sex"]).rows == 3000


@pytest.mark.parametrize(
    ("remote", "words"),
    [
        ("sc://127.0.0.1:1", "cannot reach the Spark Connect server at sc://127.0.0.1:1"),
        ("http://127.0.0.1:15002", "expected sc://HOST:PORT"),
        ("sc://127.0.0.1:1/;token=SECRET", "cannot reach"),
    ],
)
def test_a_bad_spark_address_fails_at_once(people: People, remote: str, words: str, capsys) -> None:
    started = time.monotonic()
    code = main(
        [
            "measure",
            str(people.parquet),
            "--quasi",
            "sex",
            "--engine",
            "spark",
            "--spark-remote",
            remote,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and words in err
    assert "SECRET" not in err
    assert time.monotonic() - started < 15


def _json(argv: list[str], capsys) -> dict:  # type: ignore[no-untyped-def]
    assert main(argv) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    report.pop("seconds", None)
    report.pop("search_seconds", None)
    return report


def test_command_line_measure_search_apply_print_the_same_figures(
    people: People, sail_remote: str, tmp_path: Path, capsys
) -> None:
    spark = ["--engine", "spark", "--spark-remote", sail_remote]
    measure = [
        "measure",
        str(people.parquet),
        "--quasi",
        ",".join(QUASI),
        "--sensitive",
        "score",
        "--threshold",
        "0.2",
        "--release-model",
        "public",
        "--json",
    ]
    assert _json(measure + spark, capsys) == _json(measure, capsys)
    hierarchy = [x for q in QUASI for x in ("--hierarchy", f"{q}={people.hierarchy_files[q]}")]
    search = [
        "search",
        str(people.parquet),
        "--quasi",
        ",".join(QUASI),
        *hierarchy,
        "--k",
        "4",
        "--suppression-limit",
        "0.05",
        "--json",
    ]
    on_polars = _json(search, capsys)
    assert on_polars["levels"] is not None
    assert _json(search + spark, capsys) == on_polars
    apply = [
        "apply",
        *search[1:-1],
        "--direct",
        "name=hmac",
        "--direct",
        "email",
        "--seed",
        "3",
        "--json",
    ]
    mine = _json([*apply, "--out", str(tmp_path / "p.parquet")], capsys)
    theirs = _json(
        [*apply, "--out", str(tmp_path / "s"), "--manifest", str(tmp_path / "m.json"), *spark],
        capsys,
    )
    assert {k: theirs[k] for k in mine if k != "out"} == {
        k: v for k, v in mine.items() if k != "out"
    }
    assert (
        theirs["manifest_digest"]
        == ReleaseManifest.from_dict(json.loads((tmp_path / "m.json").read_text())).digest
    )
    verify = ["verify", str(tmp_path / "m.json"), "--json", *spark]
    assert _json(verify, capsys)["ok"] is True
    assert _json(verify + ["--digest", theirs["manifest_digest"]], capsys)["ok"] is True
    # through a table of the cluster's catalog
    table = pl.read_parquet(people.parquet)
    assert (
        PolarsRows().histogram(TableSource(path=str(people.parquet)), ["sex"]).rows == table.height
    )


def _append_bytes(part: Path) -> None:
    """Bytes appended to a released file on the cluster's disk (its Parquet footer is no
    longer at the end); Hadoop's checksum file beside it, if any, now disagrees too."""
    with part.open("ab") as handle:
        handle.write(b"appended after the approval")


def test_bytes_appended_to_a_released_file_are_reported_as_changed(
    people: People, sail_engine, tmp_path: Path
) -> None:
    done = _release(sail_engine, people, tmp_path / "release", {})
    manifest = done.written.manifest
    part = sorted((tmp_path / "release").glob("*.parquet"))[0]
    _append_bytes(part)
    check = sail_engine.verify_release(manifest)
    assert not check.ok
    assert check.changed == (part.name,) and check.missing == check.added == ()
    assert f"changed: {part.name}" in check.message()
