"""Information-loss formulas and utility measures (METHOD.md Step 8), one per function.

Notation: ``n`` rows of the input, ``S`` record-suppressed rows, ``d`` quasi-identifiers;
QI ``j`` has hierarchy height ``h_j``, is generalized to level ``l_j`` and its hierarchy
has ``|H_j|`` leaves. Each function names its source and guards the empty case.

Deliberate differences from ARX, noted where they arise: ARX rounds its scores to a few
decimals and clamps; we keep full precision. ARX's AECS counts the suppressed rows as one
extra class; METHOD.md does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from apps.engine.search.problem import I64, U32

MetricName = Literal["loss", "entropy", "precision", "discernibility", "aecs"]
METRICS: tuple[MetricName, ...] = ("loss", "entropy", "precision", "discernibility", "aecs")


# --------------------------------------------------------------------------- formulas


def loss_of_dimension(weighted_leaves: int, rows: int, domain_size: int) -> float:
    """Normalized Loss of one QI (Iyengar 2002; ARX ``MetricMDNMLoss``; METHOD.md Step 8).

    ``weighted_leaves`` = ``S_j x |H_j|`` where ``S_j`` = sum over rows of the share of the
    hierarchy's leaves covered by the row's generalized value (1 for a suppressed row).
    ``L_j = (S_j - n/|H_j|) / (n - n/|H_j|)``, computed as ``(S_j|H_j| - n)/(n|H_j| - n)``
    to stay in integers. 0 when the denominator is 0 (no rows, or a one-leaf hierarchy,
    which carries no information to lose). Clamped at 0 and truncated to 10 decimals
    like ARX (:func:`truncate_like_arx`).
    """
    denominator = rows * domain_size - rows
    if denominator <= 0:
        return 0.0
    return truncate_like_arx(max(0.0, (weighted_leaves - rows) / denominator))


#: Decimals ARX keeps of a normalized per-dimension loss (``Metric.DIGITS``).
ARX_DIGITS = 10
ARX_FACTOR = 10.0**ARX_DIGITS


def truncate_like_arx(value: float) -> float:
    """``floor(value x 10^10) / 10^10``: ARX truncates each QI's normalized Loss to 10
    decimals before aggregating (``Metric.round``, used by ``MetricMDNMLoss.
    normalizeGeneralized``). Doing the same makes scores equal to ARX's to ~1e-15
    instead of ~1e-10; truncation is monotone, so bounds stay bounds."""
    return math.floor(value * ARX_FACTOR) / ARX_FACTOR


def geometric_mean_loss(dimensions: Sequence[float]) -> float:
    """Aggregate Loss over QIs: ``prod_j (1 + L_j)^(1/d) - 1`` (ARX's default aggregate,
    ``ILMultiDimensionalGeometricMean``; METHOD.md Step 8). 0 for no QIs."""
    if not dimensions:
        return 0.0
    return float(math.prod(1.0 + v for v in dimensions) ** (1.0 / len(dimensions)) - 1.0)


def generalization_entropy(
    frequencies: I64, generalized_frequencies: I64, generalize: U32
) -> float:
    """Non-uniform entropy of one QI at one level (El Emam et al. 2009; ARX
    ``MetricMDNUEntropyPrecomputed``): ``-sum_rows log2(f(v) / f(g(v)))`` where ``f`` counts
    the input's rows with original value ``v`` and with generalized value ``g(v)``.
    Grouped by value: ``-sum_v f(v) log2(f(v)/f(g(v)))``. 0 at level 0 or for no rows."""
    present = frequencies > 0
    if not present.any():
        return 0.0
    f = frequencies[present].astype(np.float64)
    g = generalized_frequencies[generalize[np.flatnonzero(present)]].astype(np.float64)
    return float(-(f * np.log2(f / g)).sum()) + 0.0


def generalization_entropies(
    frequencies: Sequence[I64], generalize: Sequence[U32]
) -> NDArray[np.float64]:
    """:func:`generalization_entropy` of one QI at every level ``L`` (``frequencies[L]``,
    ``generalize[L]``; level 0 first), bit for bit: the same element-wise operations on
    the same floats, level ``L``'s terms a contiguous row summed on its own (numpy's
    pairwise sum of a row is that of the row alone), without the per-level set-up."""
    levels = len(frequencies)
    out = np.zeros(levels, dtype=np.float64)
    present = np.flatnonzero(frequencies[0] > 0)
    if not levels or not len(present):
        return out
    f = frequencies[0][present].astype(np.float64)
    g = np.empty((levels, len(present)), dtype=np.float64)
    for level in range(levels):
        g[level] = frequencies[level][generalize[level][present]]
    sums = (f * np.log2(f / g)).sum(axis=1)
    out[:] = [float(-v) + 0.0 for v in sums.tolist()]
    return out


def suppression_entropy(counts: NDArray[np.int64]) -> float:
    """Extra non-uniform entropy of the suppressed rows of one QI (El Emam et al. 2009,
    non-monotonic variant; ARX ``MetricMDNUNMEntropyPrecomputed``):
    ``-sum_u c_u log2(c_u / |S|)`` over the generalized values ``u`` among the suppressed
    rows, ``c_u`` rows each. ARX adds this *on top of* the generalization entropy of all
    ``n`` rows (suppressed ones included); so do we. 0 when nothing is suppressed."""
    c = counts[counts > 0].astype(np.float64)
    total = c.sum()
    if total == 0:
        return 0.0
    return float(-(c * np.log2(c / total)).sum()) + 0.0


def precision_value(
    levels: Sequence[int], heights: Sequence[int], rows: int, suppressed: int
) -> float:
    """Precision (Sweeney 2002; ARX ``MetricMDNMPrecision``; METHOD.md Step 8): mean over
    QIs of ``[(n - |S|) l_j/h_j + |S|] / n``; a QI of height 0 counts ``l_j/h_j = 0``.
    0 for no rows or no QIs."""
    if rows == 0 or not levels:
        return 0.0
    total = 0.0
    for level, height in zip(levels, heights, strict=True):
        share = level / height if height else 0.0
        total += ((rows - suppressed) * share + suppressed) / rows
    return total / len(levels)


def discernibility_value(released_sizes: I64, suppressed: int, rows: int) -> int:
    """Discernibility metric (Bayardo & Agrawal 2005; ARX ``MetricSDNMDiscernability``;
    METHOD.md Step 8): ``sum over released classes |E|^2 + |S| x n``."""
    return int(np.square(released_sizes.astype(np.int64)).sum()) + suppressed * rows


def average_class_size(rows: int, released_classes: int) -> float:
    """Average equivalence class size (LeFevre et al. 2006; METHOD.md Step 8):
    ``n / number of released classes``. ``inf`` when every row is suppressed, 0 for no
    rows. (ARX ``MetricSDAECS`` counts the suppressed rows as one more class.)"""
    if rows == 0:
        return 0.0
    if released_classes == 0:
        return math.inf
    return rows / released_classes


def entropy_percent(value: float, maximum: float) -> float:
    """Entropy as a percentage of its maximum, the value at the lattice's top node
    (Seed 001, "Entropy"; METHOD.md Step 8). 0 when the maximum is 0."""
    return 100.0 * value / maximum if maximum > 0 else 0.0


def record_missingness(
    missing_before: NDArray[np.bool_], missing_after: NDArray[np.bool_], weights: I64 | None = None
) -> float:
    """Record-level missingness added by de-identification (Seed 001, "Missingness").

    Inputs are ``[rows x QIs]`` booleans (a cell is missing). A record is missing when any
    of its QI cells is; the result is ``(records missing after - records missing before)
    / records``. ``weights`` lets a row of a compressed table stand for several records.
    """
    w = np.ones(len(missing_before), dtype=np.int64) if weights is None else weights
    total = int(w.sum())
    if total == 0:
        return 0.0
    before = int(w[missing_before.any(axis=1)].sum())
    after = int(w[(missing_after | missing_before).any(axis=1)].sum())
    return (after - before) / total


def cell_missingness(
    missing_before: NDArray[np.bool_], missing_after: NDArray[np.bool_], weights: I64 | None = None
) -> float:
    """Cell-level missingness added by de-identification (Seed 001, "Missingness"):
    ``(QI cells missing after - QI cells missing before) / QI cells``."""
    w = np.ones(len(missing_before), dtype=np.int64) if weights is None else weights
    cells = int(w.sum()) * (missing_before.shape[1] if missing_before.ndim == 2 else 0)
    if cells == 0:
        return 0.0
    before = int((missing_before.sum(axis=1) * w).sum())
    after = int(((missing_after | missing_before).sum(axis=1) * w).sum())
    return (after - before) / cells
