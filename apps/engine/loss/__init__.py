"""Information loss and utility (METHOD.md Step 8): formulas and node metrics.

``formulas`` holds one documented function per formula (Iyengar 2002, El Emam et al.
2009, Sweeney 2002, ...); ``metrics`` applies them to a lattice node's classes for the
search, with lower bounds.
"""

from apps.engine.loss.formulas import (
    METRICS,
    MetricName,
    average_class_size,
    cell_missingness,
    discernibility_value,
    entropy_percent,
    generalization_entropy,
    geometric_mean_loss,
    loss_of_dimension,
    precision_value,
    record_missingness,
    suppression_entropy,
    truncate_like_arx,
)
from apps.engine.loss.metrics import (
    AverageClassSizeMetric,
    DiscernibilityMetric,
    EntropyMetric,
    LossMetric,
    Metric,
    NodeClasses,
    PrecisionMetric,
    prepare_metric,
)

__all__ = [
    "METRICS",
    "AverageClassSizeMetric",
    "DiscernibilityMetric",
    "EntropyMetric",
    "LossMetric",
    "Metric",
    "MetricName",
    "NodeClasses",
    "PrecisionMetric",
    "average_class_size",
    "cell_missingness",
    "discernibility_value",
    "entropy_percent",
    "generalization_entropy",
    "geometric_mean_loss",
    "loss_of_dimension",
    "precision_value",
    "prepare_metric",
    "record_missingness",
    "suppression_entropy",
    "truncate_like_arx",
]
