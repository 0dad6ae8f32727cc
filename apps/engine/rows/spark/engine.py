"""The row passes on Apache Spark, through the DataFrame API over Spark Connect.

* Histogram: one ``groupBy(quasi).count()`` on the cluster; only the distinct tuples
  come back (as Arrow), and `apps.engine.frame.encode_distinct` encodes them as the
  polars engine does (values turned into text by polars, not by Spark, so a date or an
  integer reads the same on both).
* Release (its cluster-side steps in `apps.engine.rows.spark.release_steps`): random
  pseudonyms first (their linking table is drawn here and joined on the cluster,
  refused past `MAX_MAPPED_VALUES` as on one machine); then ``mapInArrow`` runs
  `apps.engine.rows.batches` on every batch (keyed pseudonyms, AES-SIV tokens,
  character masking, scrubbing, recoding, row-local techniques), with the keys inside
  the job, never written to the cluster; classes smaller than the release size (and
  those failing a privacy model) are removed by a null-safe semi-join against the
  class counts, counted on the recoded quasi-identifiers alone; rows are shuffled (a
  seeded random partition, then a random order within it) and written as Parquet
  (files of about `ROWS_PER_FILE` rows) at a path that must not exist yet.
* Manifest: the files Spark lists for the written table, each hashed (SHA-256) by an
  executor next to it (`apps.engine.rows.manifest`).
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

from apps.engine.attribute import SensitiveDiversity
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode_distinct
from apps.engine.masking import (
    MaskingSecrets,
    MaskSpec,
    mask_direct_identifiers,
    new_key,
)
from apps.engine.reading import check_columns
from apps.engine.rows.batches import (
    HASH_SCHEMA,
    BatchRecipe,
    Recoding,
    hash_batches,
    release_batches,
    release_frame,
    spark_arrow_schema,
)
from apps.engine.rows.manifest import ManifestCheck, ReleaseManifest, build_manifest, compare
from apps.engine.rows.model import ColumnCounts, Progress, ReleasePlan, TableSource, WrittenRelease
from apps.engine.rows.release import (
    check_cluster_techniques,
    check_l_diversity_columns,
    l_diversity_from_histogram,
)
from apps.engine.rows.spark.archive import engine_archive
from apps.engine.rows.spark.reading import column, read_source
from apps.engine.rows.spark.release_steps import (
    _COUNT,
    _arrow_schema,
    _spark_schema,
    random_pseudonyms,
    release_size_suppression,
)
from apps.engine.rows.spark.session import Runner, connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Rows per written file (the shuffle's partitions): large files, few of them.
ROWS_PER_FILE = 4_000_000
#: Rows per Arrow batch handed to the executors' Python code.
BATCH_ROWS = 131_072
_RANDOM = "__deidweb_random"


def _len_dtype() -> pl.DataType:
    """The count type polars' own group-by gives (u32 or u64 by build)."""
    return pl.select(pl.len()).dtypes[0]


class SparkRows:
    """The row passes on one Spark Connect session (`apps.engine.rows`)."""

    name = "spark"

    def __init__(self, session: SparkSession, *, owns_session: bool = False) -> None:
        self.session = session
        self._owns = owns_session
        self._runner = Runner(session)
        self._shipped = False
        # Larger Arrow batches for the executors' polars code: fewer, cheaper calls
        # (Spark's default is 10,000 rows); a server without the setting keeps its own.
        with contextlib.suppress(Exception):
            session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))

    @classmethod
    def connect(cls, remote: str) -> SparkRows:
        """A session of its own on the server at ``remote`` (``sc://HOST:PORT``)."""
        return cls(connect(remote), owns_session=True)

    # ------------------------------------------------------------------ lifecycle

    def cancel(self) -> None:
        self._runner.cancel()

    def close(self) -> None:
        self._runner.close()
        if self._owns:
            # already gone with its server: nothing left to release
            with contextlib.suppress(Exception):
                self.session.stop()

    def __enter__(self) -> SparkRows:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _ship_engine(self) -> None:
        """Send this process's engine code with the session (a zip on the executors'
        Python path), so the executors run exactly the client's masking and recoding, not
        whatever version the cluster may have installed. A server that takes no artifacts
        (Sail runs the code in its own process) imports it as installed there."""
        if self._shipped:
            return
        self._shipped = True
        archive = engine_archive()
        with contextlib.suppress(Exception):
            self.session.addArtifacts(str(archive), pyfile=True)

    # ------------------------------------------------------------------ reading

    def _read(self, source: TableSource) -> DataFrame:
        return self._runner.run(
            lambda: read_source(self.session, source),
            message=f"Reading {source.describe()}",
            progress=None,
        )

    def columns(self, source: TableSource) -> tuple[str, ...]:
        return tuple(self._read(source).columns)

    def head(self, source: TableSource, rows: int) -> pl.DataFrame:
        limited = self._read(source).limit(rows)
        table = self._runner.run(limited.toArrow, message="Reading a sample", progress=None)
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame

    # ------------------------------------------------------------------ histogram

    def histogram(
        self, source: TableSource, columns: Sequence[str], *, progress: Progress | None = None
    ) -> EncodedData:
        frame = self._read(source)
        columns = list(columns)
        check_columns(frame.columns, columns, "quasi-identifier")
        from pyspark.sql import functions as F

        grouped = frame.groupBy(*(column(c) for c in columns)).agg(F.count(F.lit(1)).alias(_COUNT))
        table = self._runner.run(
            grouped.toArrow,
            message="Counting the equivalence classes on the cluster",
            progress=progress,
        )
        distinct = pl.from_arrow(table)
        assert isinstance(distinct, pl.DataFrame)
        distinct = distinct.select(*columns, pl.col(_COUNT).cast(_len_dtype()).alias(COUNT_COLUMN))
        return encode_distinct(distinct, columns)

    def column_counts(
        self, source: TableSource, columns: Sequence[str], *, top: int = 10
    ) -> tuple[ColumnCounts, ...]:
        from pyspark.sql import functions as F

        frame = self._read(source)
        check_columns(frame.columns, list(columns), "profiled")
        aggregates = [F.count(F.lit(1)).alias("rows")]
        for i, c in enumerate(columns):
            aggregates.append(F.sum(column(c).isNull().cast("long")).alias(f"m{i}"))
            aggregates.append(F.countDistinct(column(c)).alias(f"d{i}"))
        totals = self._runner.run(
            lambda: frame.agg(*aggregates).collect()[0],
            message="Counting values",
            progress=None,
        )
        out = []
        for i, c in enumerate(columns):
            frequent = (
                frame.groupBy(column(c).alias("value"))
                .count()
                .orderBy(F.desc("count"), F.asc_nulls_last("value"))
                .limit(top)
            )
            rows = self._runner.run(frequent.toArrow, message=f"Top values of {c}", progress=None)
            out.append(
                ColumnCounts(
                    column=c,
                    rows=int(totals["rows"]),
                    missing=int(totals[f"m{i}"] or 0),
                    distinct=int(totals[f"d{i}"] or 0),
                    top=tuple(
                        zip(
                            rows.column("value").to_pylist(),
                            (int(n) for n in rows.column("count").to_pylist()),
                            strict=True,
                        )
                    ),
                )
            )
        return tuple(out)

    def l_diversity(
        self, source: TableSource, quasi: Sequence[str], sensitive: Sequence[str]
    ) -> tuple[SensitiveDiversity, ...]:
        check_l_diversity_columns(self.columns(source), quasi, sensitive)
        return tuple(
            l_diversity_from_histogram(self.histogram(source, [*quasi, s]), quasi, s)
            for s in sensitive
        )

    # ------------------------------------------------------------------ release

    def write_release(
        self,
        source: TableSource,
        plan: ReleasePlan,
        out: str,
        *,
        progress: Progress | None = None,
    ) -> WrittenRelease:
        check_cluster_techniques(plan.techniques)
        frame = self._read(source)
        quasi = list(plan.quasi)
        check_columns(frame.columns, quasi, "quasi-identifier")
        specs = {c: MaskSpec(method=s) if isinstance(s, str) else s for c, s in plan.direct.items()}
        if specs:
            check_columns(frame.columns, list(specs), "direct identifier")
        input_schema = _arrow_schema(frame)
        empty = pl.from_arrow(input_schema.empty_table())
        assert isinstance(empty, pl.DataFrame)
        mask_direct_identifiers(empty, specs)  # checks methods and lengths before any pass
        random = [c for c, s in specs.items() if s.method == "random"]
        frame, linking = random_pseudonyms(
            self.session, self._runner, frame, {c: specs[c] for c in random}, progress
        )
        keys = {
            c: plan.keys.get(c) or new_key()
            for c, s in specs.items()
            if s.method in ("hmac", "encrypt")
        }
        recodings = tuple(
            Recoding(lk, tuple(d.to_list()), plan.levels[lk.column])
            for lk, d in zip(plan.lookups, plan.dictionaries, strict=True)
        )
        recipe = BatchRecipe(
            direct={c: s for c, s in specs.items() if s.method != "random"},
            keys=keys,
            recodings=recodings,
            techniques=plan.techniques,
        )
        after_random = pl.from_arrow(_arrow_schema(frame).empty_table())
        assert isinstance(after_random, pl.DataFrame)
        schema = spark_arrow_schema(release_frame(after_random, recipe).to_arrow().schema)
        recipe = replace(recipe, schema=schema)
        self._ship_engine()
        released = frame.mapInArrow(partial(release_batches, recipe=recipe), _spark_schema(schema))
        kept = release_size_suppression(self.session, frame, released, plan, recodings, quasi)
        seed = plan.seed if plan.seed is not None else secrets.randbits(63)
        parts = max(1, min(math.ceil(plan.rows / ROWS_PER_FILE), 10_000))
        from pyspark.sql import functions as F

        shuffled = (
            kept.withColumn(_RANDOM, F.rand(seed))
            .repartition(parts, _RANDOM)
            .sortWithinPartitions(_RANDOM)
            .drop(_RANDOM)
        )
        self._runner.run(
            lambda: shuffled.write.parquet(out),
            message="Masking, generalizing, suppressing, shuffling and writing the release",
            progress=progress,
            start=0.05,
            end=0.9,
        )
        manifest = self._manifest(out, progress)
        return WrittenRelease(
            location=out,
            manifest=manifest,
            secrets=MaskingSecrets(keys=keys, linking_tables=linking),
            engine=self.name,
        )

    def _files(self, location: str) -> list[str]:
        """The table's data files, listed without reading them (a damaged file must be
        reported as changed, not stop the listing); hidden files are not the table's."""

        def listed() -> list[str]:
            files = (
                self.session.read.format("binaryFile")
                .option("pathGlobFilter", "*.parquet")
                .load(location)
            )
            return list(files.inputFiles())

        return self._runner.run(listed, message="Listing the release's files", progress=None)

    def _manifest(self, location: str, progress: Progress | None) -> ReleaseManifest:
        columns = self._runner.run(
            lambda: [
                (f.name, f.dataType.simpleString())
                for f in self.session.read.parquet(location).schema.fields
            ],
            message="Reading the release's columns",
            progress=None,
        )
        return build_manifest(location, columns, self._hash(self._files(location), progress))

    def _hash(self, files: list[str], progress: Progress | None) -> list[tuple[str, int, int, str]]:
        if not files:
            return []
        self._ship_engine()
        paths = self.session.createDataFrame(pa.table({"path": pa.array(files, pa.string())}))
        hashed = paths.repartition(min(len(files), 64)).mapInArrow(hash_batches, HASH_SCHEMA)
        table = self._runner.run(
            hashed.toArrow,
            message="Hashing the release's files (SHA-256)",
            progress=progress,
            start=0.9,
            end=1.0,
        )
        return [
            (str(p), int(b), int(r), str(h))
            for p, b, r, h in zip(
                *(table.column(n).to_pylist() for n in table.column_names), strict=True
            )
        ]

    def verify_release(self, manifest: ReleaseManifest) -> ManifestCheck:
        try:
            files = self._files(manifest.location)
        except EngineInputError as exc:
            if "PATH_NOT_FOUND" not in str(exc) and "not exist" not in str(exc).lower():
                raise
            files = []  # the release's folder is gone: every file is missing
        current = build_manifest(manifest.location, manifest.columns, self._hash(files, None))
        return compare(manifest, current)
