"""The cluster-side steps of a Spark release around its batch pass (`SparkRows.write_release`):
random pseudonyms through a linking table drawn here and joined on the cluster, and record
suppression by a null-safe semi-join against the class counts (classes smaller than the
release size, and those failing a privacy model, are removed), counted on the recoded
quasi-identifiers alone; and the schema conversions between Spark and Arrow they share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from apps.engine.errors import EngineInputError
from apps.engine.masking import (
    MaskSpec,
    mapped_values_refusal,
    mask_direct_identifiers,
)
from apps.engine.rows.batches import (
    BatchRecipe,
    Recoding,
    release_batches,
    spark_arrow_schema,
)
from apps.engine.rows.model import Progress, ReleasePlan
from apps.engine.rows.spark.reading import column
from apps.engine.rows.spark.session import Runner, first_line

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_COUNT = "__deidweb_count"


def random_pseudonyms(
    session: SparkSession,
    runner: Runner,
    frame: DataFrame,
    specs: dict[str, MaskSpec],
    progress: Progress | None,
) -> tuple[DataFrame, dict[str, pl.DataFrame]]:
    """Random pseudonyms through a linking table drawn here (one per distinct value)
    and joined on the cluster by the stored value."""
    if not specs:
        return frame, {}
    from pyspark.sql import functions as F

    estimates = runner.run(
        lambda: frame.agg(*(F.approx_count_distinct(column(c)).alias(c) for c in specs)).collect()[
            0
        ],
        message="Estimating distinct values of the random pseudonyms",
        progress=progress,
    )
    for c, spec in specs.items():
        refusal = mapped_values_refusal(c, spec.method, int(estimates[c] or 0))
        if refusal:
            raise EngineInputError(refusal)
    linking: dict[str, pl.DataFrame] = {}
    for i, (c, spec) in enumerate(specs.items()):
        values_query = frame.select(column(c).alias("value")).where(F.col("value").isNotNull())
        values = pl.from_arrow(
            runner.run(
                values_query.distinct().toArrow,
                message=f"Collecting the distinct values of {c}",
                progress=progress,
            )
        )
        assert isinstance(values, pl.DataFrame)
        text = values.select(pl.col("value").cast(pl.String).alias(c))
        drawn = mask_direct_identifiers(text, {c: spec})
        table = drawn.secrets.linking_tables[c]
        linking[c] = table
        pairs = pl.DataFrame(
            {
                f"__deidweb_value{i}": values.get_column("value"),
                f"__deidweb_pseudonym{i}": drawn.data.get_column(c),
            }
        )
        mapping = session.createDataFrame(pairs.to_arrow())
        joined = frame.join(
            F.broadcast(mapping),
            column(c) == F.col(f"__deidweb_value{i}"),
            "left",
        )
        frame = joined.select(
            *(
                F.col(f"__deidweb_pseudonym{i}").alias(name) if name == c else column(name)
                for name in frame.columns
            )
        )
    return frame, linking


def release_size_suppression(
    session: SparkSession,
    source: DataFrame,
    released: DataFrame,
    plan: ReleasePlan,
    recodings: tuple[Recoding, ...],
    quasi: list[str],
) -> DataFrame:
    """The released rows of classes of at least the release size, not failing."""
    from pyspark.sql import functions as F

    failing = plan.suppressed_classes
    if not quasi:
        return released if plan.release_size <= 1 else released.limit(0)
    if plan.release_size <= 1 and (failing is None or failing.height == 0):
        return released
    labels_recipe = BatchRecipe(direct={}, keys={}, recodings=recodings, techniques=())
    qi_only = source.select(*(column(q) for q in quasi))
    schema = spark_arrow_schema(pa.schema([pa.field(q, pa.string()) for q in quasi]))
    labels_recipe = replace(labels_recipe, schema=schema)
    classes = (
        qi_only.mapInArrow(partial(release_batches, recipe=labels_recipe), _spark_schema(schema))
        .groupBy(*(column(q) for q in quasi))
        .agg(F.count(F.lit(1)).alias(_COUNT))
        .where(F.col(_COUNT) >= plan.release_size)
        .drop(_COUNT)
    )
    if failing is not None and failing.height:
        bad = session.createDataFrame(
            failing.select(pl.col(q).cast(pl.String) for q in quasi).to_arrow()
        )
        classes = classes.alias("k").join(bad.alias("f"), _null_safe("k", "f", quasi), "left_anti")
    return released.alias("r").join(classes.alias("c"), _null_safe("r", "c", quasi), "left_semi")


def _null_safe(left: str, right: str, names: Sequence[str]) -> list[Any]:
    from pyspark.sql import functions as F

    def quoted(alias: str, name: str) -> Any:
        return F.col(f"{alias}.`{name.replace('`', '``')}`")

    return [quoted(left, n).eqNullSafe(quoted(right, n)) for n in names]


def _arrow_schema(frame: DataFrame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(frame.schema)
    except Exception as exc:
        raise EngineInputError(f"a column type is not supported: {first_line(exc)}") from None


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
