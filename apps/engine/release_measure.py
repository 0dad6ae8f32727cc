"""Measuring a written release (METHOD.md Step 7.3 and 8): risk and information loss
re-counted from the file itself, not copied from the search.

:func:`measure_release` re-reads and re-encodes the written file;
:func:`measure_encoded_release` takes the release's class histogram however it was
counted (a local file, or a table on a cluster, apps.engine.rows) and gives every loss
metric from its label counts plus the input's marginals; :func:`meets_models_encoded`
judges the written classes by the sensitive models again; :func:`failing_classes` names
the classes a sensitive model suppresses, for the writer (apps.engine.apply).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from apps.engine.criteria import Criterion, StrictAverageRisk, allowed_suppression
from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.loss import (
    average_class_size,
    discernibility_value,
    generalization_entropy,
    geometric_mean_loss,
    loss_of_dimension,
    precision_value,
    suppression_entropy,
)
from apps.engine.reading import read_table
from apps.engine.risk import RiskProfile, encoded_class_sizes, risk_profile
from apps.engine.search.problem import QuasiLookup, SearchProblem, build_problem
from apps.engine.search.sensitive import SensitiveTable, sensitive_table


@dataclass(frozen=True)
class ReleaseMeasure:
    """Risk and utility of a written release, measured on the file."""

    rows_in: int
    rows_out: int
    suppressed_rows: int
    levels: dict[str, int]
    risk: RiskProfile
    information_loss: dict[str, float]  # every metric, as re-measured
    passes: bool  # criterion and suppression limit met by the file


def measure_release(
    path: str | Path,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    levels: Mapping[str, int],
    criterion: Criterion,
    suppression_limit: float,
    sep: str | None = None,
    sensitive: SensitiveTable | None = None,
) -> ReleaseMeasure:
    """Re-read a written release and measure its risk and information loss (and, with
    ``sensitive``, judge its classes by those models again, against the input's overall
    distribution)."""
    quasi = [lk.column for lk in lookups]
    encoded = encode(read_table(path, sep=sep), quasi)
    with_sensitive = (
        encode(read_table(path, sep=sep), [*quasi, *(c.name for c in sensitive.columns)])
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


def measure_encoded_release(
    encoded: EncodedData,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    levels: Mapping[str, int],
    criterion: Criterion,
    suppression_limit: float,
    sensitive: SensitiveTable | None = None,
    with_sensitive: EncodedData | None = None,
) -> ReleaseMeasure:
    """`measure_release` from the release's class histogram (``encoded``, its
    quasi-identifiers; ``with_sensitive``, the quasi-identifiers then the sensitive
    columns, needed with ``sensitive``), however it was counted: a local file, or a table
    on a cluster (apps.engine.rows)."""
    sizes = encoded_class_sizes(encoded)
    cap = criterion.cap if isinstance(criterion, StrictAverageRisk) else 0.33
    profile = risk_profile(sizes, cap=cap)
    rows_in, rows_out = problem.rows, encoded.rows
    suppressed = rows_in - rows_out
    decoded = encoded.decoded()
    label_counts = []
    for lk in lookups:
        per_label = decoded.group_by(lk.column).agg(pl.col(COUNT_COLUMN).cast(pl.Int64).sum())
        label_counts.append(
            dict(
                zip(per_label[lk.column].to_list(), per_label[COUNT_COLUMN].to_list(), strict=True)
            )
        )
    losses = _release_losses(problem, lookups, levels, label_counts, sizes, suppressed)
    ok = suppressed <= allowed_suppression(rows_in, suppression_limit) and (
        profile.smallest_class >= criterion.release_size or rows_out == 0
    )
    if isinstance(criterion, StrictAverageRisk):
        ok = ok and profile.average_risk <= criterion.threshold
    if sensitive is not None and rows_out:
        if with_sensitive is None:
            raise EngineInputError("measuring privacy models needs the sensitive columns' counts")
        quasi = [lk.column for lk in lookups]
        ok = ok and meets_models_encoded(with_sensitive, quasi, sensitive, criterion)
    return ReleaseMeasure(
        rows_in=rows_in,
        rows_out=rows_out,
        suppressed_rows=suppressed,
        levels=dict(levels),
        risk=profile,
        information_loss=losses,
        passes=ok,
    )


def meets_models_encoded(
    encoded: EncodedData, quasi: Sequence[str], sensitive: SensitiveTable, criterion: Criterion
) -> bool:
    """Every class of a written release meets the sensitive models (its labels taken as
    they are, the sensitive values coded as in the input); ``encoded``: the release's
    quasi-identifiers then the sensitive columns."""
    d = len(quasi)
    counts = encoded.tuples.get_column(COUNT_COLUMN).to_numpy()
    codes = [encoded.tuples.get_column(q).to_numpy() for q in quasi]
    lookups = [
        QuasiLookup.from_maps(q, [np.arange(len(encoded.dictionaries[j]))])
        for j, q in enumerate(quasi)
    ]
    released = build_problem(quasi, codes, counts, lookups)
    coded = []
    for j, column in enumerate(sensitive.columns):
        index = {v: i for i, v in enumerate(column.values)}
        values = encoded.dictionaries[d + j].to_list()
        unknown = [v for v in values if v not in index]
        if unknown:
            raise EngineInputError(
                f"the release has values of {column.name!r} the input had not: {unknown[:3]}"
            )
        recode = np.array([index[v] for v in values], dtype=np.int64)
        coded.append(recode[encoded.tuples.get_column(column.name).to_numpy()])
    table = sensitive_table(released, [*codes, *coded], counts, sensitive.columns, sensitive.models)
    verdict, _ = table.judge_node([0] * d, sensitive.release_size(criterion))
    return bool((verdict.status == 0).all())


def _release_losses(
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    levels: Mapping[str, int],
    label_counts: list[dict[Any, int]],
    sizes: Any,
    suppressed: int,
) -> dict[str, float]:
    """Every metric of loss.py from the release's label counts (plus input marginals)."""
    n = problem.rows
    loss_dims, entropy = [], 0.0
    for j, lk in enumerate(lookups):
        level = levels[lk.column]
        labels = lk.labels[level]
        leaves_of = {lab: int(lk.leaves[level][g]) for g, lab in enumerate(labels)}
        released = label_counts[j]
        # A value blanked by local suppression (not a label of the level) stands for the
        # whole domain, like a suppressed cell (apps.engine.techniques.local_suppression).
        weighted = (
            sum(c * leaves_of.get(lab, lk.domain_size) for lab, c in released.items())
            + suppressed * lk.domain_size
        )
        loss_dims.append(loss_of_dimension(weighted, n, lk.domain_size))
        freq = problem.frequencies[j]
        entropy += generalization_entropy(freq[0], freq[level], lk.maps[level])
        in_suppressed = np.array(
            [int(freq[level][g]) - released.get(lab, 0) for g, lab in enumerate(labels)],
            dtype=np.int64,
        )
        entropy += suppression_entropy(in_suppressed)
    heights = [lk.height for lk in lookups]
    kept = np.asarray(sizes, dtype=np.int64)
    return {
        "loss": geometric_mean_loss(loss_dims),
        "entropy": entropy,
        "precision": precision_value([levels[lk.column] for lk in lookups], heights, n, suppressed),
        "discernibility": float(discernibility_value(kept, suppressed, n)),
        "aecs": average_class_size(n, len(kept)) if n else 0.0,
    }


def failing_classes(
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    levels: Mapping[str, int],
    criterion: Criterion,
    sensitive: SensitiveTable,
) -> pl.DataFrame:
    """Generalized labels of the classes that fail a sensitive model at ``levels``."""
    node = [levels[lk.column] for lk in lookups]
    suppressed = sensitive.tuple_suppressed(problem, node, criterion)
    columns = {}
    for j, lk in enumerate(lookups):
        codes = lk.maps[node[j]][problem.codes[j][suppressed]]
        labels = lk.labels[node[j]]
        columns[lk.column] = pl.Series(lk.column, [labels[int(c)] for c in codes], dtype=pl.String)
    return pl.DataFrame(columns).unique()


__all__ = [
    "ReleaseMeasure",
    "failing_classes",
    "measure_encoded_release",
    "measure_release",
    "meets_models_encoded",
]
