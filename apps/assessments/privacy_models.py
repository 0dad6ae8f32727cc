"""Step 7: ARX's privacy models on sensitive variables, combined with the risk target.

The risk target protects against identity disclosure; it says nothing about what a
recipient learns when everyone in a released group shares a diagnosis (attribute disclosure,
found in Step 4). Step 7 lets the analyst add, per sensitive variable, one of ARX's models —
distinct, entropy or recursive-(c, l) l-diversity, t-closeness with equal or ordered
distance — which every released group must then meet as well; groups failing it are
suppressed like groups too small for the target (``apps.engine.sensitive``).

``DeidConfig.privacy_models`` holds them (``apps.assessments.configuration``) with the
engine's specifications (``distinct-l=2``, ``recursive-cl=3,2``, ``equal-t=0.2``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from apps.assessments.configuration import DeidConfig, PrivacyModel
from apps.assessments.hierarchies import hierarchy_of
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.frame import encode
from apps.engine.search import problem_from_encoded
from apps.engine.search.sensitive import problem_with_sensitive
from apps.engine.sensitive import parse_model

if TYPE_CHECKING:
    from apps.engine.encoded import EncodedData
    from apps.engine.search import SearchProblem
    from apps.engine.search.sensitive import SensitiveTable

# hierarchical-t needs a hierarchy of the sensitive variable, which Step 7 does not build yet.
OFFERED_KINDS = ("distinct-l", "entropy-l", "recursive-cl", "equal-t", "ordered-t")


@dataclass(frozen=True)
class EncodedSearch:
    """The data encoded for the search and the apply step: the problem, the hierarchies'
    lookups and dictionaries, the sensitive table of the privacy models. (The search and
    its pre-check read it as part of ``apps.assessments.search_job.SearchInputs``.)"""

    problem: SearchProblem
    lookups: list[Any]
    dictionaries: list[pl.Series]  # the quasi-identifiers' dictionaries
    sensitive: SensitiveTable | None
    rows: int
    distinct_tuples: int


def models_of(config: DeidConfig) -> list[Any]:
    """The configured models as engine objects (empty when none)."""
    return [parse_model(m.column, m.spec) for m in config.privacy_models]


def spec_from_form(kind: str, l_value: str, c_value: str, t_value: str) -> str:
    """The engine's specification from the Step 7 form's fields ('' = no model)."""
    if not kind:
        return ""
    if kind in ("distinct-l", "entropy-l"):
        return f"{kind}={l_value.strip()}"
    if kind == "recursive-cl":
        return f"recursive-cl={c_value.strip()},{l_value.strip()}"
    return f"{kind}={t_value.strip()}"


def privacy_models_check(
    entries: Sequence[PrivacyModel], *, sensitive: Sequence[str], numeric: Sequence[str]
) -> list[dict[str, str]]:
    """Check the models asked for against the assessment's sensitive variables and return
    them normalized (``column``, ``spec``, ``describe``); a clear message naming the
    variable otherwise."""
    out = []
    seen = set()
    for entry in entries:
        column = entry.column
        spec = entry.spec.strip()
        if not spec:
            continue
        if column not in sensitive:
            raise ApplicationError(
                f"'{column}' is not a sensitive variable: privacy models apply to the variables "
                "classified as sensitive in Step 2.",
                {"column": column},
            )
        if column in seen:
            raise ApplicationError(f"One privacy model per variable ('{column}').")
        seen.add(column)
        try:
            model = parse_model(column, spec)
        except EngineError as exc:
            raise ApplicationError(
                f"Privacy model on '{column}': {exc}", {"column": column}
            ) from None
        if model.kind not in OFFERED_KINDS:
            raise ApplicationError(
                f"'{model.kind}' on '{column}' needs a hierarchy of the sensitive variable, which "
                "Step 7 does not build; use equal or ordered distance.",
                {"column": column},
            )
        if model.needs_numbers and column not in numeric:
            raise ApplicationError(
                f"Ordered-distance t-closeness needs numbers; '{column}' holds text. Use equal "
                "distance.",
                {"column": column},
            )
        out.append({"column": column, "spec": model.spec(), "describe": model.describe()})
    return out


def search_columns(quasi: list[str], config: DeidConfig) -> list[str]:
    """The columns a search encodes: the quasi-identifiers, then the sensitive variables
    under a privacy model."""
    return list(dict.fromkeys([*quasi, *(m.column for m in models_of(config))]))


def encode_for_search(
    data: pl.LazyFrame | pl.DataFrame,
    quasi: list[str],
    hierarchies: dict[str, Any],
    config: DeidConfig,
) -> EncodedSearch:
    """Encode the quasi-identifiers (and the sensitive variables under a model), build the
    hierarchies' lookups and the search problem (with its sensitive table)."""

    try:
        encoded = encode(data, search_columns(quasi, config))
    except EngineError as exc:
        raise ApplicationError(f"Step 7 cannot start: {exc}") from None
    return encoded_for_search(encoded, quasi, hierarchies, config)


def encoded_for_search(
    encoded: EncodedData, quasi: list[str], hierarchies: dict[str, Any], config: DeidConfig
) -> EncodedSearch:
    """`encode_for_search` from a histogram already counted over ``search_columns`` (by
    any engine: a cluster counts it next to the data)."""
    models = models_of(config)
    columns = list(dict.fromkeys(m.column for m in models))
    try:
        dictionaries = list(encoded.dictionaries[: len(quasi)])
        lookups = [
            hierarchy_of(hierarchies[q]).lookup(d) for q, d in zip(quasi, dictionaries, strict=True)
        ]
        if models:
            problem, table = problem_with_sensitive(
                encoded, lookups, columns, models, dictionaries=list(encoded.dictionaries)
            )
        else:
            problem, table = problem_from_encoded(encoded, lookups), None
    except EngineError as exc:
        raise ApplicationError(f"Step 7 cannot start: {exc}") from None
    return EncodedSearch(
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        sensitive=table,
        rows=encoded.rows,
        distinct_tuples=len(problem.counts),
    )


def step4_findings(risk_result: dict[str, Any] | None) -> dict[str, str]:
    """Per sensitive variable, the Step 4 attribute-disclosure finding that motivates a model."""
    out = {}
    for d in (risk_result or {}).get("attribute_disclosure") or []:
        shared = int(d.get("homogeneous_shared_classes") or 0)
        if shared:
            out[d["column"]] = (
                f"Step 4: {shared} group{'s' if shared != 1 else ''} of two or more records "
                f"share one value of {d['column']} ({d.get('homogeneous_shared_rows', 0)} "
                "records): whoever finds someone in such a group learns that value."
            )
        else:
            out[d["column"]] = (
                f"Step 4: the smallest number of distinct {d['column']} values in a group is "
                f"{d.get('smallest_l', 0)}; no group of two or more shares one value."
            )
    return out
