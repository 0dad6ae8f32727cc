"""Synthetic data as an option for a sensitive release (PDPC 3.10).

`synthesize` holds back a control share of the rows, fits the Chow-Liu tree model
(chow_liu.py) on the rest, draws the synthetic records and measures them
(privacy.py): marginal and pairwise utility against the training rows, distance to
closest record, and the attacks every release gets (apps.engine.attacks): singling out,
linkability and inference, on training people against held-back control people.  The
synthetic records correspond to no real person row by row, so the release has no
equivalence classes to count; its risk figures are the attack results.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from apps.engine.attacks import attack_synthetic
from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import generator, require_columns
from apps.engine.techniques.synthetic.chow_liu import ChowLiuModel, fit, sample
from apps.engine.techniques.synthetic.privacy import (
    SyntheticPrivacy,
    SyntheticUtility,
    distance_to_closest,
    exact_copies,
    utility,
)


@dataclass(frozen=True)
class SyntheticParams:
    columns: tuple[str, ...] = ()  # default: every column
    rows: int | None = None  # default: as many as the training rows
    bins: int = 20  # quantile bins per numeric variable
    control_share: float = 0.2  # held back, never seen by the generator
    secret: str | None = None  # the inference attack's target (default: the last column)
    targets: int = 500  # attack targets drawn from each of training and control
    seed: int | None = None  # never reported (the attacks report a seed of their own)


@dataclass(frozen=True)
class SyntheticResult:
    data: pl.DataFrame
    params: SyntheticParams
    tree: tuple[tuple[str, str | None], ...]  # (variable, the variable it depends on)
    utility: SyntheticUtility
    privacy: SyntheticPrivacy


def synthesize(data: pl.DataFrame, params: SyntheticParams) -> SyntheticResult:
    """Fit on (1 − control_share) of the rows, draw, and measure utility and privacy."""
    columns = require_columns(data, params.columns or data.columns, "synthesized")
    if not 0.0 < params.control_share < 1.0:
        raise EngineInputError("synthetic data: the control share must be between 0 and 1")
    secret = params.secret or columns[-1]
    if secret not in columns:
        raise EngineInputError(f"synthetic data: the secret {secret!r} is not among the columns")
    if len(columns) < 2:
        raise EngineInputError(
            "synthetic data: the privacy attacks need a column besides the secret "
            "(what an intruder would know of a person)"
        )
    rng = generator(params.seed)
    shuffled = data.select(columns).sample(
        fraction=1.0, shuffle=True, seed=int(rng.integers(2**62))
    )
    n_control = int(round(params.control_share * data.height))
    if n_control < 1 or data.height - n_control < 2:
        raise EngineInputError(f"synthetic data: {data.height} rows are too few to hold some back")
    control, training = shuffled.head(n_control), shuffled.slice(n_control)
    model: ChowLiuModel = fit(training, columns, params.bins)
    synthetic = sample(model, params.rows or training.height, rng)
    probe = synthetic.sample(min(synthetic.height, 2000), seed=int(rng.integers(2**62)))
    peers = training.sample(control.height, seed=int(rng.integers(2**62)))
    closer, _ = distance_to_closest(peers, control, probe, columns)
    copies = (
        exact_copies(peers, synthetic, columns) / synthetic.height,
        exact_copies(control, synthetic, columns) / synthetic.height,
    )
    # Seeded runs (tests, previews) give the same attacks; a release draws a fresh seed so
    # the reported attack seed says nothing of the generator's.
    attack_seed = int(rng.integers(2**62)) if params.seed is not None else None
    attacks = attack_synthetic(
        training,
        control,
        synthetic,
        known=[c for c in columns if c != secret],
        sensitive=[secret],
        seed=attack_seed,
        targets=params.targets,
        bins=params.bins,
    )
    names = [v.name for v in model.variables]
    return SyntheticResult(
        data=synthetic,
        params=params,
        tree=tuple(
            (names[j], None if p is None else names[p]) for j, p in enumerate(model.parents)
        ),
        utility=utility(training, synthetic, columns),
        privacy=SyntheticPrivacy(
            closer, exact_copies(training, synthetic, columns), copies[0], copies[1], attacks
        ),
    )


__all__ = ["SyntheticParams", "SyntheticResult", "synthesize"]
