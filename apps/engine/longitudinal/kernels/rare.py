"""Certain failures, known without counting: the events each person must lose for its
features held by fewer than ``k`` persons (:func:`rare_costs`), and whether the budgets can
serve them at all (:func:`cannot_fit`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from apps.engine.longitudinal.kernels.common import I32, I64

# --------------------------------------------------------------------------- certain failures


@njit(cache=True, nogil=True)
def rare_costs(
    order: I64, starts: I64, offsets: I64, feats: I32, events: I64, features: int, k: int
) -> tuple[I64, int]:
    """Events each person must lose before it can meet ``k``, known without counting.

    A feature held by fewer than ``k`` persons of a class bounds the count of every
    person holding it (any subset containing it, or an equal set, is held by at most as
    many), and supports only fall while suppressing: so each such feature must lose all
    its events from that person, or the person goes. Returns, for the persons holding at
    least one such feature, the events of those features, and the persons of classes
    smaller than ``k`` (who can only go).
    """
    support = np.zeros(max(features, 1), dtype=np.int64)
    costs = np.empty(len(order), dtype=np.int64)
    found = 0
    small = 0
    for c in range(len(starts) - 1):
        c0, c1 = starts[c], starts[c + 1]
        if c1 - c0 < k:
            small += c1 - c0
            continue
        for pos in range(c0, c1):
            i = order[pos]
            for s in range(offsets[i], offsets[i + 1]):
                support[feats[s]] += 1
        for pos in range(c0, c1):
            i = order[pos]
            rare = np.int64(0)
            for s in range(offsets[i], offsets[i + 1]):
                if support[feats[s]] < k:
                    rare += events[s]
            if rare > 0:
                costs[found] = rare
                found += 1
        for pos in range(c0, c1):
            i = order[pos]
            for s in range(offsets[i], offsets[i + 1]):
                support[feats[s]] = 0
    return costs[:found].copy(), small


@njit(cache=True, nogil=True)
def cannot_fit(costs: I64, small: int, event_budget: int, person_budget: int) -> bool:
    """True when the persons that must lose ``costs`` events (or go) cannot all be served:
    the person budget left after the ``small`` persons goes to the most expensive ones,
    and the others' events exceed the event budget (the best any suppression can do)."""
    if small > person_budget:
        return True
    ordered = np.sort(costs)
    left = person_budget - small
    total = np.int64(0)
    for x in range(len(ordered) - left):  # all but the `left` most expensive
        total += ordered[x]
        if total > event_budget:
            return True
    return False
