"""One function per formula of the sensitive-attribute models, on one class (plain Python).

``counts`` maps a sensitive code to the class's rows with that value (codes absent or 0
have no row). These are the definitions; the search uses the compiled versions in
``sensitive/kernels.py``, which the tests hold to these on random classes.

Sources: Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam, *l-diversity: Privacy beyond
k-anonymity*, TKDD 1(1), 2007 (distinct, entropy, recursive (c, l)); Li, Li,
Venkatasubramanian, *t-Closeness: Privacy beyond k-anonymity and l-diversity*, ICDE 2007
(Earth Mover's Distance with equal, hierarchical and ordered ground distance); with the
comparisons, the minimal class size and the overall distribution as ARX 3.9.2 implements
them (``criteria/*LDiversity``, ``*TCloseness``, ``DataManager.getDistribution/getTree``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def _present(counts: Mapping[int, int]) -> dict[int, int]:
    return {v: int(c) for v, c in counts.items() if c > 0}


def distinct_l(counts: Mapping[int, int]) -> int:
    """Distinct l-diversity of a class: its number of distinct sensitive values."""
    return len(_present(counts))


def distinct_l_passes(counts: Mapping[int, int], l: float) -> bool:  # noqa: E741
    """At least ``l`` distinct values (ARX ``DistinctLDiversity``)."""
    return distinct_l(counts) >= math.ceil(l)


def shannon_entropy(counts: Mapping[int, int]) -> float:
    """``H = -sum p log p`` (natural log) of the class's sensitive values; 0 for no row."""
    present = _present(counts)
    n = sum(present.values())
    if n == 0:
        return 0.0
    return math.log(n) - sum(c * math.log(c) for c in present.values()) / n


def entropy_l_passes(counts: Mapping[int, int], l: float) -> bool:  # noqa: E741
    """Entropy l-diversity, Shannon estimator: ``H >= log l`` (Machanavajjhala 2007).

    ARX ``EntropyLDiversity``: a class with fewer than ``ceil(l)`` distinct values
    fails; otherwise it passes unless ``n (ln n - ln l) < sum c ln c`` (the entropy
    condition multiplied by ``n``, compared as ARX does).
    """
    present = _present(counts)
    if len(present) < math.ceil(l):
        return False
    n = sum(present.values())
    bound = n * (math.log(n) - math.log(l))
    return not bound < sum(c * math.log(c) for c in present.values())


def recursive_cl_passes(counts: Mapping[int, int], c: float, l: float) -> bool:  # noqa: E741
    """Recursive (c, l)-diversity: ``r_1 < c (r_l + r_(l+1) + ... + r_m)``, ``r_i`` the
    value counts in decreasing order (Machanavajjhala 2007); fewer than ``l`` distinct
    values fail (ARX ``RecursiveCLDiversity``)."""
    present = sorted(_present(counts).values(), reverse=True)
    need = math.ceil(l)
    if len(present) < need:
        return False
    return present[0] < c * float(sum(present[need - 1 :]))


def overall_shares(total_counts: Sequence[int]) -> list[float]:
    """The overall distribution of the sensitive values: rows per value / all rows of
    the input (ARX ``DataManager.getDistribution``: every input row, suppressed or not)."""
    n = sum(total_counts)
    return [c / n if n else 0.0 for c in total_counts]


def equal_distance(counts: Mapping[int, int], shares: Sequence[float]) -> float:
    """EMD with equal ground distance: ``1/2 sum_i |p_i - q_i|`` (Li 2007), ``p`` the
    class's distribution, ``q`` the overall one (:func:`overall_shares`)."""
    present = _present(counts)
    n = sum(present.values())
    total = 0.0
    for value, q in enumerate(shares):
        p = present.get(value, 0) / n if n else 0.0
        total += abs(p - q)
    return total / 2


def hierarchical_distance(
    counts: Mapping[int, int], total_counts: Sequence[int], maps: Sequence[Sequence[int]]
) -> float:
    """EMD with hierarchical ground distance (Li 2007, ARX ``HierarchicalDistanceTCloseness``).

    ``maps[L][value]`` is the value's node at level ``L`` of the sensitive attribute's
    hierarchy (``maps[0]`` the identity, ``H = len(maps) - 1`` levels above it). Each
    leaf has an *extra* ``e = q - p`` (overall share minus class share); a node at level
    ``L >= 1`` moves ``min(pos, neg)`` of its children's net extras (sums of the
    positive and of the negative ones) at cost ``L / H``:
    ``D = sum over nodes (L / H) min(pos, neg)``.
    """
    height = len(maps) - 1
    present = _present(counts)
    n_class = sum(present.values())
    n_all = sum(total_counts)
    if height == 0 or n_class == 0 or n_all == 0:
        return 0.0
    # Extras scaled by n_all * n_class, so they are integers.
    extra = [
        total_counts[v] * n_class - present.get(v, 0) * n_all for v in range(len(total_counts))
    ]
    cost = 0.0
    for level in range(1, height + 1):
        children: dict[int, dict[int, int]] = {}
        for value, e in enumerate(extra):
            parent, child = maps[level][value], maps[level - 1][value]
            node = children.setdefault(parent, {})
            node[child] = node.get(child, 0) + e
        for node in children.values():
            pos = sum(x for x in node.values() if x > 0)
            neg = -sum(x for x in node.values() if x < 0)
            cost += level / height * min(pos, neg)
    return cost / (float(n_all) * float(n_class))


def ordered_distance(
    counts: Mapping[int, int], total_counts: Sequence[int], order: Sequence[int]
) -> float:
    """EMD with ordered ground distance (Li 2007): ``1/(m-1) sum_i |sum_(j<=i) (p_j -
    q_j)|`` over the ``m`` values in increasing order (``order[i]`` = the ``i``-th value's
    code; ARX ``OrderedDistanceTCloseness``, numeric order of a numeric column)."""
    m = len(order)
    present = _present(counts)
    n_class = sum(present.values())
    shares = overall_shares(total_counts)
    if m <= 1 or n_class == 0:
        return 0.0
    running = distance = 0.0
    for value in order:
        running += present.get(value, 0) / n_class - shares[value]
        distance += abs(running)
    return distance / (m - 1)
