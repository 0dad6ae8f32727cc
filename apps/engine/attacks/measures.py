"""Scoring one attack on one target: the probability that it succeeds (0..1).

Every score is the same rule for an attack target and for a control target, so the two
rates compare.  Where the intruder picks at random among equally good candidates, the
score is the probability that the pick is right (stats.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from apps.engine.attacks.neighbours import Candidates
from apps.engine.attacks.view import FloatArray, IntArray, SensitiveCoding


def isolated(found: Sequence[Candidates]) -> FloatArray:
    """Singling out: the description matches exactly one released record."""
    return np.array([1.0 if c.exact and c.total == 1 else 0.0 for c in found])


def linked(
    found: Sequence[Candidates], own: IntArray, own_records: IntArray, *, exact_only: bool
) -> FloatArray:
    """Linkability: the chance that a uniform pick among the candidates is one of the
    target's own records (``own_records[t]`` of them in tuple ``own[t]``: 1 for a release
    derived row by row, 0 once left out, the copies of the target for synthetic data)."""
    scores = np.zeros(len(found))
    for t, c in enumerate(found):
        if c.total == 0 or (exact_only and not c.exact) or own[t] < 0 or own_records[t] <= 0:
            continue
        at = np.flatnonzero(c.tuples == own[t])
        if at.size:
            scores[t] = min(int(own_records[t]), int(c.records[at[0]])) / c.total
    return scores


def _right_guess(distribution: FloatArray, truth: int) -> float:
    """A guess of the most frequent value, ties split evenly: the chance it is ``truth``."""
    if truth < 0 or distribution.size == 0 or distribution.max() <= 0:
        return 0.0
    modes = np.flatnonzero(distribution == distribution.max())
    return 1.0 / modes.size if truth in modes else 0.0


def inferred(
    found: Sequence[Candidates],
    coding: SensitiveCoding,
    truth: IntArray,
    own: IntArray,
    own_value: IntArray,
    left_out: Sequence[bool],
    fallback: FloatArray,
) -> FloatArray:
    """Inference: the most frequent sensitive value among the candidates' records (the
    target's own record taken out where it was left out; no candidate: the release's most
    frequent value, ``fallback``) is the target's."""
    scores = np.zeros(len(found))
    for t, c in enumerate(found):
        if c.total == 0:
            scores[t] = _right_guess(fallback, int(truth[t]))
            continue
        distribution = np.asarray(coding.counts[c.tuples].sum(axis=0), dtype=np.float64).reshape(-1)
        if left_out[t] and own[t] >= 0 and own_value[t] >= 0 and (c.tuples == own[t]).any():
            distribution[own_value[t]] -= 1
        scores[t] = _right_guess(distribution, int(truth[t]))
    return scores


def guessed_by_mode(coding: SensitiveCoding, truth: IntArray) -> tuple[FloatArray, FloatArray]:
    """The naive guess: the release's most frequent value, whoever the person."""
    overall = np.asarray(coding.counts.sum(axis=0), dtype=np.float64).reshape(-1)
    return overall, np.array([_right_guess(overall, int(v)) for v in truth])
