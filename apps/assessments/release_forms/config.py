"""The release form of Step 7 as one typed value, and its one parser (page and API).

The PDPC guide (2018, §3.8 aggregation and §3.10 synthetic data) and NIST SP 800-188 (2023,
§4 "data-sharing models") name the forms a release may take besides de-identified records:
*synthetic data* drawn from a model of the records, and *aggregated tables* whose small
cells are hidden.  ``ReleaseForm`` says which one Step 7 writes and with what settings.
It is stored in the Step 7 configuration (``DeidConfig.release_form``) as JSON through
``to_json`` / ``from_json``; ``parse`` reads what the page or the API sends and refuses
with a message naming the field.  What needs the assessment (which columns exist and what
role they have) is checked by ``apps.assessments.release_forms.services``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.core.errors import ApplicationError

MICRODATA = "microdata"
SYNTHETIC = "synthetic"
TABLE = "table"
FORMS = (MICRODATA, SYNTHETIC, TABLE)
FORM_TITLES = {
    MICRODATA: "De-identified records",
    SYNTHETIC: "Synthetic data",
    TABLE: "Aggregated table with complementary suppression",
}

MAX_SYNTHETIC_ROWS = 10_000_000
SYNTHETIC_BINS = (2, 200)
MAX_TABLE_THRESHOLD = 1000


@dataclass(frozen=True)
class SyntheticSettings:
    """The generator's settings (``apps.engine.techniques.synthetic.SyntheticParams``).
    ``columns`` empty: the quasi-identifiers and the sensitive variables; ``secret`` empty:
    the first sensitive variable (else the last column); ``rows`` None: as many as the
    generator learnt from."""

    columns: tuple[str, ...] = ()
    secret: str = ""
    rows: int | None = None
    control_share: float = 0.2
    bins: int = 20

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "secret": self.secret,
            "rows": self.rows,
            "control_share": self.control_share,
            "bins": self.bins,
        }


@dataclass(frozen=True)
class TableSettings:
    """A two-way table (``apps.engine.techniques.aggregation.TableParams``): counts, or sums
    of ``value``; ``threshold`` None: the class size Step 3's threshold asks for."""

    rows: str = ""
    columns: str = ""
    value: str = ""
    threshold: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "columns": self.columns,
            "value": self.value,
            "threshold": self.threshold,
        }


@dataclass(frozen=True)
class ReleaseForm:
    form: str = MICRODATA
    synthetic: SyntheticSettings = field(default_factory=SyntheticSettings)
    table: TableSettings = field(default_factory=TableSettings)

    @property
    def title(self) -> str:
        return FORM_TITLES.get(self.form, self.form)

    def to_json(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "synthetic": self.synthetic.to_json(),
            "table": self.table.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ReleaseForm:
        """As stored; {} (never set) is de-identified microdata. No rule is checked."""
        data = data or {}
        synthetic = dict(data.get("synthetic") or {})
        table = dict(data.get("table") or {})
        return cls(
            form=str(data.get("form") or MICRODATA),
            synthetic=SyntheticSettings(
                columns=tuple(str(c) for c in synthetic.get("columns") or ()),
                secret=str(synthetic.get("secret") or ""),
                rows=synthetic.get("rows"),
                control_share=synthetic.get("control_share", 0.2),
                bins=synthetic.get("bins", 20),
            ),
            table=TableSettings(
                rows=str(table.get("rows") or ""),
                columns=str(table.get("columns") or ""),
                value=str(table.get("value") or ""),
                threshold=table.get("threshold"),
            ),
        )


# --------------------------------------------------------------------------- parsing


def _refuse(message: str, name: str) -> ApplicationError:
    return ApplicationError(message, {"field": name})


def _whole(value: Any, name: str, label: str, low: int, high: int) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _refuse(f"{label} must be a whole number, not {value!r}.", name) from None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _refuse(f"{label} must be a whole number from {low} to {high}, not {value!r}.", name)
    return value


def _share(value: Any, name: str, label: str) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        value = math.nan
    number = float(value)
    if not (math.isfinite(number) and 0.05 <= number <= 0.5):
        raise _refuse(f"{label} is a share from 0.05 to 0.5 (e.g. 0.2), not {value!r}.", name)
    return number


def _name(value: Any, name: str, label: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _refuse(f"{label} is a column name, not {value!r}.", name)
    return value.strip()


def _synthetic(data: Any, base: SyntheticSettings) -> SyntheticSettings:
    if not isinstance(data, Mapping):
        raise _refuse("The synthetic data settings are a mapping.", "synthetic")
    changes: dict[str, Any] = {}
    if "columns" in data:
        columns = data["columns"]
        if isinstance(columns, str | bytes) or not isinstance(columns, list | tuple):
            raise _refuse("The synthesized columns are a list of names.", "synthetic.columns")
        names = [_name(c, "synthetic.columns", "A synthesized column") for c in columns]
        if len(set(names)) != len(names):
            raise _refuse("A synthesized column is listed twice.", "synthetic.columns")
        changes["columns"] = tuple(n for n in names if n)
    if "secret" in data:
        changes["secret"] = _name(data["secret"], "synthetic.secret", "The attacked variable")
    if "rows" in data:
        changes["rows"] = _whole(
            data["rows"], "synthetic.rows", "The number of synthetic records", 1, MAX_SYNTHETIC_ROWS
        )
    if "control_share" in data:
        changes["control_share"] = _share(
            data["control_share"], "synthetic.control_share", "The held-back control share"
        )
    if "bins" in data:
        low, high = SYNTHETIC_BINS
        bins = _whole(data["bins"], "synthetic.bins", "The number of bins", low, high)
        changes["bins"] = 20 if bins is None else bins
    return dataclasses.replace(base, **changes)


def _table(data: Any, base: TableSettings) -> TableSettings:
    if not isinstance(data, Mapping):
        raise _refuse("The table settings are a mapping.", "table")
    changes: dict[str, Any] = {}
    for key, label in (
        ("rows", "The table's row variable"),
        ("columns", "The table's column variable"),
        ("value", "The summed variable"),
    ):
        if key in data:
            changes[key] = _name(data[key], f"table.{key}", label)
    if "threshold" in data:
        changes["threshold"] = _whole(
            data["threshold"], "table.threshold", "The small-cell threshold", 2, MAX_TABLE_THRESHOLD
        )
    return dataclasses.replace(base, **changes)


def parse(data: Mapping[str, Any], *, base: ReleaseForm | None = None) -> ReleaseForm:
    """The release form sent by the page or the API: each part given replaces ``base``'s,
    each left out keeps it. Refused with a message naming the field."""
    if not isinstance(data, Mapping):
        raise _refuse("The release form is a mapping.", "release_form")
    config = base or ReleaseForm()
    changes: dict[str, Any] = {}
    if "form" in data:
        if data["form"] not in FORMS:
            raise _refuse(f"'{data['form']}' is not a release form ({', '.join(FORMS)}).", "form")
        changes["form"] = str(data["form"])
    if "synthetic" in data:
        changes["synthetic"] = _synthetic(data["synthetic"], config.synthetic)
    if "table" in data:
        changes["table"] = _table(data["table"], config.table)
    result = dataclasses.replace(config, **changes)
    if result.table.rows and result.table.rows == result.table.columns:
        raise _refuse("The table's rows and columns must be two different variables.", "table")
    return result


__all__ = [
    "FORMS",
    "FORM_TITLES",
    "MICRODATA",
    "SYNTHETIC",
    "TABLE",
    "ReleaseForm",
    "SyntheticSettings",
    "TableSettings",
    "parse",
]
