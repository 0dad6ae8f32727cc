"""Information loss and utility of a de-identified data set (METHOD.md Step 8).

Notation: ``n`` rows of the input, ``S`` record-suppressed rows, ``d`` quasi-identifiers;
QI ``j`` has hierarchy height ``h_j``, is generalized to level ``l_j`` and its hierarchy
has ``|H_j|`` leaves. One function per formula, each with its source; the ``*Metric``
classes evaluate a formula on a lattice node's equivalence classes and also give the
search a **lower bound** per node: the value the metric would take with nothing
suppressed. It is a lower bound because a suppressed row costs each metric at least as
much as the same row released (share 1 >= any share; |E| <= n; ...), and it is
monotone along the lattice (classes merge, values cover more leaves), which the search
uses to prune (ARX does the same with ``getLowerBound``).

Deliberate differences from ARX, noted where they arise: ARX rounds its scores to a few
decimals and clamps; we keep full precision. ARX's AECS counts the suppressed rows as one
extra class; METHOD.md does not.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from apps.engine.search.problem import I64, U32, SearchProblem

MetricName = Literal["loss", "entropy", "precision", "discernibility", "aecs"]
METRICS: tuple[MetricName, ...] = ("loss", "entropy", "precision", "discernibility", "aecs")


# --------------------------------------------------------------------------- formulas


def loss_of_dimension(weighted_leaves: int, rows: int, domain_size: int) -> float:
    """Normalized Loss of one QI (Iyengar 2002; ARX ``MetricMDNMLoss``; METHOD.md Step 8).

    ``weighted_leaves`` = ``S_j x |H_j|`` where ``S_j`` = sum over rows of the share of the
    hierarchy's leaves covered by the row's generalized value (1 for a suppressed row).
    ``L_j = (S_j - n/|H_j|) / (n - n/|H_j|)``, computed as ``(S_j|H_j| - n)/(n|H_j| - n)``
    to stay in integers. 0 when the denominator is 0 (no rows, or a one-leaf hierarchy,
    which carries no information to lose). Clamped at 0 like ARX.
    """
    denominator = rows * domain_size - rows
    if denominator <= 0:
        return 0.0
    return max(0.0, (weighted_leaves - rows) / denominator)


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


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """What a metric sees of a node: its levels, classes and which are suppressed."""

    levels: tuple[int, ...]
    columns: tuple[U32, ...]
    sizes: I64
    suppressed: NDArray[np.bool_]


class Metric(ABC):
    """An information-loss metric prepared for one problem (lower is better)."""

    name: MetricName
    #: True when the no-suppression value must be measured on classes (not from
    #: marginals): the search then propagates it upwards as a bound.
    dynamic_bound: bool = False

    def __init__(self, problem: SearchProblem) -> None:
        self.problem = problem

    @abstractmethod
    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        """Static lower bound of the metric for every node (rows of ``levels``)."""

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Lower bound of every node knowing it suppresses at least ``suppressed`` rows
        (classes of fewer than ``k`` rows). Default: no use of it."""
        return self.lower_bounds(levels)

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        """Scalar form of :meth:`suppression_bounds` for one node (-inf: no bound)."""
        return -math.inf

    #: True when the value with nothing suppressed equals the static bound exactly.
    exact_bound: bool = False

    def value(self, node: NodeClasses) -> float:
        """The metric's value on a node with its suppressed classes.

        With nothing suppressed, metrics whose static bound is exact return the bound
        itself, bit for bit, so that nodes valued either way compare consistently.
        """
        if self.exact_bound and not node.suppressed.any():
            return self.generalization_value(node)
        return self._value(node)

    @abstractmethod
    def _value(self, node: NodeClasses) -> float:
        """The metric's formula on a node with its suppressed classes."""

    def generalization_value(self, node: NodeClasses) -> float:
        """Value with nothing suppressed: a lower bound for this node and, with
        consistent hierarchies, for all its generalizations."""
        return float(self.lower_bounds(np.asarray([node.levels], dtype=np.int16))[0])

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """A lower bound of the value of this node and of every generalization of it
        (classes of size < ``k`` suppressed), with consistent hierarchies."""
        return self.generalization_value(node)


class LossMetric(Metric):
    """Loss (Iyengar 2002), ARX's default: see :func:`loss_of_dimension`."""

    name: MetricName = "loss"
    exact_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        # weighted[j][L] = sum over all rows of leaves covered at level L (= S_j |H_j|)
        self.weighted = tuple(
            tuple(int((f * lv).sum()) for f, lv in zip(fr, lk.leaves, strict=True))
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
        )
        self.by_level = tuple(
            np.array(
                [loss_of_dimension(w, problem.rows, lk.domain_size) for w in ws], dtype=np.float64
            )
            for ws, lk in zip(self.weighted, problem.lookups, strict=True)
        )
        # penalty[j][L]: least increase of S_j |H_j| per suppressed row at level L
        self.penalty = tuple(
            [
                lk.domain_size - (int(lv[f > 0].max()) if (f > 0).any() else lk.domain_size)
                for f, lv in zip(fr, lk.leaves, strict=True)
            ]
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
        )

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        d = self.problem.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j in range(d):
            prod *= 1.0 + self.by_level[j][levels[:, j]]
        return prod ** (1.0 / d) - 1.0

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Each suppressed row adds at least ``|H_j| - (most leaves of a value at l_j)``
        to ``S_j |H_j|`` (its share becomes 1)."""
        p = self.problem
        d = p.dimensions
        if d == 0:
            return np.zeros(len(levels), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j, lk in enumerate(p.lookups):
            col = levels[:, j]
            weighted = np.asarray(self.weighted[j], dtype=np.int64)[col] + suppressed * np.asarray(
                self.penalty[j], dtype=np.int64
            )[col]
            denominator = p.rows * lk.domain_size - p.rows
            if denominator > 0:
                prod *= 1.0 + np.maximum(0.0, (weighted - p.rows) / denominator)
        return prod ** (1.0 / d) - 1.0  # type: ignore[no-any-return]

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        p = self.problem
        dims = [
            loss_of_dimension(
                self.weighted[j][lv] + suppressed * self.penalty[j][lv], p.rows, lk.domain_size
            )
            for j, (lk, lv) in enumerate(zip(p.lookups, levels, strict=True))
        ]
        return geometric_mean_loss(dims)

    def _value(self, node: NodeClasses) -> float:
        p = self.problem
        supp_sizes = node.sizes[node.suppressed]
        s = int(supp_sizes.sum())
        dims = []
        for j, (lk, level) in enumerate(zip(p.lookups, node.levels, strict=True)):
            covered = int((supp_sizes * lk.leaves[level][node.columns[j][node.suppressed]]).sum())
            weighted = self.weighted[j][level] - covered + s * lk.domain_size
            dims.append(loss_of_dimension(weighted, p.rows, lk.domain_size))
        return geometric_mean_loss(dims)


class EntropyMetric(Metric):
    """Non-uniform entropy, non-monotonic variant (El Emam et al. 2009), summed over QIs."""

    name: MetricName = "entropy"
    exact_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.by_level = tuple(
            np.array(
                [
                    generalization_entropy(fr[0], fr[level], lk.maps[level])
                    for level in range(lk.height + 1)
                ],
                dtype=np.float64,
            )
            for fr, lk in zip(problem.frequencies, problem.lookups, strict=True)
        )

    def maximum(self) -> float:
        """Entropy at the top node of the hierarchies, nothing suppressed (the 100 %)."""
        return float(sum(e[-1] for e in self.by_level))

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        total = np.zeros(len(levels), dtype=np.float64)
        for j, e in enumerate(self.by_level):
            total += e[levels[:, j]]
        return total

    def _value(self, node: NodeClasses) -> float:
        total = 0.0
        for j, level in enumerate(node.levels):
            total += float(self.by_level[j][level])
        if node.suppressed.any():
            supp_sizes = node.sizes[node.suppressed].astype(np.float64)
            for j, level in enumerate(node.levels):
                per_value = np.bincount(
                    node.columns[j][node.suppressed],
                    weights=supp_sizes,
                    minlength=self.problem.lookups[j].values_at(level),
                )
                total += suppression_entropy(per_value.astype(np.int64))
        return total


class PrecisionMetric(Metric):
    """Precision (Sweeney 2002): see :func:`precision_value`."""

    name: MetricName = "precision"
    exact_bound = True

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        d = self.problem.dimensions
        total = np.zeros(len(levels), dtype=np.float64)
        if d == 0 or self.problem.rows == 0:
            return total
        for j, h in enumerate(self.problem.heights):
            if h:
                total += levels[:, j] / h
        return total / d

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """``mean_j [s_j + (S/n)(1 - s_j)]`` is increasing in ``S``."""
        d, n = self.problem.dimensions, self.problem.rows
        total = np.zeros(len(levels), dtype=np.float64)
        if d == 0 or n == 0:
            return total
        frac = suppressed / n
        for j, h in enumerate(self.problem.heights):
            share = levels[:, j] / h if h else np.zeros(len(levels))
            total += share + frac * (1.0 - share)
        return total / d

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        return precision_value(levels, self.problem.heights, self.problem.rows, suppressed)

    def _value(self, node: NodeClasses) -> float:
        s = int(node.sizes[node.suppressed].sum())
        return precision_value(node.levels, self.problem.heights, self.problem.rows, s)


class DiscernibilityMetric(Metric):
    """Discernibility: see :func:`discernibility_value`."""

    name: MetricName = "discernibility"
    dynamic_bound = True

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        # Classes are unions of the distinct tuples: sum |E|^2 >= sum count^2.
        floor = float(np.square(self.problem.counts.astype(np.float64)).sum())
        return np.full(len(levels), floor, dtype=np.float64)

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Released rows sit in classes of ``>= k`` rows, so ``sum |E|^2 >= k (n - S)``
        and the value is ``>= k n + (n - k) S`` (``n^2`` when ``n < k``)."""
        n = self.problem.rows
        floor = self.lower_bounds(levels)
        if n < k:
            return np.maximum(floor, float(n * n))
        return np.maximum(floor, (k * n + (n - k) * suppressed).astype(np.float64))

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        n = self.problem.rows
        return float(n * n if n < k else k * n + (n - k) * suppressed)

    def generalization_value(self, node: NodeClasses) -> float:
        return float(discernibility_value(node.sizes, 0, self.problem.rows))

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """``sum_{released E} |E|^2 + k |S|``. Going up, released classes only merge
        (squares are superadditive), and a row suppressed here costs at least ``k``
        there: ``n`` if still suppressed, and in a released class E = R + U (R from
        released classes, U of u such rows) ``|E|^2 >= sum R_i^2 + u(u + 2r) >= sum
        R_i^2 + u k`` since ``u + 2r >= |E| >= k``."""
        kept = node.sizes[~node.suppressed]
        s = int(node.sizes[node.suppressed].sum())
        return float(int(np.square(kept).sum()) + min(k, max(self.problem.rows, 1)) * s)

    def _value(self, node: NodeClasses) -> float:
        kept = node.sizes[~node.suppressed]
        s = int(node.sizes[node.suppressed].sum())
        return float(discernibility_value(kept, s, self.problem.rows))


class AverageClassSizeMetric(Metric):
    """Average equivalence class size: see :func:`average_class_size`."""

    name: MetricName = "aecs"
    dynamic_bound = True

    def __init__(self, problem: SearchProblem) -> None:
        super().__init__(problem)
        self.present = tuple(
            np.array([int((f > 0).sum()) for f in fr], dtype=np.float64)
            for fr in problem.frequencies
        )

    def lower_bounds(self, levels: NDArray[np.int16]) -> NDArray[np.float64]:
        # Classes <= distinct tuples and <= product of the values present per QI.
        n = self.problem.rows
        if n == 0:
            return np.zeros(len(levels), dtype=np.float64)
        most = np.full(len(levels), float(len(self.problem.counts)), dtype=np.float64)
        prod = np.ones(len(levels), dtype=np.float64)
        for j, pres in enumerate(self.present):
            prod *= pres[levels[:, j]]
        return n / np.maximum(np.minimum(most, prod), 1.0)

    def suppression_bounds(
        self, levels: NDArray[np.int16], suppressed: NDArray[np.int64], k: int
    ) -> NDArray[np.float64]:
        """Released classes have ``>= k`` rows: at most ``(n - S)/k`` of them."""
        n = self.problem.rows
        floor = self.lower_bounds(levels)
        if n == 0:
            return floor
        room = (n - suppressed).astype(np.float64)
        with np.errstate(divide="ignore"):
            bound = np.where(room > 0, n * max(k, 1) / np.maximum(room, 1.0), np.inf)
        return np.maximum(floor, bound)

    def suppression_bound(self, levels: Sequence[int], suppressed: int, k: int) -> float:
        n = self.problem.rows
        if n == 0:
            return 0.0
        return n * max(k, 1) / (n - suppressed) if suppressed < n else math.inf

    def generalization_value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, len(node.sizes))

    def bound_for_generalizations(self, node: NodeClasses, k: int) -> float:
        """Going up, released classes number at most the classes here, and at most the
        released classes here plus ``floor(|S| / k)`` (a new released class made only of
        rows suppressed here needs ``k`` of them)."""
        released = int((~node.suppressed).sum())
        s = int(node.sizes[node.suppressed].sum())
        most = min(len(node.sizes), released + s // max(k, 1))
        return average_class_size(self.problem.rows, most)

    def _value(self, node: NodeClasses) -> float:
        return average_class_size(self.problem.rows, int((~node.suppressed).sum()))


_METRIC_CLASSES: dict[str, type[Metric]] = {
    "loss": LossMetric,
    "entropy": EntropyMetric,
    "precision": PrecisionMetric,
    "discernibility": DiscernibilityMetric,
    "aecs": AverageClassSizeMetric,
}


def prepare_metric(name: str, problem: SearchProblem) -> Metric:
    """The metric called ``name`` (one of :data:`METRICS`) prepared for ``problem``."""
    try:
        cls = _METRIC_CLASSES[name]
    except KeyError:
        from apps.engine.errors import EngineInputError

        raise EngineInputError(f"unknown metric {name!r} (one of {', '.join(METRICS)})") from None
    return cls(problem)
