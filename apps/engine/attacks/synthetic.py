"""Attacking synthetic data with the same attacks as every other release."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from apps.engine.attacks.model import DEFAULT_TARGETS, AttackReport
from apps.engine.attacks.run import (
    DESIGN_SYNTHETIC,
    Sample,
    build_report,
    check_columns,
    check_inputs,
    new_seed,
    own_tuples,
)
from apps.engine.attacks.view import MISSING, IntArray, QuasiIdentifier, Released, read_release, see
from apps.engine.errors import EngineInputError

#: Numbers are compared by quantile bin of the training data (the generator's resolution:
#: it draws numbers uniformly inside such bins), so a synthetic 41.7 can match a person
#: aged 42.
DEFAULT_BINS = 20


def _binned(
    frames: Sequence[pl.DataFrame], reference: pl.DataFrame, column: str, bins: int
) -> list[pl.DataFrame]:
    series = reference.get_column(column)
    if not series.dtype.is_numeric() or series.drop_nulls().n_unique() <= bins:
        return list(frames)
    values = series.cast(pl.Float64).to_numpy()
    edges = np.unique(np.nanquantile(values, np.linspace(0, 1, bins + 1)))
    labels = [f"{edges[i]:g} to {edges[i + 1]:g}" for i in range(len(edges) - 1)]
    out = []
    for frame in frames:
        numbers = frame.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()
        coded = np.clip(np.searchsorted(edges[1:-1], numbers, side="right"), 0, len(labels) - 1)
        text = [None if np.isnan(x) else labels[c] for x, c in zip(numbers, coded, strict=True)]
        out.append(frame.with_columns(pl.Series(column, text, dtype=pl.String)))
    return out


def _keys(
    frame: pl.DataFrame, known: Sequence[str], release: Released, sensitive: Sequence[str]
) -> pl.DataFrame:
    return frame.select(
        [pl.col(c).cast(pl.String).fill_null(MISSING) for c in known]
        + [pl.Series(s, release.sensitive[s].code(frame.get_column(s))) for s in sensitive]
    )


def _copies(
    people: pl.DataFrame,
    synthetic: pl.DataFrame,
    known: Sequence[str],
    release: Released,
    sensitive: Sequence[str],
) -> IntArray:
    """Synthetic records equal to each person on the known columns (numbers by bin) and
    on the sensitive ones (as the inference attack codes them)."""
    on = [*known, *sensitive]
    counted = _keys(synthetic, known, release, sensitive).group_by(on).agg(pl.len().alias("__n"))
    found = (
        _keys(people, known, release, sensitive)
        .with_row_index("__t")
        .join(counted, on=on, how="left", nulls_equal=True)
        .sort("__t")
    )
    out: IntArray = found.get_column("__n").fill_null(0).to_numpy().astype(np.int64)
    return out


def attack_synthetic(
    training: pl.DataFrame,
    control: pl.DataFrame,
    synthetic: pl.DataFrame,
    *,
    known: Sequence[str],
    sensitive: Sequence[str],
    seed: int | None = None,
    targets: int = DEFAULT_TARGETS,
    bins: int = DEFAULT_BINS,
) -> AttackReport:
    """The attacks of `attack_release` on synthetic records: the attack sample from the
    rows the generator learnt from, the control sample from the rows held back.

    ``known``: the columns the intruder holds about a person (quasi-identifiers);
    ``sensitive``: the columns to infer.  Numbers are compared by quantile bin of the
    training data (``bins``)."""
    quasi = [QuasiIdentifier(c) for c in known]
    check_inputs(quasi, sensitive, targets)
    for frame, what in (
        (training, "training data"),
        (control, "control data"),
        (synthetic, "synthetic data"),
    ):
        check_columns(frame, [*known, *sensitive], what)
    per_sample = min(targets, training.height, control.height)
    if per_sample < 1 or synthetic.height == 0:
        raise EngineInputError("synthetic data: no training, control or synthetic rows to attack")
    used = new_seed(seed)
    rng = np.random.default_rng(used)
    frames = [training, control, synthetic]
    for column in known:
        frames = _binned(frames, training, column, bins)
    training, control, synthetic = frames
    release = read_release(synthetic, quasi, sensitive)
    picks = np.concatenate(
        [
            np.sort(rng.choice(training.height, per_sample, replace=False)),
            np.sort(rng.choice(control.height, per_sample, replace=False)),
        ]
    ).astype(np.int64)
    people = pl.concat(
        [training[picks[:per_sample]], control[picks[per_sample:]]], how="vertical_relaxed"
    )
    seen = see(people, quasi, release, mapped=True)
    own = own_tuples(release, seen)
    own_values = {s: release.sensitive[s].code(people.get_column(s)) for s in sensitive}
    # A person's own records: synthetic records equal to them on every column (copies).
    copies = _copies(people, synthetic, known, release, sensitive)
    sample = Sample(
        rows=people,
        seen=seen,
        own=own,
        own_records=np.where(own >= 0, copies, 0),
        own_values=own_values,
        left_out=np.zeros(2 * per_sample, dtype=bool),
        attack=per_sample,
        positions=picks,
    )
    rows = training.height + control.height
    return build_report(
        "synthetic", DESIGN_SYNTHETIC, used, rows, release, sample, quasi, sensitive, rng
    )
