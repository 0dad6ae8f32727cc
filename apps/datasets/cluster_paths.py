"""What a cluster path may be (issue #27, docs/spark.md): the source of a cluster data set
(``table:NAME``, ``parquet:PATH``, ``delta:PATH`` or a plain Parquet path) and the release
paths, which must lie below the organization's release prefix. Anything else is refused
naming the problem, whatever wrote it."""

from __future__ import annotations

import re

from apps.core.errors import ApplicationError
from apps.engine.rows import TableSource

#: A catalog table: ``name``, ``schema.name`` or ``catalog.schema.name``.
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
#: A path the cluster reads: an absolute path or a URI of a file system Spark knows.
_PATH = re.compile(r"^(/|(s3a|s3|gs|abfss|abfs|wasbs|hdfs|dbfs|file):/)[^\s]*$")
SOURCE_FORMATS = ("parquet", "delta")


def _check_path(path: str, what: str) -> str:
    path = path.strip()
    if not _PATH.match(path):
        raise ApplicationError(
            f"{what} {path!r} is not a cluster path: give an absolute path (/lake/…) or a "
            "URI (s3a://…, abfss://…, gs://…, hdfs://…, dbfs:/…).",
            {"field": what},
        )
    if any(part in (".", "..") for part in path.split("/")):
        raise ApplicationError(f"{what} {path!r} contains '.' or '..' parts.", {"field": what})
    return path


def cluster_source_check(text: str) -> TableSource:
    """``table:NAME``, ``parquet:PATH``, ``delta:PATH`` or a plain path (a folder or file of
    Parquet), as the cluster reads it; anything else is refused naming the problem."""
    text = text.strip()
    prefix, colon, rest = text.partition(":")
    if colon and prefix == "table":
        if not _TABLE.match(rest.strip()):
            raise ApplicationError(
                f"{rest.strip()!r} is not a table name: letters, digits and _ in up to three "
                "dotted parts (catalog.schema.table).",
                {"field": "source"},
            )
        return TableSource(table=rest.strip(), format="table")
    if colon and prefix in SOURCE_FORMATS and not rest.startswith("//"):
        return TableSource(path=_check_path(rest, "source"), format=prefix)  # type: ignore[arg-type]
    if colon and prefix == "csv":
        raise ApplicationError(
            "A CSV file is uploaded, not read on the cluster: give a table, Parquet or Delta.",
            {"field": "source"},
        )
    return TableSource(path=_check_path(text, "source"), format="parquet")


def release_prefix_check(prefix: str) -> str:
    """The organization's release prefix, without a trailing slash."""
    return _check_path(prefix, "release_prefix").rstrip("/")


def release_path_check(prefix: str, path: str) -> str:
    """``path`` when it lies below ``prefix`` (the organization's allowed release area);
    anything else is refused, whatever wrote it."""
    prefix = release_prefix_check(prefix)
    path = _check_path(path, "release path").rstrip("/")
    if not path.startswith(prefix + "/"):
        raise ApplicationError(
            f"The release path {path!r} is outside the organization's release area {prefix!r}.",
            {"field": "release_path"},
            status=403,
        )
    return path
