"""Generalization hierarchies (Step 7.2): model, validation, builders, ARX CSV.

Contract: docs/engine-contract.md (hierarchies.py).  Import from here:
`from apps.engine.hierarchies import Hierarchy, GeneralizationLookup, read_arx_csv`.
"""

from apps.engine.hierarchies.arx import (
    format_arx_text,
    parse_arx_text,
    read_arx_csv,
    write_arx_csv,
)
from apps.engine.hierarchies.builders import (
    DATE_LEVELS,
    categorical_hierarchy,
    date_hierarchy,
    interval_hierarchy,
    prefix_hierarchy,
    suppression_hierarchy,
)
from apps.engine.hierarchies.lookups import GeneralizationLookup, LookupBatch, lookup_columns
from apps.engine.hierarchies.model import TOP, Hierarchy, hierarchy_from_rows
from apps.engine.hierarchies.validation import Interval, parse_interval

__all__ = [
    "DATE_LEVELS",
    "TOP",
    "GeneralizationLookup",
    "Hierarchy",
    "Interval",
    "LookupBatch",
    "categorical_hierarchy",
    "date_hierarchy",
    "format_arx_text",
    "hierarchy_from_rows",
    "interval_hierarchy",
    "lookup_columns",
    "parse_arx_text",
    "parse_interval",
    "prefix_hierarchy",
    "read_arx_csv",
    "suppression_hierarchy",
    "write_arx_csv",
]
