"""Attacking a release derived row by row from the original (Steps 7-8)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from apps.engine.attacks.model import DEFAULT_TARGETS, AttackReport
from apps.engine.attacks.run import (
    DESIGN_ROW_DERIVED,
    Sample,
    build_report,
    check_columns,
    check_inputs,
    check_shuffled,
    height,
    new_seed,
    own_tuples,
    rows_at,
)
from apps.engine.attacks.view import QuasiIdentifier, read_release, see
from apps.engine.errors import EngineInputError


def attack_release(
    original: pl.DataFrame | pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    *,
    quasi: Sequence[QuasiIdentifier],
    sensitive: Sequence[str] = (),
    seed: int | None = None,
    targets: int = DEFAULT_TARGETS,
    aligned: bool = False,
    blank_is_wildcard: bool = False,
) -> AttackReport:
    """Singling out, linkability (exact and nearest match) and inference on ``released``.

    ``released`` is the release as written (generalized labels, ``*`` for a quasi-identifier
    generalized to the top, suppressed rows removed, direct identifiers masked, rows
    shuffled); each quasi-identifier's ``labels`` map an original value to its released
    label.  ``aligned``: released row i comes from original row i (a Step 7 technique's
    output before the shuffle: perturbed values, blanked cells); then nothing is removed.
    ``targets`` people are drawn for the attack sample and as many for the control
    (at most half the rows each); ``seed`` fixes the draw (None: a fresh one, reported).
    """
    check_inputs(quasi, sensitive, targets)
    names = [q.column for q in quasi]
    check_columns(original, [*names, *sensitive], "original data")
    used = new_seed(seed)
    rng = np.random.default_rng(used)
    release = read_release(released, quasi, sensitive, blank_is_wildcard=blank_is_wildcard)
    rows = height(original)
    if aligned and release.rows != rows:
        raise EngineInputError(
            f"a release attacked row by row must keep every row: {release.rows:,} released "
            f"rows for {rows:,} original ones"
        )
    per_sample = min(targets, rows // 2)
    if per_sample < 1:
        raise EngineInputError(f"{rows} rows are too few for an attack and a control sample")
    picks = rng.choice(rows, size=2 * per_sample, replace=False).astype(np.int64)
    people = rows_at(original, picks)
    seen = see(people, quasi, release, mapped=True)
    if aligned:
        theirs = rows_at(released, picks)
        own = own_tuples(release, see(theirs, quasi, release, mapped=False))
        own_values = {s: release.sensitive[s].code(theirs.get_column(s)) for s in sensitive}
    else:
        own = own_tuples(release, seen)
        own_values = {s: release.sensitive[s].code(people.get_column(s)) for s in sensitive}
    sample = Sample(
        rows=people,
        seen=seen,
        own=own,
        own_records=(own >= 0).astype(np.int64),
        own_values=own_values,
        left_out=np.arange(2 * per_sample) >= per_sample,
        attack=per_sample,
        positions=picks,
    )
    if not aligned:
        check_shuffled(release, sample, sensitive)
    kind = "row-derived, row by row" if aligned else "row-derived, shuffled"
    return build_report(
        kind, DESIGN_ROW_DERIVED, used, rows, release, sample, quasi, sensitive, rng
    )
