"""A release through any engine: the plan, the pass, and its re-measurement.

`release_solution` is `apps.engine.apply.apply_solution` for a `RowEngine`: the same
checks, the same suppression of classes failing a privacy model, then the engine's
release pass, then the figures re-measured from the written release's own histogram
(counted by the same engine, next to the data) with `measure_encoded_release`.

Techniques on a cluster table: the row-local ones (rounding, top/bottom coding, keyed
date shifting) change each row from its own values and a key, so they run batch by
batch next to the data. The others depend on the whole column or on other records and
are refused there with the reason (`cluster_refusal`); they still run on one machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.attribute import DISTINCT, SIZE, SensitiveDiversity
from apps.engine.criteria import Criterion
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.masking import MaskMethod, MaskSpec
from apps.engine.reading import check_columns
from apps.engine.release_measure import (
    ReleaseMeasure,
    failing_classes,
    measure_encoded_release,
)
from apps.engine.rows.model import Progress, ReleasePlan, RowEngine, TableSource, WrittenRelease
from apps.engine.search.problem import SearchProblem
from apps.engine.search.sensitive import SensitiveTable
from apps.engine.techniques.date_shift import DateShiftParams
from apps.engine.techniques.local_suppression import LocalSuppressionParams
from apps.engine.techniques.microaggregation import MicroaggregationParams
from apps.engine.techniques.noise import NoiseParams
from apps.engine.techniques.pram import PramParams
from apps.engine.techniques.rank_swap import RankSwapParams
from apps.engine.techniques.rounding import RoundingParams, TopBottomParams
from apps.engine.techniques.synthetic import SyntheticParams

#: Techniques a cluster runs batch by batch: each row from its own values (and a key).
ROW_LOCAL_TECHNIQUES: tuple[type, ...] = (RoundingParams, TopBottomParams, DateShiftParams)

#: Why the others are refused on a cluster table (they need the whole data at once).
CLUSTER_REFUSALS: dict[type, str] = {
    LocalSuppressionParams: (
        "local suppression chooses which single values to blank by solving one problem "
        "over every record (an integer program), which needs the whole data in one place"
    ),
    MicroaggregationParams: (
        "microaggregation (MDAV) builds its groups of similar records from the whole data; "
        "groups formed within parts of a cluster would not be the same groups"
    ),
    RankSwapParams: (
        "rank swapping exchanges values between records of close rank over the whole column"
    ),
    SyntheticParams: "synthetic data learns one model from every record",
    NoiseParams: (
        "noise addition restores each column's exact mean and variance, which are those "
        "of the whole column"
    ),
    PramParams: (
        "PRAM's transition matrix keeps the whole column's category frequencies and its "
        "draws must stay unseeded per release"
    ),
}


def cluster_refusal(params: object) -> str | None:
    """Why a technique cannot run on a cluster table, or None when it can."""
    if isinstance(params, ROW_LOCAL_TECHNIQUES):
        return None
    reason = CLUSTER_REFUSALS.get(type(params), "it is not known to run batch by batch")
    return (
        f"{type(params).__name__.removesuffix('Params')} cannot run on a cluster table: "
        f"{reason}. Run it on an uploaded file, or choose a row-local technique "
        "(rounding, top/bottom coding, date shifting)."
    )


def check_cluster_techniques(techniques: Sequence[object]) -> None:
    for params in techniques:
        refusal = cluster_refusal(params)
        if refusal:
            raise EngineInputError(refusal)


def l_diversity_from_histogram(
    encoded: EncodedData, quasi: Sequence[str], sensitive: str
) -> SensitiveDiversity:
    """`apps.engine.attribute.l_diversity` of one sensitive column from the histogram over
    ``[*quasi, sensitive]`` (distinct pairs with their rows), as a cluster counts it."""
    pairs = encoded.decoded().lazy().rename({COUNT_COLUMN: SIZE})
    aggregates = (pl.col(SIZE).sum().alias(SIZE), pl.len().alias(DISTINCT))
    per_class = (
        pairs.select(*aggregates).filter(pl.col(SIZE) > 0)
        if not quasi
        else pairs.group_by(list(quasi)).agg(*aggregates)
    )
    table = (
        per_class.group_by(SIZE)
        .agg(
            pl.len().alias("classes"),
            (pl.col(DISTINCT) == 1).sum().alias("homogeneous"),
            pl.col(DISTINCT).min().alias("smallest_l"),
        )
        .rename({SIZE: "size"})
        .collect()
    )
    return SensitiveDiversity.from_table(sensitive, table)


def check_l_diversity_columns(
    names: Sequence[str], quasi: Sequence[str], sensitive: Sequence[str]
) -> None:
    check_columns(names, quasi, "quasi-identifier")
    check_columns(names, sensitive, "sensitive")
    both = sorted(set(quasi) & set(sensitive))
    if both:
        raise EngineInputError(f"column(s) both quasi-identifier and sensitive: {', '.join(both)}")


def release_plan(
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    criterion: Criterion,
    direct: Mapping[str, MaskSpec | MaskMethod] | None = None,
    keys: Mapping[str, bytes] | None = None,
    techniques: Sequence[object] = (),
    sensitive: SensitiveTable | None = None,
    seed: int | None = None,
) -> ReleasePlan:
    """The plan of `apply_solution`: checked levels, release size, failing classes."""
    missing = [lk.column for lk in lookups if lk.column not in levels]
    if missing:
        raise EngineInputError(f"no level given for: {', '.join(missing)}")
    for lk in lookups:
        if not 0 <= levels[lk.column] <= lk.height:
            raise EngineInputError(
                f"level {levels[lk.column]} of {lk.column!r} is outside 0..{lk.height}"
            )
    release_size = criterion.release_size
    failing = None
    if sensitive is not None:
        release_size = sensitive.release_size(criterion)
        failing = failing_classes(problem, lookups, levels, criterion, sensitive)
    return ReleasePlan(
        lookups=tuple(lookups),
        dictionaries=tuple(dictionaries[: len(lookups)]),
        levels=dict(levels),
        release_size=release_size,
        rows=problem.rows,
        direct=dict(direct or {}),
        keys=dict(keys or {}),
        techniques=tuple(techniques),
        suppressed_classes=failing,
        seed=seed,
    )


@dataclass(frozen=True)
class RowsRelease:
    written: WrittenRelease
    measure: ReleaseMeasure


def measure_written(
    engine: RowEngine,
    written: WrittenRelease,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    levels: Mapping[str, int],
    criterion: Criterion,
    suppression_limit: float,
    sensitive: SensitiveTable | None = None,
    progress: Progress | None = None,
) -> ReleaseMeasure:
    """The written release's figures, from its histogram counted by ``engine``."""
    quasi = [lk.column for lk in lookups]
    source = _written_source(written)
    encoded = engine.histogram(source, quasi, progress=progress)
    with_sensitive = (
        engine.histogram(source, [*quasi, *(c.name for c in sensitive.columns)])
        if sensitive is not None and encoded.rows
        else None
    )
    return measure_encoded_release(
        encoded,
        problem=problem,
        lookups=lookups,
        levels=levels,
        criterion=criterion,
        suppression_limit=suppression_limit,
        sensitive=sensitive,
        with_sensitive=with_sensitive,
    )


def _written_source(written: WrittenRelease) -> TableSource:
    if written.location.lower().endswith(".csv"):
        return TableSource(path=written.location, format="csv", sep=",")
    return TableSource(path=written.location, format="parquet")


def release_solution(
    engine: RowEngine,
    source: TableSource,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: Mapping[str, int],
    criterion: Criterion,
    out: str,
    suppression_limit: float = 1.0,
    direct: Mapping[str, MaskSpec | MaskMethod] | None = None,
    keys: Mapping[str, bytes] | None = None,
    techniques: Sequence[object] = (),
    sensitive: SensitiveTable | None = None,
    seed: int | None = None,
    progress: Progress | None = None,
) -> RowsRelease:
    """Write the release for ``levels`` with ``engine`` and re-measure it there.

    ``problem`` is the histogram of the same ``source`` (input rows and marginals).
    Progress: the release pass is 0–80 %, the re-measurement 80–100 %.
    """
    plan = release_plan(
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        criterion=criterion,
        direct=direct,
        keys=keys,
        techniques=techniques,
        sensitive=sensitive,
        seed=seed,
    )
    written = engine.write_release(source, plan, out, progress=_scaled(progress, 0.0, 0.8))
    measure = measure_written(
        engine,
        written,
        problem=problem,
        lookups=lookups,
        levels=levels,
        criterion=criterion,
        suppression_limit=suppression_limit,
        sensitive=sensitive,
        progress=_scaled(progress, 0.8, 1.0),
    )
    return RowsRelease(written=written, measure=measure)


def _scaled(progress: Progress | None, start: float, end: float) -> Progress | None:
    if progress is None:
        return None

    def scaled(share: float, message: str) -> None:
        progress(start + (end - start) * share, message)

    return scaled
