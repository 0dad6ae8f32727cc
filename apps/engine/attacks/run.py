"""Running the attacks on a release: sampling, the control, the three criteria, the report."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from apps.engine.attacks import measures
from apps.engine.attacks.model import (
    EXACT,
    INFERENCE,
    LINKABILITY,
    METHOD,
    METHOD_VERSION,
    NEAREST,
    QUESTIONS,
    SINGLING_OUT,
    AttackReport,
    AttackResult,
)
from apps.engine.attacks.neighbours import Candidates, candidates
from apps.engine.attacks.stats import difference, rate
from apps.engine.attacks.view import (
    BoolArray,
    FloatArray,
    IntArray,
    QuasiIdentifier,
    Released,
    Seen,
)
from apps.engine.errors import EngineInputError, preview

DESIGN_ROW_DERIVED = (
    "Two samples of people are drawn at random from the original data: an attack sample "
    "and a held-back control sample. Each person of the attack sample is attacked on the "
    "release as it is, their own record included. Each person of the control sample is "
    "attacked on the release as it would be had they not been in the data: the same "
    "generalization and the same suppressed classes, with their own record taken out. "
    "The control therefore shows what an intruder achieves on people whose records did "
    "not shape the release (from the patterns the release shares with everyone); the gap "
    "between attack and control is what the release gives away about the people in it. "
    "A control person has no record of their own left to link to, so the linkability "
    "control is zero by design."
)
DESIGN_SYNTHETIC = (
    "The original data was split before the model was fitted: the model learnt from the "
    "training part only, and a control part was held back. People of the training part "
    "(attack) and of the control part (control) are attacked on the synthetic records the "
    "same way. The control shows what an intruder achieves on people the model never saw; "
    "the gap between attack and control is what the synthetic data gives away about the "
    "people it was learnt from. A synthetic record belongs to no one: a person's 'own "
    "record' is a synthetic record identical to them on every column (a copy)."
)


@dataclass(frozen=True)
class Sample:
    """Attack targets first, then control targets, as the release codes them."""

    rows: pl.DataFrame
    seen: Seen
    own: IntArray  # each target's own released tuple, or -1
    own_records: IntArray  # records of the target in that tuple (1; copies for synthetic)
    own_values: dict[str, IntArray]  # the sensitive value of the own record, coded
    left_out: BoolArray  # the own record is taken out (control of a row-derived release)
    attack: int  # targets of the attack sample; the rest are control targets
    positions: IntArray  # where each target's row is (original; synthetic: training/control)


def check_columns(frame: pl.DataFrame | pl.LazyFrame, columns: Sequence[str], what: str) -> None:
    names = frame.lazy().collect_schema().names()
    missing = [c for c in columns if c not in names]
    if missing:
        raise EngineInputError(f"the {what} has no column {preview(missing)}")


def rows_at(frame: pl.DataFrame | pl.LazyFrame, picks: IntArray) -> pl.DataFrame:
    """The rows at ``picks``, in that order (one streaming pass for a lazy frame)."""
    order = pl.DataFrame({"__row": picks.astype(np.uint32), "__order": np.arange(picks.size)})
    return (
        frame.lazy()
        .with_row_index("__row")
        .join(order.lazy(), on="__row")
        .collect(engine="streaming")
        .sort("__order")
        .drop("__row", "__order")
    )


def height(frame: pl.DataFrame | pl.LazyFrame) -> int:
    return (
        frame.height
        if isinstance(frame, pl.DataFrame)
        else int(frame.select(pl.len()).collect().item())
    )


def own_tuples(release: Released, seen: Seen) -> IntArray:
    index = release.index
    return np.array(
        [
            index.get(release.key(seen.codes[t], seen.numbers[t]), -1)
            for t in range(seen.codes.shape[0])
        ],
        dtype=np.int64,
    )


def check_shuffled(release: Released, sample: Sample, sensitive: Sequence[str]) -> None:
    """A shuffled release must be the image of the original under the labels: each sampled
    person's class holds at least the sampled people of it, with their sensitive values."""
    if release.wild.any():
        raise EngineInputError(
            "the release has suppressed cells ('*') that its generalization does not produce: "
            "attack it row by row (aligned=True, before the rows are shuffled)"
        )
    needed = Counter(int(u) for u in sample.own if u >= 0)
    short = [u for u, n in needed.items() if release.counts[u] < n]
    for s in sensitive:
        pairs = Counter(
            (int(u), int(v))
            for u, v in zip(sample.own, sample.own_values[s], strict=True)
            if u >= 0
        )
        counts = release.sensitive[s].counts
        short += [u for (u, v), n in pairs.items() if v < 0 or counts[u, v] < n]
    if short:
        raise EngineInputError(
            f"the release is not this original under the given generalization: {len(set(short))} "
            "released class(es) hold fewer records than the original people mapped to them"
        )


def _score(
    release: Released,
    sample: Sample,
    found: list[Candidates],
    sensitive: Sequence[str],
    rng: np.random.Generator,
) -> list[AttackResult]:
    a = sample.attack
    n = sample.own.size - a

    def result(criterion: str, variant: str, scores: FloatArray, naive: FloatArray) -> AttackResult:
        attack, control = rate(float(scores[:a].sum()), a), rate(float(scores[a:].sum()), n)
        return AttackResult(
            criterion=criterion,
            variant=variant,
            question=QUESTIONS[criterion],
            attacks=a,
            attack=attack,
            control=control,
            baseline=rate(float(naive.sum()), naive.size),
            advantage=difference(attack, control),
        )

    naive_links = np.where(sample.own[:a] >= 0, sample.own_records[:a], 0) / max(release.rows, 1)
    out = [
        result(SINGLING_OUT, EXACT, measures.isolated(found), _naive_isolation(release, a, rng)),
        result(
            LINKABILITY,
            EXACT,
            measures.linked(found, sample.own, _kept(sample), exact_only=True),
            naive_links,
        ),
        result(
            LINKABILITY,
            NEAREST,
            measures.linked(found, sample.own, _kept(sample), exact_only=False),
            naive_links,
        ),
    ]
    for s in sensitive:
        coding = release.sensitive[s]
        truth = coding.code(sample.rows.get_column(s))
        overall, naive = measures.guessed_by_mode(coding, truth[:a])
        scores = measures.inferred(
            found,
            coding,
            truth,
            sample.own,
            sample.own_values[s],
            sample.left_out.tolist(),
            overall,
        )
        out.append(result(INFERENCE, s, scores, naive))
    return out


def _kept(sample: Sample) -> IntArray:
    """The target's own records still in the release once the left-out ones are taken out."""
    return np.where(sample.left_out, np.maximum(sample.own_records - 1, 0), sample.own_records)


def _naive_isolation(release: Released, draws: int, rng: np.random.Generator) -> FloatArray:
    """A naive intruder describes someone with values drawn from the release's own
    distribution of each quasi-identifier, independently (no knowledge of a person); the
    score is whether the description isolates one record."""
    if release.tuples == 0 or draws == 0:
        return np.zeros(draws)
    weights = release.counts / release.counts.sum()
    codes = np.empty((draws, release.codes.shape[1]), dtype=np.int64)
    for j in range(release.codes.shape[1]):
        usable = ~release.wild[:, j]
        w = np.where(usable, weights, 0.0)
        picked = rng.choice(release.tuples, size=draws, p=w / w.sum()) if w.sum() else None
        codes[:, j] = -1 if picked is None else release.codes[picked, j]
    numbers = np.empty((draws, release.numbers.shape[1]))
    for j in range(release.numbers.shape[1]):
        numbers[:, j] = release.numbers[rng.choice(release.tuples, size=draws, p=weights), j]
    nobody = np.full(draws, -1, dtype=np.int64)
    found = candidates(release, Seen(codes, numbers), own=nobody, leave_out=nobody >= 0)
    return measures.isolated(found)


def build_report(
    kind: str,
    design: str,
    seed: int,
    original_rows: int,
    release: Released,
    sample: Sample,
    quasi: Sequence[QuasiIdentifier],
    sensitive: Sequence[str],
    rng: np.random.Generator,
) -> AttackReport:
    found = candidates(release, sample.seen, own=sample.own, leave_out=sample.left_out)
    return AttackReport(
        method=METHOD,
        method_version=METHOD_VERSION,
        seed=seed,
        release_kind=kind,
        design=design,
        original_rows=original_rows,
        release_rows=release.rows,
        released_tuples=release.tuples,
        targets=sample.attack,
        quasi=tuple(q.column for q in quasi),
        sensitive=tuple(sensitive),
        results=tuple(_score(release, sample, found, sensitive, rng)),
        attack_rows=tuple(int(p) for p in sample.positions[: sample.attack]),
        control_rows=tuple(int(p) for p in sample.positions[sample.attack :]),
    )


def check_inputs(quasi: Sequence[QuasiIdentifier], sensitive: Sequence[str], targets: int) -> None:
    names = [q.column for q in quasi]
    if not names:
        raise EngineInputError("the attacks need at least one quasi-identifier")
    if len(set(names)) != len(names):
        raise EngineInputError("a quasi-identifier is named twice")
    both = sorted(set(names) & set(sensitive))
    if both:
        raise EngineInputError(f"{preview(both)} cannot be both quasi-identifier and sensitive")
    if targets < 1:
        raise EngineInputError("the attacks need at least one target")


def new_seed(seed: int | None) -> int:
    """The seed to use and report: the caller's, or a fresh random one."""
    return seed if seed is not None else secrets.randbits(63)
