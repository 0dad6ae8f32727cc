"""Step 7 guidance before a search: the lattice's size, an estimate of the search's time on
this machine, and whether a solution can exist at all (naming the caps that block it).

Read-only: it builds the problem from the saved hierarchies, or for a draft the defaults it
would get (``hierarchies_proposed``), and saves nothing. The answer is cached per input
(data, hierarchies, caps, limit, metric, privacy models, target), since it reads and
encodes the data set.

It judges every privacy model the search enforces: the risk target (k, or the strict
average risk) and the models on sensitive variables (l-diversity, t-closeness), through
the same evaluator as the search, so it never says a solution exists where the search
finds none. (Population figures are measured on the release, not enforced by the search.)
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from typing import Any

from django.core.cache import cache

from apps.assessments.hierarchies import hierarchies_proposed
from apps.assessments.models import Assessment, HierarchySpec
from apps.engine.search.feasibility import check_feasibility

CACHE_SECONDS = 3600


def lattice_size(heights: list[int], caps: dict[str, int], quasi: list[str]) -> int:
    return math.prod(min(h, caps.get(q, h)) + 1 for q, h in zip(quasi, heights, strict=True))


def _cache_key(assessment: Assessment, specs: dict[str, HierarchySpec]) -> str:
    from apps.assessments.deidentify import deid_config
    from apps.assessments.selectors import overall_risk

    config = deid_config(assessment)
    overall = overall_risk(assessment) or {}
    inputs = {
        "data": assessment.dataset.parquet_sha256,
        "hierarchies": {
            c: hashlib.sha256(s.arx_csv.encode()).hexdigest() for c, s in specs.items()
        },
        "caps": dict(config.max_levels),
        "limit": config.suppression_limit,
        "metric": config.metric,
        "models": [m.to_json() for m in config.privacy_models],
        "target": [
            overall.get("release_model"),
            overall.get("threshold"),
            overall.get("context_risk"),
        ],
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return f"deidweb:precheck:{digest}"


def suggestions_to_drop(assessment: Assessment, quasi: list[str], heights: list[int]) -> list[str]:
    """Which quasi-identifiers to drop or merge first: those whose removal lowers the data
    risk the most (Step 4's drivers), and the deepest hierarchies (the lattice's size)."""
    risk = assessment.risk_result or {}
    out = []
    for driver in (risk.get("drivers") or [])[:3]:
        if driver.get("reduction", 0) > 0 and driver["left_out"] in quasi:
            out.append(
                f"Without {driver['left_out']} the {risk['risk_measure']} would be "
                f"{driver['data_risk']:.4g} instead of {risk['data_risk']:.4g} (Step 4)."
            )
    deepest = sorted(zip(quasi, heights, strict=True), key=lambda p: -p[1])[:2]
    for column, height in deepest:
        out.append(
            f"{column} has {height + 1} levels: merging its values into fewer groups, or "
            "capping its level, shrinks the lattice the most."
        )
    return out


def assessment_precheck(assessment: Assessment) -> dict[str, Any]:
    """The guidance shown before a search (module docstring)."""
    if assessment.status == "draft":
        specs = hierarchies_proposed(assessment=assessment)
    else:
        specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    key = _cache_key(assessment, specs)
    hit = cache.get(key)
    if hit is not None:
        return dict(hit)
    from apps.assessments.deidentify import search_inputs

    inputs = search_inputs(assessment, specs)
    heights = list(inputs.problem.heights)
    caps = dict(inputs.config.max_levels)
    nodes = lattice_size(heights, caps, inputs.quasi)
    found = check_feasibility(
        inputs.problem,
        inputs.criterion,
        suppression_limit=float(inputs.config.suppression_limit),
        max_levels=caps,
        metric=inputs.config.metric,
        sensitive=inputs.sensitive,
    )
    exact = nodes <= found.max_nodes
    result = {
        **asdict(found),
        "nodes": nodes,
        "exact_search_possible": exact,
        # (the search refuses models on sensitive variables on a lattice this large)
        "models_need_exact_search": inputs.sensitive is not None and not exact,
        "quasi_identifiers": inputs.quasi,
        "heights": dict(zip(inputs.quasi, heights, strict=True)),
        "rows": inputs.rows,
        "distinct_tuples": inputs.distinct_tuples,
        "drop_or_merge": suggestions_to_drop(assessment, inputs.quasi, heights)
        if not exact or not found.feasible
        else [],
    }
    cache.set(key, result, CACHE_SECONDS)
    return result
