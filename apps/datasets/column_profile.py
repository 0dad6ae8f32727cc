"""What profiling stores: a column's profile (:class:`ColumnProfile`), a data set's
(:class:`DatasetProfile`, with its JSON form), and the types profiling infers
(:mod:`apps.datasets.profiling` says when).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Every type profiling infers (the module's docstring says when); their words for pages are in
# apps.core.labels.
INFERRED_TYPES = (
    "integer",
    "decimal",
    "date",
    "datetime",
    "categorical",
    "free_text",
    "identifier_like",
    "boolean",
    "empty",
)


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    position: int
    inferred_type: str  # one of INFERRED_TYPES
    missing: int
    distinct: int
    unique_share: float  # distinct / non-missing values (0 when the column is empty)
    min: str | None
    max: str | None
    top_values: tuple[tuple[str, int], ...]
    histogram: tuple[tuple[str, int], ...]
    mean_length: float | None
    sample_values: tuple[str, ...]


@dataclass(frozen=True)
class DatasetProfile:
    rows: int
    columns: tuple[ColumnProfile, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: tuples become lists."""
        return {"rows": self.rows, "columns": [_listify(asdict(c)) for c in self.columns]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetProfile:
        columns = []
        for item in data["columns"]:
            columns.append(
                ColumnProfile(
                    name=str(item["name"]),
                    position=int(item["position"]),
                    inferred_type=str(item["inferred_type"]),
                    missing=int(item["missing"]),
                    distinct=int(item["distinct"]),
                    unique_share=float(item["unique_share"]),
                    min=item.get("min"),
                    max=item.get("max"),
                    top_values=tuple((str(v), int(n)) for v, n in item.get("top_values", [])),
                    histogram=tuple((str(v), int(n)) for v, n in item.get("histogram", [])),
                    mean_length=(
                        None if item.get("mean_length") is None else float(item["mean_length"])
                    ),
                    sample_values=tuple(str(v) for v in item.get("sample_values", [])),
                )
            )
        return cls(rows=int(data["rows"]), columns=tuple(columns))

    def column(self, name: str) -> ColumnProfile:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)


def _listify(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_listify(v) for v in value]
    if isinstance(value, dict):
        return {k: _listify(v) for k, v in value.items()}
    return value
