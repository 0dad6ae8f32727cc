"""The compiled part of the attacks in persons (persons.py): for each target and each set of
events the adversary may know, the released persons that match, and the three scores.

The release is indexed once: released persons grouped by their person-level class, and,
per (class, feature), the persons of the class holding the feature (postings, sorted by
key ``class * features + feature``).  A target's known events are then matched by walking
the postings of those few (class, feature) pairs only: the work per target follows the
size of its class, never the number of released persons or events.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _postings(keys, starts, key):  # type: ignore[no-untyped-def]
    at = np.searchsorted(keys, key)
    if at < keys.size and keys[at] == key:
        return starts[at], starts[at + 1]
    return 0, 0


@njit(cache=True)
def score_targets(  # type: ignore[no-untyped-def]  # noqa: PLR0912, PLR0913, PLR0915
    class_starts,  # released classes + 1
    class_members,  # released persons, class by class
    class_codes,  # classes x person-level QIs
    post_keys,  # sorted distinct class * n_features + feature
    post_starts,  # len(post_keys) + 1
    post_persons,  # released persons of each posting
    n_features,
    target_class,  # per target: its released class, or -1
    target_codes,  # targets x person-level QIs
    target_own,  # per target: its own released person, or -1
    target_leave,  # per target: its own released person is taken out (control)
    known_offsets,  # targets + 1: the target's known sets
    item_offsets,  # known sets + 1
    items,  # the features of each known set
    value_offsets,  # released persons + 1: each person's distinct sensitive values
    values,
    n_values,
    truth_offsets,  # targets + 1: each target's own sensitive values
    truths,
    fallback,  # n_values: the release's persons per value (no candidate at all)
):
    n_targets = target_class.size
    n_released = class_members.size
    n_classes = class_starts.size - 1
    single = np.zeros(n_targets)
    exact = np.zeros(n_targets)
    nearest = np.zeros(n_targets)
    inferred = np.zeros(n_targets)
    hits = np.zeros(n_released, dtype=np.int64)
    touched = np.empty(n_released, dtype=np.int64)
    counts = np.zeros(max(n_values, 1), dtype=np.float64)
    near_classes = np.empty(max(n_classes, 1), dtype=np.int64)
    for t in range(n_targets):
        own = target_own[t]
        skip = own if target_leave[t] else -1
        # the classes nearest the target's person-level values (fewest disagreeing ones)
        n_near = 0
        if target_class[t] >= 0:
            near_classes[0] = target_class[t]
            n_near = 1
        else:
            best = class_codes.shape[1] + 1
            for c in range(n_classes):
                d = 0
                for q in range(class_codes.shape[1]):
                    if class_codes[c, q] != target_codes[t, q]:
                        d += 1
                if d < best:
                    best = d
                    n_near = 0
                if d == best:
                    near_classes[n_near] = c
                    n_near += 1
        sets = known_offsets[t + 1] - known_offsets[t]
        if sets == 0:
            continue
        for u in range(known_offsets[t], known_offsets[t + 1]):
            lo, hi = item_offsets[u], item_offsets[u + 1]
            s = hi - lo
            n_touched = 0
            for k in range(n_near):
                c = near_classes[k]
                for f in range(lo, hi):
                    a, b = _postings(post_keys, post_starts, c * n_features + items[f])
                    for x in range(a, b):
                        j = post_persons[x]
                        if j == skip:
                            continue
                        if hits[j] == 0:
                            touched[n_touched] = j
                            n_touched += 1
                        hits[j] += 1
            best_hits = 0
            for x in range(n_touched):
                if hits[touched[x]] > best_hits:
                    best_hits = hits[touched[x]]
            # candidates: persons of the nearest classes holding the most known events
            matched = 0
            own_in = False
            if best_hits > 0:
                for x in range(n_touched):
                    j = touched[x]
                    if hits[j] == best_hits:
                        matched += 1
                        if j == own:
                            own_in = True
            else:
                for k in range(n_near):
                    c = near_classes[k]
                    for x in range(class_starts[c], class_starts[c + 1]):
                        j = class_members[x]
                        if j != skip:
                            matched += 1
                            if j == own:
                                own_in = True
            is_exact = target_class[t] >= 0 and best_hits == s and matched > 0
            if is_exact and matched == 1:
                single[t] += 1.0 / sets
            if own_in and matched > 0:
                nearest[t] += 1.0 / matched / sets
                if is_exact:
                    exact[t] += 1.0 / matched / sets
            # inference: the most frequent value among the candidates (in persons)
            if n_values > 0 and truth_offsets[t + 1] > truth_offsets[t]:
                if matched == 0:
                    for v in range(n_values):
                        counts[v] = fallback[v]
                elif best_hits > 0:
                    for x in range(n_touched):
                        j = touched[x]
                        if hits[j] == best_hits:
                            for y in range(value_offsets[j], value_offsets[j + 1]):
                                counts[values[y]] += 1.0
                else:
                    for k in range(n_near):
                        c = near_classes[k]
                        for x in range(class_starts[c], class_starts[c + 1]):
                            j = class_members[x]
                            if j != skip:
                                for y in range(value_offsets[j], value_offsets[j + 1]):
                                    counts[values[y]] += 1.0
                top = 0.0
                for v in range(n_values):
                    if counts[v] > top:
                        top = counts[v]
                if top > 0:
                    modes = 0
                    right = 0
                    for v in range(n_values):
                        if counts[v] == top:
                            modes += 1
                            for y in range(truth_offsets[t], truth_offsets[t + 1]):
                                if truths[y] == v:
                                    right += 1
                                    break
                    inferred[t] += right / modes / sets
                for v in range(n_values):
                    counts[v] = 0.0
            for x in range(n_touched):
                hits[touched[x]] = 0
    return single, exact, nearest, inferred
