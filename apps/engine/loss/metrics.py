"""Metrics evaluated on a lattice node's classes, with the search's lower bounds.

Each ``*Metric`` applies one formula of :mod:`apps.engine.loss.formulas` to a node's
equivalence classes and gives the search a **lower bound** per node: the value it would
take with nothing suppressed. It is a lower bound because a suppressed row costs each
metric at least as much as the same row released (share 1 >= any share; |E| <= n; ...),
and it is monotone along the lattice (classes merge, values cover more leaves), which
the search uses to prune (ARX does the same with ``getLowerBound``). Knowing that a
node suppresses at least ``S`` rows raises it (``suppression_bounds``); discernibility
and AECS also take numbers measured on evaluated specializations (``lift``), each
bound with its proof in its docstring, all checked against every node of random
problems in ``tests/engine/test_search_properties.py``.

The metrics by what they read: :mod:`.node` (the base class), :mod:`.hierarchy_metrics`
and :mod:`.entropy_metric`, :mod:`.class_metrics`; :func:`prepare_metric` picks one by
name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.errors import EngineInputError
from apps.engine.loss.class_metrics import AverageClassSizeMetric, DiscernibilityMetric
from apps.engine.loss.entropy_metric import EntropyMetric
from apps.engine.loss.formulas import (
    METRICS,
)
from apps.engine.loss.hierarchy_metrics import LossMetric, PrecisionMetric
from apps.engine.loss.node import Metric, NodeClasses

if TYPE_CHECKING:
    from apps.engine.search.problem import SearchProblem

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
        raise EngineInputError(f"unknown metric {name!r} (one of {', '.join(METRICS)})") from None
    return cls(problem)


__all__ = [
    "AverageClassSizeMetric",
    "DiscernibilityMetric",
    "EntropyMetric",
    "LossMetric",
    "Metric",
    "NodeClasses",
    "PrecisionMetric",
    "prepare_metric",
]
