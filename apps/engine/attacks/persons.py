"""Attack tests on a release of person-keyed data, counted in persons (issues 25 and 28).

The adversary is LONGITUDINAL.md's (§2.2): they know a target's person-level values and at
most ``p`` of the target's events (``p``, the release's adversary power; "all": every
event), seen through the release's generalization (the recipient can read it off the
release).  A released person *matches* when they share the person-level values and hold
every known event (the superset rule: the adversary does not know how many events the
person has).  Every figure counts persons, never rows: a person with three visits is one
target and one released person.

For each target the adversary's knowledge is each set of ``s = min(p, |F_i|)`` of the
target's distinct events (features, set semantics as in Step 4), all of them when there
are at most :data:`MAX_KNOWN_SETS`, else that many drawn at random (seeded); a target's
score is the mean over those sets, i.e. the chance that the attack succeeds when the
adversary knows a set drawn at random among them.

* **Singling out**: the known facts match exactly one released person.
* **Linkability**: the adversary links the target to a released person (a pseudonym).
  *Exact match*: a pick among the persons matching every known fact (none: no link);
  *nearest match*: a pick among the persons of the nearest person-level classes (fewest
  disagreeing values) holding the most known events, as an intruder would do when an
  event or a person was suppressed.  Success when the pick is the target (1/m among m).
* **Inference**: the sensitive value (person-level, or event-level such as a diagnosis)
  most often held by the candidates (in persons) is one the target holds.

Attack, control and baseline follow ``apps.engine.attacks`` (its module docstring): the
control is a held-back sample of persons attacked on the release as it would be had they
not been in it (their own released person taken out: leave-one-out, since the release was
computed from everyone); the baseline is a naive adversary (a description drawn from the
release's own distributions; a released person picked at random; the release's most
frequent sensitive value).  Rates carry 95 % Wilson intervals (stats.py).

The released data is given with each released person's *true* id (the pseudonym is a
one-to-one keyed function of it: linking to the right pseudonym is linking to the right
id).  Matching is compiled (person_kernel.py) and indexed by (class, feature).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.attacks.model import (
    DEFAULT_TARGETS,
    EXACT,
    INFERENCE,
    LINKABILITY,
    METHOD,
    NEAREST,
    SINGLING_OUT,
    AttackReportData,
    AttackResult,
)
from apps.engine.attacks.person_index import (
    MAX_KNOWN_SETS,
    PERSON_ID,
    Coded,
    code,
    codes,
    known_sets,
    run,
    values,
)
from apps.engine.attacks.stats import difference, rate
from apps.engine.errors import EngineInputError, preview
from apps.engine.longitudinal.data import LongitudinalData, from_long_table
from apps.engine.longitudinal.formulas import ALL, Power

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: Bumped whenever a change can move a figure (printed beside the seed).
PERSON_METHOD_VERSION = "1.0-persons (2026-11)"

PERSON_QUESTIONS = {
    SINGLING_OUT: (
        "Singling out: do a person's person-level values and the events the adversary "
        "knows of them match exactly one released person?"
    ),
    LINKABILITY: (
        "Linkability: holding a person's original person-level values and some of their "
        "events, does the adversary link them to their own pseudonym?"
    ),
    INFERENCE: (
        "Inference: from the released records of the persons matching what the adversary "
        "knows, is the value they hold most often one the person holds?"
    ),
}

DESIGN_PERSONS = (
    "Counted in persons: each target is a person, however many events they have. Two "
    "samples of persons are drawn at random from the original data: an attack sample and "
    "a held-back control sample. The adversary knows a target's person-level values and "
    "up to {power} of their events (every set of that many, or {sets} drawn at random when "
    "there are more; the score is the mean over them). Each attack target is attacked on "
    "the release as it is. The release was computed from every person, so the control is "
    "counterfactual: each control person is attacked on the release with their own "
    "released person taken out (the same generalization and suppression). What the "
    "adversary still achieves on them comes from what the release shares with everyone; "
    "the gap between attack and control is what it gives away about the persons in it. A "
    "control person has no pseudonym of their own left, so the linkability control is "
    "zero by design."
)


@dataclass(frozen=True)
class PersonAttackReport(AttackReportData):
    HIDDEN: ClassVar[tuple[str, ...]] = ("attack_persons", "control_persons")
    method: str
    method_version: str
    seed: int
    release_kind: str  # "persons"
    unit: str  # "person"
    design: str
    power: str
    original_persons: int
    released_persons: int
    released_events: int
    targets: int  # persons of the attack sample (and as many in the control)
    known_sets: int  # most known-event sets scored per target
    quasi: tuple[str, ...]
    sensitive: tuple[str, ...]
    results: tuple[AttackResult, ...]
    attack_persons: tuple[str, ...] = ()  # ids attacked: for audit and tests, never printed
    control_persons: tuple[str, ...] = ()


@dataclass(frozen=True)
class PersonScores:
    """Per target (in the order given): the chance that each attack succeeds."""

    singling_out: F64
    exact: F64
    nearest: F64
    inferred: dict[str, F64]


def _check(
    seen: LongitudinalData,
    released: LongitudinalData,
    sensitive: Sequence[str],
    seen_rows: pl.DataFrame | None,
    released_rows: pl.DataFrame | None,
) -> None:
    quasi = [*seen.person_quasi, *seen.event_quasi]
    both = sorted(set(quasi) & set(sensitive))
    if both:
        raise EngineInputError(f"{preview(both)} cannot be both quasi-identifier and sensitive")
    for frame, what in ((seen_rows, "data"), (released_rows, "release")):
        if sensitive and frame is None:
            raise EngineInputError(f"the {what}'s sensitive values are missing")
        if frame is not None:
            missing = [c for c in (PERSON_ID, *sensitive) if c not in frame.columns]
            if missing:
                raise EngineInputError(f"the {what}'s rows have no column {preview(missing)}")


def person_scores(
    seen: LongitudinalData,
    released: LongitudinalData,
    targets: Sequence[int] | I64,
    *,
    power: Power,
    leave_out: Sequence[bool] | None = None,
    sensitive: Sequence[str] = (),
    seen_rows: pl.DataFrame | None = None,
    released_rows: pl.DataFrame | None = None,
    seed: int = 0,
    coded: Coded | None = None,
) -> PersonScores:
    """The chance that each attack succeeds on each target (persons of ``seen`` by index,
    id order), ``leave_out`` marking control targets.  ``seen``: every original person as
    the adversary sees them (generalized values); ``released``: the release with each
    released person's true id; ``*_rows``: rows with ``__person_id`` and the sensitive
    columns (original values; released values)."""
    _check(seen, released, sensitive, seen_rows, released_rows)
    coded = coded if coded is not None else code(seen, released)
    picks = np.asarray(targets, dtype=np.int64)
    leave = np.asarray(leave_out if leave_out is not None else [False] * picks.size, dtype=np.bool_)
    rng = np.random.default_rng(seed)
    known = known_sets(coded.seen_offsets, coded.seen_features, picks, power, rng)
    args = {
        "target_class": coded.seen_class[picks],
        "target_codes": np.ascontiguousarray(coded.seen_codes[picks]),
        "target_own": coded.seen_own[picks],
        "target_leave": leave,
        "known": known,
    }
    single, exact, nearest, _ = run(coded, **args)  # type: ignore[arg-type]
    inferred = {}
    for column in sensitive:
        assert seen_rows is not None and released_rows is not None
        seen_coded, released_coded = codes(seen_rows[column], released_rows[column])
        n_values = int(max(seen_coded.max(initial=-1), released_coded.max(initial=-1))) + 1
        v_off, vals = values(released_rows, released.ids, column, released_coded)
        t_all, truth_all = values(seen_rows, seen.ids, column, seen_coded)
        t_off = np.zeros(picks.size + 1, dtype=np.int64)
        np.cumsum(np.diff(t_all)[picks], out=t_off[1:])
        truths = (
            np.concatenate([truth_all[t_all[i] : t_all[i + 1]] for i in picks.tolist()])
            if picks.size
            else np.zeros(0, dtype=np.int64)
        ).astype(np.int64)
        fallback = np.bincount(vals, minlength=max(n_values, 1)).astype(np.float64)
        sens = (v_off, vals, n_values, t_off, truths, fallback)
        inferred[column] = run(coded, **args, sensitive=sens)[3]  # type: ignore[arg-type]
    return PersonScores(single, exact, nearest, inferred)


def _naive_singling_out(coded: Coded, draws: int, power: Power, rng: np.random.Generator) -> F64:
    """A naive adversary describes someone with each person-level value drawn from the
    release's persons, independently, and events drawn from those the released persons
    hold (as many as a released person drawn at random would let them know)."""
    m = coded.class_members.size
    if m == 0 or draws == 0:
        return np.zeros(draws)
    width = coded.released_codes.shape[1]
    codes = np.empty((draws, width), dtype=np.int64)
    for q in range(width):
        codes[:, q] = coded.released_codes[rng.integers(0, m, size=draws), q]
    lookup = {tuple(row): c for c, row in enumerate(coded.class_codes.tolist())}
    target_class = np.array([lookup.get(tuple(r), -1) for r in codes.tolist()], dtype=np.int64)
    support = np.bincount(coded.released_features, minlength=max(coded.n_features, 1))
    weights = support / support.sum() if support.sum() else None
    sizes = np.diff(coded.released_offsets)[rng.integers(0, m, size=draws)]
    known, item_offsets, items = [0], [0], []
    for size in sizes.tolist():
        s = size if power == ALL else min(int(power), size)
        s = min(s, int((support > 0).sum()))
        if s and weights is not None:
            items.extend(
                sorted(rng.choice(support.size, size=s, replace=False, p=weights).tolist())
            )
        item_offsets.append(len(items))
        known.append(len(item_offsets) - 1)
    single, _, _, _ = run(
        coded,
        target_class=target_class,
        target_codes=codes,
        target_own=np.full(draws, -1, dtype=np.int64),
        target_leave=np.zeros(draws, dtype=np.bool_),
        known=(
            np.asarray(known, dtype=np.int64),
            np.asarray(item_offsets, dtype=np.int64),
            np.asarray(items, dtype=np.int64),
        ),
    )
    return single


def _mode_guess(
    released_rows: pl.DataFrame,
    released: LongitudinalData,
    seen_rows: pl.DataFrame,
    seen: LongitudinalData,
    column: str,
    picks: I64,
) -> F64:
    """The naive guess: the value most persons of the release hold, whoever the target."""
    seen_coded, released_coded = codes(seen_rows[column], released_rows[column])
    _, vals = values(released_rows, released.ids, column, released_coded)
    t_off, truths = values(seen_rows, seen.ids, column, seen_coded)
    counts = np.bincount(vals, minlength=1)
    if counts.max(initial=0) == 0:
        return np.zeros(picks.size)
    modes = set(np.flatnonzero(counts == counts.max()).tolist())
    return np.array(
        [len(modes & set(truths[t_off[i] : t_off[i + 1]].tolist())) / len(modes) for i in picks]
    )


def attack_persons(
    seen: LongitudinalData,
    released: LongitudinalData,
    *,
    power: Power,
    sensitive: Sequence[str] = (),
    seen_rows: pl.DataFrame | None = None,
    released_rows: pl.DataFrame | None = None,
    seed: int,
    targets: int = DEFAULT_TARGETS,
) -> PersonAttackReport:
    """Attack a person release (module docstring): an attack sample and a control sample
    of at most ``targets`` persons each (at most half the persons each), drawn with
    ``seed``; singling out, linkability (exact, nearest), inference of each sensitive
    column; attack vs control vs naive baseline."""
    if targets < 1:
        raise EngineInputError("the attacks need at least one target")
    n = seen.persons
    if n < 2:
        raise EngineInputError("the attacks need at least two persons in the data")
    rng = np.random.default_rng(seed)
    a = min(targets, n // 2)
    order = rng.permutation(n)
    picks = np.concatenate([np.sort(order[:a]), np.sort(order[a : 2 * a])]).astype(np.int64)
    leave = np.arange(picks.size) >= a
    coded = code(seen, released)
    scores = person_scores(
        seen,
        released,
        picks,
        power=power,
        leave_out=leave.tolist(),
        sensitive=sensitive,
        seen_rows=seen_rows,
        released_rows=released_rows,
        seed=int(rng.integers(0, 2**62)),
        coded=coded,
    )
    m = released.persons
    own = coded.seen_own[picks[:a]]

    def result(criterion: str, variant: str, values: F64, naive: F64) -> AttackResult:
        attack, control = rate(float(values[:a].sum()), a), rate(float(values[a:].sum()), a)
        return AttackResult(
            criterion=criterion,
            variant=variant,
            question=PERSON_QUESTIONS[criterion],
            attacks=a,
            attack=attack,
            control=control,
            baseline=rate(float(naive.sum()), naive.size),
            advantage=difference(attack, control),
        )

    naive_link = np.where(own >= 0, 1.0 / max(m, 1), 0.0)
    results = [
        result(SINGLING_OUT, EXACT, scores.singling_out, _naive_singling_out(coded, a, power, rng)),
        result(LINKABILITY, EXACT, scores.exact, naive_link),
        result(LINKABILITY, NEAREST, scores.nearest, naive_link),
    ]
    for column in sensitive:
        assert seen_rows is not None and released_rows is not None
        naive = _mode_guess(released_rows, released, seen_rows, seen, column, picks[:a])
        results.append(result(INFERENCE, column, scores.inferred[column], naive))
    ids = seen.ids.cast(pl.String).to_list()
    return PersonAttackReport(
        method=METHOD,
        method_version=PERSON_METHOD_VERSION,
        seed=seed,
        release_kind="persons",
        unit="person",
        design=DESIGN_PERSONS.format(power=power, sets=MAX_KNOWN_SETS),
        power=str(power),
        original_persons=n,
        released_persons=m,
        released_events=released.events,
        targets=a,
        known_sets=MAX_KNOWN_SETS,
        quasi=(*seen.person_quasi, *seen.event_quasi),
        sensitive=tuple(sensitive),
        results=tuple(results),
        attack_persons=tuple(ids[i] for i in picks[:a].tolist()),
        control_persons=tuple(ids[i] for i in picks[a:].tolist()),
    )


def load_person_attack_code() -> None:
    """Load (or compile) the compiled matching of the attacks in persons on a tiny release
    (``deid warmup``): the first apply of a person release then does not compile it."""
    frame = pl.DataFrame(
        {
            "pid": ["1", "1", "2", "3", "4"],
            "sex": ["F", "F", "F", "M", "M"],
            "code": ["A", "B", "A", "C", "C"],
            "outcome": ["x", "y", "x", "y", "y"],
        }
    )
    data = from_long_table(frame, person="pid", person_quasi=["sex"], event_quasi=["code"])
    rows = frame.select(pl.col("pid").alias(PERSON_ID), "outcome")
    attack_persons(
        data, data, power=1, sensitive=["outcome"], seen_rows=rows, released_rows=rows, seed=0
    )
