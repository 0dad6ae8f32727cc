"""The engine seam: the two passes of a release that read rows, on polars or on Spark.

Only two passes touch a data set's rows: the **class histogram** (a group-by count over
the quasi-identifiers, and the profile's per-column counts) and the **release** (mask,
recode, suppress, apply the row-local techniques, shuffle, write). Everything else —
search, population models, criteria, utility, report — works on the histogram
(`apps.engine.encoded.EncodedData`) and does not care which engine counted it.

Engines (both implement `RowEngine`, ``model.py``):

* ``polars`` (`PolarsRows`, the default): files of this machine, today's code.
* ``spark`` (`SparkRows`, ``spark/``): the DataFrame API over Spark Connect
  (``pyspark-client``, pure Python: nothing here needs a JVM). Sources are paths the
  cluster reads or catalog tables; the release is a Parquet table on the cluster with
  a manifest (``manifest.py``). Row-local work runs in the executors batch by batch
  (``batches.py``, the same polars code). pyspark is imported only by this engine.

How a caller uses it (the command line does exactly this; a Celery job does the same
with its progress callback, and calls `cancel` or lets the callback raise to stop)::

    with open_engine("spark", remote="sc://spark:15002") as engine:
        source = TableSource.parse("table:claims")
        encoded = engine.histogram(source, quasi, progress=job_progress)
        ...  # search on `encoded` as for a file (problem_from_encoded, optimal_search)
        done = release_solution(engine, source, problem=..., lookups=..., dictionaries=...,
                                levels=..., criterion=..., out="s3a://bucket/release/v3",
                                direct=..., progress=job_progress)
        done.written.manifest.digest   # what the reviewer approves
        engine.verify_release(done.written.manifest).ok   # what a download checks
"""

from __future__ import annotations

from typing import Literal

from apps.engine.errors import EngineInputError
from apps.engine.rows.manifest import ManifestCheck, ManifestFile, ReleaseManifest
from apps.engine.rows.model import (
    ColumnCounts,
    Progress,
    ReleasePlan,
    RowEngine,
    TableSource,
    WrittenRelease,
)
from apps.engine.rows.polars_rows import PolarsRows
from apps.engine.rows.release import (
    ROW_LOCAL_TECHNIQUES,
    RowsRelease,
    cluster_refusal,
    l_diversity_from_histogram,
    measure_written,
    release_plan,
    release_solution,
)

EngineName = Literal["polars", "spark"]
ENGINES: tuple[EngineName, ...] = ("polars", "spark")


def open_engine(name: str = "polars", *, remote: str | None = None) -> RowEngine:
    """The engine called ``name``; Spark needs the server's ``remote`` (sc://HOST:PORT)."""
    if name == "polars":
        if remote:
            raise EngineInputError("a Spark Connect address is given but the engine is polars")
        return PolarsRows()
    if name == "spark":
        if not remote:
            raise EngineInputError(
                "the spark engine needs a Spark Connect address (sc://HOST:PORT)"
            )
        # lazy: pyspark is optional and heavy; only the spark engine needs it
        from apps.engine.rows.spark.engine import SparkRows

        return SparkRows.connect(remote)
    raise EngineInputError(f"unknown engine {name!r}: {' or '.join(ENGINES)}")


__all__ = [
    "ENGINES",
    "ROW_LOCAL_TECHNIQUES",
    "ColumnCounts",
    "ManifestCheck",
    "ManifestFile",
    "PolarsRows",
    "Progress",
    "ReleaseManifest",
    "ReleasePlan",
    "RowEngine",
    "RowsRelease",
    "TableSource",
    "WrittenRelease",
    "cluster_refusal",
    "l_diversity_from_histogram",
    "measure_written",
    "open_engine",
    "release_plan",
    "release_solution",
]
