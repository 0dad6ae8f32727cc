"""The seam's small parts, without a server: sources, manifests, refusals, batches."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.masking import MaskSpec, hmac_pseudonym, new_key
from apps.engine.rows import TableSource, cluster_refusal, open_engine
from apps.engine.rows.batches import BatchRecipe, release_batches
from apps.engine.rows.manifest import (
    ManifestFile,
    ReleaseManifest,
    compare,
    hash_file,
    relative_name,
)
from apps.engine.rows.spark.session import check_remote, redacted
from apps.engine.techniques.local_suppression import LocalSuppressionParams
from apps.engine.techniques.rounding import RoundingParams


@pytest.mark.parametrize(
    ("text", "table", "path", "kind"),
    [
        ("table:claims", "claims", None, "table"),
        ("/lake/x.parquet", None, "/lake/x.parquet", "parquet"),
        ("/lake/folder", None, "/lake/folder", "parquet"),
        ("/lake/x.csv", None, "/lake/x.csv", "csv"),
        ("csv:/lake/x.dat", None, "/lake/x.dat", "csv"),
        ("delta:s3a://b/t", None, "s3a://b/t", "delta"),
        ("s3a://bucket/t/", None, "s3a://bucket/t/", "parquet"),
    ],
)
def test_a_source_is_parsed_from_its_text(text, table, path, kind) -> None:
    source = TableSource.parse(text)
    assert (source.table, source.path, source.resolved_format()) == (table, path, kind)


@pytest.mark.parametrize("text", ["table:", "table:  ", ""])
def test_an_empty_source_is_refused(text: str) -> None:
    with pytest.raises(EngineInputError):
        TableSource.parse(text)


def test_the_polars_engine_refuses_a_table_name() -> None:
    with pytest.raises(EngineInputError, match="a table name needs a cluster"):
        open_engine("polars").histogram(TableSource.parse("table:claims"), ["a"])
    with pytest.raises(EngineInputError, match="needs a Spark Connect address"):
        open_engine("spark")


@pytest.mark.parametrize(
    "remote", ["sc://", "sc://host", "http://host:15002", "sc://host:99999", "sc://ho st:1"]
)
def test_a_bad_spark_address_is_refused(remote: str) -> None:
    with pytest.raises(EngineInputError):
        check_remote(remote)


def test_the_token_of_an_address_is_never_shown() -> None:
    assert redacted("sc://h:15002/;token=abc;use_ssl=true") == "sc://h:15002"
    assert check_remote("sc://[::1]:15002/;token=abc") == ("::1", 15002)


def test_relative_names_whatever_the_scheme() -> None:
    assert relative_name("/tmp/r", "file:///tmp/r/part-0.parquet") == "part-0.parquet"
    assert relative_name("file:/tmp/r/", "file:/tmp/r/a/b.parquet") == "a/b.parquet"
    assert relative_name("s3a://b/r", "s3a://b/r/p.parquet") == "p.parquet"


def test_a_file_hash_is_its_sha256(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    pl.DataFrame({"a": [1, 2, 3]}).write_parquet(path)
    size, rows, digest = hash_file(str(path))
    assert (size, rows) == (path.stat().st_size, 3)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert hash_file(f"file://{path}") == (size, rows, digest)


def test_the_digest_covers_every_file_and_compare_names_them() -> None:
    files = (ManifestFile("a.parquet", 10, 5, "0" * 64), ManifestFile("b.parquet", 11, 6, "1" * 64))
    manifest = ReleaseManifest("/r", 11, (("x", "string"),), files)
    assert ReleaseManifest.from_dict(manifest.to_dict()) == manifest
    other = ReleaseManifest(
        "/r", 11, (("x", "string"),), (files[0], ManifestFile("b.parquet", 11, 6, "2" * 64))
    )
    assert other.digest != manifest.digest
    check = compare(
        manifest,
        ReleaseManifest("/r", 0, (), (other.files[1], ManifestFile("c.parquet", 1, 1, "3" * 64))),
    )
    assert (check.changed, check.missing, check.added) == (
        ("b.parquet",),
        ("a.parquet",),
        ("c.parquet",),
    )
    assert not check.ok and "changed: b.parquet" in check.message()
    with pytest.raises(ValueError):
        ReleaseManifest.from_dict({"format": "other"})


def test_only_row_local_techniques_run_on_a_cluster() -> None:
    assert cluster_refusal(RoundingParams(columns=("x",), base=5)) is None
    refusal = cluster_refusal(LocalSuppressionParams(quasi=("a",), k=2))
    assert refusal and "integer program" in refusal


def test_a_batch_is_masked_with_the_jobs_key() -> None:
    import pyarrow as pa

    key = new_key()
    recipe = BatchRecipe(
        direct={"id": MaskSpec(method="hmac", length=20)},
        keys={"id": key},
        recodings=(),
        techniques=(),
    )
    batch = pa.RecordBatch.from_pydict({"id": ["a", None, "b"], "v": [1, 2, 3]})
    out = pa.Table.from_batches(list(release_batches([batch], recipe)))
    assert out.column(0).to_pylist() == [
        hmac_pseudonym("a", key, 20),
        None,
        hmac_pseudonym("b", key, 20),
    ]
    assert out.column(1).to_pylist() == [1, 2, 3]
