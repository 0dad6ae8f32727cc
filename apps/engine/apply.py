"""Writing the de-identified data set for a chosen node (METHOD.md Step 7, then 7.3 and 8).

Direct identifiers are masked (Engine I's masking.py), each quasi-identifier is replaced
by its generalized label at the chosen level, rows of classes smaller than the
criterion's release size are removed (record suppression), other columns are left as
they are, and the rows are shuffled: row order can leak who is who (PDPC 4.1c), so the
shuffle is seeded from a cryptographic random source unless a seed is given (tests).

The figures returned are **re-measured from the written file** (re-read, re-encoded,
classes counted again, apps.engine.release_measure), not copied from the search, so they
vouch for what is actually released. Information loss needs, besides the file, the
input's marginal frequencies (entropy) and row count (suppressed rows = input rows -
output rows).
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from apps.engine.criteria import Criterion
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.masking import MaskingSecrets, MaskMethod, MaskSpec, mask_direct_identifiers
from apps.engine.reading import check_columns
from apps.engine.release_measure import ReleaseMeasure, failing_classes, measure_release
from apps.engine.search.problem import SearchProblem
from apps.engine.search.sensitive import SensitiveTable

OUTPUT_FORMATS = (".parquet", ".csv")


@dataclass(frozen=True)
class ApplyResult:
    path: Path
    seed_used: bool  # True when the caller's seed fixed the order (tests only)
    measure: ReleaseMeasure
    secrets: MaskingSecrets  # keys / linking tables: store apart from the release


def _generalize_expr(
    lookup: GeneralizationLookup, dictionary: list[str | None], level: int
) -> pl.Expr:
    """Expression replacing the original values of a column by their labels at ``level``.

    A value's label is looked up by its position in the dictionary (a cast to an Enum of
    the dictionary's values, then a gather from the labels): the streaming engine runs
    that chunk by chunk. (`replace_strict` with the same mapping is not streamed: at
    100 million rows it held the whole frame, over 12 GB.) A value missing from the
    dictionary gets no label (null), as the old mapping's default did.
    """
    labels = lookup.labels[level]
    gmap = lookup.maps[level]
    mapping: dict[str, str | None] = {}
    null_label = None
    for code, value in enumerate(dictionary):
        if value is None:
            null_label = labels[int(gmap[code])]
        else:
            mapping.setdefault(value, labels[int(gmap[code])])
    col = pl.col(lookup.column).cast(pl.String)
    positions = col.cast(pl.Enum(list(mapping)), strict=False).to_physical()
    mapped = pl.lit(pl.Series(list(mapping.values()), dtype=pl.String)).gather(positions)
    return pl.when(col.is_null()).then(pl.lit(null_label, dtype=pl.String)).otherwise(mapped)


def _release_frame(
    data: pl.LazyFrame | pl.DataFrame,
    *,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    release_size: int,
    direct: Mapping[str, MaskSpec | MaskMethod] | None,
    suppressed_classes: pl.DataFrame | None,
    streaming: bool,
) -> tuple[pl.LazyFrame, MaskingSecrets]:
    """The release as a lazy query (masked, generalized, suppressed; not shuffled).

    In memory, a class's size is a window over the generalized rows (every row held).
    Streaming, the classes are counted first by one streaming group-by (memory follows
    the number of generalized classes, not of rows), then the rows of classes that are
    large enough are kept by a semi-join: same rows, bounded memory.
    """
    frame = data.lazy()
    quasi = [lk.column for lk in lookups]
    check_columns(frame.collect_schema().names(), quasi, "quasi-identifier")
    secret = MaskingSecrets()
    if direct:
        masked = mask_direct_identifiers(frame, direct)
        frame, secret = masked.data, masked.secrets
    generalized = frame.with_columns(
        _generalize_expr(lk, d.to_list(), levels[lk.column]).alias(lk.column)
        for lk, d in zip(lookups, dictionaries, strict=True)
    )
    failing = (
        suppressed_classes.lazy().select(pl.col(q).cast(pl.String) for q in quasi)
        if quasi and suppressed_classes is not None and suppressed_classes.height
        else None
    )
    if not quasi:
        return (generalized if release_size <= 1 else generalized.head(0)), secret
    if not streaming:
        kept = generalized.filter(pl.len().over(quasi) >= release_size)
        if failing is not None:
            kept = kept.join(failing, on=quasi, how="anti", nulls_equal=True)
        return kept, secret
    classes = (
        generalized.select(quasi)
        .group_by(quasi)
        .agg(pl.len().alias("__size"))
        .filter(pl.col("__size") >= release_size)
        .drop("__size")
    )
    if failing is not None:
        classes = classes.join(failing, on=quasi, how="anti", nulls_equal=True)
    large = classes.collect(engine="streaming")
    return generalized.join(large.lazy(), on=quasi, how="semi", nulls_equal=True), secret


def apply_levels(
    data: pl.LazyFrame | pl.DataFrame,
    *,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    release_size: int,
    direct: Mapping[str, MaskSpec | MaskMethod] | None = None,
    seed: int | None = None,
    suppressed_classes: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, MaskingSecrets]:
    """The release as a DataFrame: masked, generalized, suppressed, shuffled.

    ``suppressed_classes`` (generalized labels of the quasi-identifiers, one row per
    class) are suppressed as well: classes failing a privacy model on a sensitive column.
    Everything is held in memory: for large data, `apply_levels_to_file` streams.
    """
    kept, secret = _release_frame(
        data,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        release_size=release_size,
        direct=direct,
        suppressed_classes=suppressed_classes,
        streaming=False,
    )
    out = kept.collect()
    rng_seed = seed if seed is not None else secrets.randbits(63)
    return out.sample(fraction=1.0, shuffle=True, seed=rng_seed), secret


# Above this many input rows apply_solution streams (apply_levels_to_file).
STREAMING_ROWS = 5_000_000
# Rows per bucket of the out-of-core shuffle: one bucket is held in memory at a time.
SHUFFLE_BUCKET_ROWS = 2_000_000


ROW_INDEX = "__deidweb_row"


def _shuffled(part: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    return part.sample(fraction=1.0, shuffle=True, seed=int(rng.integers(2**62)))


def apply_levels_to_file(
    data: pl.LazyFrame | pl.DataFrame,
    out: str | Path,
    *,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    release_size: int,
    rows: int,
    direct: Mapping[str, MaskSpec | MaskMethod] | None = None,
    seed: int | None = None,
    suppressed_classes: pl.DataFrame | None = None,
    bucket_rows: int = SHUFFLE_BUCKET_ROWS,
) -> tuple[Path, MaskingSecrets]:
    """`apply_levels` + `write_release` in bounded memory, for data of any number of rows.

    The same rows as `apply_levels`, shuffled out of core: the kept rows stream once
    into ``ceil(rows / bucket_rows)`` temporary Parquet buckets, each row to a random
    bucket; then each bucket in turn is read, shuffled and appended to ``out``. Every
    row is equally likely to land anywhere; memory holds one bucket, not the data.
    ``rows`` is the input's row count (an upper bound of the release's).
    """
    import pyarrow.parquet as pq

    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise EngineInputError(f"output format {suffix!r} not supported: use .parquet or .csv")
    kept, secret = _release_frame(
        data,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        release_size=release_size,
        direct=direct,
        suppressed_classes=suppressed_classes,
        streaming=True,
    )
    rng_seed = seed if seed is not None else secrets.randbits(63)
    rng = np.random.default_rng(rng_seed)
    buckets = max(1, -(-rows // max(bucket_rows, 1)))
    schema = kept.collect_schema()
    with tempfile.TemporaryDirectory(prefix=".shuffle-", dir=path.parent) as scratch:
        files = [Path(scratch) / f"{b}.parquet" for b in range(buckets)]
        writers: list[Any] = [None] * buckets
        try:
            # A row's bucket is a keyed hash of its position, not a draw per batch: the same
            # seed gives the same buckets however the streaming engine cuts the batches.
            for batch in kept.with_row_index(ROW_INDEX).collect_batches(
                chunk_size=262_144, maintain_order=True, engine="streaming"
            ):
                if not batch.height:
                    continue
                chosen = (batch.get_column(ROW_INDEX).hash(seed=rng_seed % 2**32) % buckets).alias(
                    "__bucket"
                )
                for (b,), part in (
                    batch.with_columns(chosen)
                    .partition_by("__bucket", as_dict=True, include_key=False)
                    .items()
                ):
                    table = part.to_arrow()
                    if writers[b] is None:
                        writers[b] = pq.ParquetWriter(files[b], table.schema)
                    writers[b].write_table(table)
        finally:
            for writer in writers:
                if writer is not None:
                    writer.close()
        empty = pl.DataFrame(schema=schema)
        # In its rows' original order (whatever order the batches were written in), then
        # shuffled with the next draw of the seeded generator: the same seed, the same file.
        parts = (
            pl.read_parquet(file).sort(ROW_INDEX).drop(ROW_INDEX) if file.exists() else empty
            for file in files
        )
        if suffix == ".csv":
            with path.open("wb") as handle:
                for number, part in enumerate(parts):
                    if number == 0 or part.height:
                        _shuffled(part, rng).write_csv(handle, include_header=number == 0)
        else:
            sink: Any = None
            try:
                for number, part in enumerate(parts):
                    if number and not part.height:
                        continue
                    table = _shuffled(part, rng).to_arrow()
                    if sink is None:
                        sink = pq.ParquetWriter(path, table.schema)
                    sink.write_table(table)
                    del part, table
            finally:
                if sink is not None:
                    sink.close()
    return path, secret


def write_release(frame: pl.DataFrame, out: str | Path) -> Path:
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame.write_parquet(path)
    elif suffix == ".csv":
        frame.write_csv(path)
    else:
        raise EngineInputError(f"output format {suffix!r} not supported: use .parquet or .csv")
    return path


def apply_solution(
    data: pl.LazyFrame | pl.DataFrame,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    criterion: Criterion,
    out: str | Path,
    suppression_limit: float = 1.0,
    direct: Mapping[str, MaskSpec | MaskMethod] | None = None,
    seed: int | None = None,
    sensitive: SensitiveTable | None = None,
    streaming: bool | None = None,
) -> ApplyResult:
    """Write the release for ``levels`` to ``out`` (.parquet or .csv) and re-measure it.

    ``problem`` must be the encoding of the same ``data`` (input rows and marginals).
    ``sensitive``: privacy models on sensitive columns; classes failing them are
    suppressed too (the sensitive columns themselves are released unchanged).
    ``streaming`` (default: above `STREAMING_ROWS` input rows) writes the release in
    bounded memory (`apply_levels_to_file`) instead of holding it whole.
    """
    missing = [lk.column for lk in lookups if lk.column not in levels]
    if missing:
        raise EngineInputError(f"no level given for: {', '.join(missing)}")
    for lk in lookups:
        if not 0 <= levels[lk.column] <= lk.height:
            raise EngineInputError(
                f"level {levels[lk.column]} of {lk.column!r} is outside 0..{lk.height}"
            )
    if Path(out).suffix.lower() not in OUTPUT_FORMATS:
        raise EngineInputError(f"output must end in {' or '.join(OUTPUT_FORMATS)}: {out}")
    release_size = criterion.release_size
    failing = None
    if sensitive is not None:
        release_size = sensitive.release_size(criterion)
        failing = failing_classes(problem, lookups, levels, criterion, sensitive)
    if streaming if streaming is not None else problem.rows >= STREAMING_ROWS:
        path, secret = apply_levels_to_file(
            data,
            out,
            lookups=lookups,
            dictionaries=dictionaries,
            levels=levels,
            release_size=release_size,
            rows=problem.rows,
            direct=direct,
            seed=seed,
            suppressed_classes=failing,
        )
    else:
        frame, secret = apply_levels(
            data,
            lookups=lookups,
            dictionaries=dictionaries,
            levels=levels,
            release_size=release_size,
            direct=direct,
            seed=seed,
            suppressed_classes=failing,
        )
        path = write_release(frame, out)
    measure = measure_release(
        path,
        problem=problem,
        lookups=lookups,
        levels=levels,
        criterion=criterion,
        suppression_limit=suppression_limit,
        sep="," if path.suffix.lower() == ".csv" else None,
        sensitive=sensitive,
    )
    return ApplyResult(path=path, seed_used=seed is not None, measure=measure, secrets=secret)


__all__ = [
    "ApplyResult",
    "apply_levels",
    "apply_levels_to_file",
    "apply_solution",
    "write_release",
]
