"""A TableSource as a Spark DataFrame, read by the cluster (never by this machine).

CSV is read as polars reads it (`apps.engine.reading.read_table`): a header line, every
column as text, an empty field and each ``null_values`` text the missing value, so that
both engines count the same classes. The separator is sniffed from the header when the
file is also readable here (the tests, a shared mount); otherwise give it (``--sep``),
else ``,``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from apps.engine.errors import EngineInputError
from apps.engine.reading import sniff_separator
from apps.engine.rows.model import TableSource
from apps.engine.rows.spark.session import first_line

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def column(name: str) -> Column:
    """A column by its exact name (dots, spaces and backticks included)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def read_source(session: SparkSession, source: TableSource) -> DataFrame:
    kind = source.resolved_format()
    try:
        if kind == "table":
            return session.read.table(str(source.table))
        path = str(source.path)
        if kind == "parquet":
            frame = session.read.parquet(path)
        elif kind == "delta":
            frame = session.read.format("delta").load(path)
        else:
            frame = _read_csv(session, path, source)
        frame.columns  # noqa: B018 - resolves the schema: a missing path fails here
    except EngineInputError:
        raise
    except Exception as exc:
        raise EngineInputError(f"cannot read {source.describe()}: {first_line(exc)}") from None
    return frame


def _read_csv(session: SparkSession, path: str, source: TableSource) -> DataFrame:
    from pyspark.sql import functions as F

    sep = source.sep or _sniffed(path) or ","
    frame = (
        session.read.option("header", True)
        .option("sep", sep)
        .option("inferSchema", False)
        .option("encoding", "UTF-8")
        .option("mode", "PERMISSIVE")
        .csv(path)
    )
    if source.null_values:
        missing = list(source.null_values)
        frame = frame.select(
            *(
                F.when(column(c).isin(missing), F.lit(None)).otherwise(column(c)).alias(c)
                for c in frame.columns
            )
        )
    return frame


def _sniffed(path: str) -> str | None:
    local = Path(path[len("file:") :] if path.startswith("file:") else path)
    try:
        with local.open("r", encoding="utf-8", errors="replace") as handle:
            header = handle.readline().lstrip("\ufeff")
    except OSError:
        return None
    return sniff_separator(header) if header.strip() else None
