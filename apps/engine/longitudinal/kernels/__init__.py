"""Compiled exact counting of per-person counts, with event and person suppression (numba).

Per person-level class, independently (LONGITUDINAL.md §4 "Equivalence": the strict
check is k^m-anonymity with m = p inside each class):

* **power p**: every person ``j`` with ``|F_j| >= p`` adds each of its p-subsets to a hash
  table (open addressing over the exact item tuples: equal hashes are compared item by
  item), counting how many persons hold it; that count is ``m(S)`` for every p-subset
  (superset rule). A person with ``0 < |F_i| < p`` asks for its whole set, whose support
  is counted on the class's posting lists (persons holding each feature) from its rarest
  feature. ``k_i`` = the least count over its ``s_i``-subsets; ``|F_i| = 0`` gives the
  class size.
* **complete knowledge** ("all", ``p = 0`` here): ``k_i`` = persons of the class whose set
  equals ``F_i``: sets are hashed and equal hashes compared item by item.

Suppression (LONGITUDINAL.md §3.2 steps 4-5, :func:`evaluate`): persons failing ``k`` in
id order lose, one step at a time, the feature with the smallest support in their class
(ties: the smallest feature id = smallest value) and every event carrying it; the counts
of the class are updated incrementally (a removed feature lowers only the subsets that
contain it, held by the persons of its posting list). The steps follow global id order
(the first failing person of the whole data set next) and stop at the first step that
would exceed the event budget: classes are run on their own and their steps merged by
person id afterwards (:func:`_merge`), which gives the same order, and a class cut short
is replayed up to its share. Then every still failing person is removed whole and the
class recounted, until none fails; the node passes when the removed persons are within
the person budget. A class smaller than ``k`` is removed whole at once (no event
suppression can help it).

The arrays travel in tuples: ``data`` = (order, position, offsets, feats, events,
slot_person) describes the node (persons class by class; person ``i``'s features
``feats[offsets[i]:offsets[i+1]]`` ascending, with their events; the person of each slot);
``state`` = (removed slots, alive persons, counts); ``table`` = (rec, tslot, index,
meta): entry ``e`` is the record ``rec[e*w:(e+1)*w]`` = (size t, count, t items), ``tslot[e]``
its index slot, ``index[s]`` = (hash's high bits << 32 | entry + 1), 0 when empty, and
``meta`` = [entries, mask, index capacity, w = p + 2]; ``posting`` =
(post, pstart, plen, support1, qsize) for the open class; ``scratch`` = (cur, rest, idx,
buf).

By concern: :mod:`.common` (the tuples, hashing, the hash table), :mod:`.classes` (one
class's counts), :mod:`.suppression` (event and person phases, the merge), :mod:`.node`
(the entry points) and :mod:`.rare` (certain failures). Every function is checked against the
plain-Python definitions of ``formulas.py`` and of LONGITUDINAL.md §3.2 on random data
(tests/engine/longitudinal/test_properties.py). Compiled code is cached on disk per module
(``cache=True``).
"""

from apps.engine.longitudinal.kernels.common import (
    DECIDED_EARLY,
    EVENTS_SUPPRESSED,
    PASSES,
    PERSONS_SUPPRESSED,
    STATS,
    STEPS,
    TRUNCATED,
    regroup,
    subset_total,
)
from apps.engine.longitudinal.kernels.node import evaluate, person_counts
from apps.engine.longitudinal.kernels.rare import cannot_fit, rare_costs

#: The modules holding compiled functions (the preload's test walks them).
MODULES = ("common", "classes", "suppression", "node", "rare")

__all__ = [
    "DECIDED_EARLY",
    "EVENTS_SUPPRESSED",
    "MODULES",
    "PASSES",
    "PERSONS_SUPPRESSED",
    "STATS",
    "STEPS",
    "TRUNCATED",
    "cannot_fit",
    "evaluate",
    "person_counts",
    "rare_costs",
    "regroup",
    "subset_total",
]
