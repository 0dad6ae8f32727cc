"""What runs next to the data, one Arrow batch at a time (Spark's ``mapInArrow``).

Each batch of rows is turned into a polars frame and goes through the engine's own
code, the same that the polars engine runs on a whole file: masking
(`apps.engine.masking.mask_direct_identifiers` with the release's keys), recoding of
each quasi-identifier to its label at the chosen level (the expression of
`apps.engine.apply`), then the row-local techniques. So a value gets the same
pseudonym, token and label on a cluster as on one machine.

Nothing here imports pyspark: an executor needs Python with polars, pyarrow and
cryptography, and a batch function is tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from apps.engine.apply import _generalize_expr
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.masking import MaskSpec, mask_direct_identifiers
from apps.engine.rows.manifest import hash_file
from apps.engine.techniques.registry import technique_of


@dataclass(frozen=True)
class Recoding:
    lookup: GeneralizationLookup
    dictionary: tuple[str | None, ...]
    level: int


@dataclass(frozen=True)
class BatchRecipe:
    """Everything a batch needs: sent with the job (keys included), never stored."""

    direct: Mapping[str, MaskSpec]
    keys: Mapping[str, bytes]
    recodings: tuple[Recoding, ...]
    techniques: tuple[object, ...]
    schema: pa.Schema | None = None  # what the cluster expects back (cast to it)


def release_frame(frame: pl.DataFrame, recipe: BatchRecipe) -> pl.DataFrame:
    """One batch masked, recoded and perturbed (row by row: batches are independent)."""
    if recipe.direct:
        frame = mask_direct_identifiers(frame, recipe.direct, keys=recipe.keys).data
    if recipe.recodings:
        frame = frame.with_columns(
            _generalize_expr(r.lookup, list(r.dictionary), r.level).alias(r.lookup.column)
            for r in recipe.recodings
        )
    for params in recipe.techniques:
        frame = technique_of(params).run(frame, params).data
    return frame


def release_batches(
    batches: Iterable[pa.RecordBatch], recipe: BatchRecipe
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        table = release_frame(frame, recipe).to_arrow()
        if recipe.schema is not None:
            table = table.cast(recipe.schema)
        yield from table.to_batches()


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow types Spark reads back from Python: plain strings and binaries (polars
    hands out string views or large strings)."""
    replace = {
        pa.large_string(): pa.string(),
        pa.string_view(): pa.string(),
        pa.large_binary(): pa.binary(),
        pa.binary_view(): pa.binary(),
    }
    return pa.schema([pa.field(f.name, replace.get(f.type, f.type), nullable=True) for f in schema])


HASH_SCHEMA = "path string, bytes long, rows long, sha256 string"


def hash_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(path) → (path, bytes, rows, sha256), each file read where the executor runs."""
    for batch in batches:
        paths = batch.column(0).to_pylist()
        hashed = [hash_file(str(p)) for p in paths]
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(paths, pa.string()),
                pa.array([h[0] for h in hashed], pa.int64()),
                pa.array([h[1] for h in hashed], pa.int64()),
                pa.array([h[2] for h in hashed], pa.string()),
            ],
            names=["path", "bytes", "rows", "sha256"],
        )
