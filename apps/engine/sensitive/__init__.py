"""Privacy models on sensitive columns: l-diversity and t-closeness (ARX's definitions).

``models`` parses and describes them, ``formulas`` defines each on one class (plain
Python), ``kernels`` judges a node's classes in compiled code, ``column`` prepares a
sensitive column (overall counts, numeric order, hierarchy). The search uses them through
``apps.engine.search.sensitive``.
"""

from apps.engine.sensitive.column import SensitiveColumn, sensitive_column
from apps.engine.sensitive.models import MODEL_KINDS, SensitiveModel, parse_model

__all__ = ["MODEL_KINDS", "SensitiveColumn", "SensitiveModel", "parse_model", "sensitive_column"]
