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

from apps.assessments.deidentify import deid_config
from apps.assessments.hierarchies import hierarchies_proposed
from apps.assessments.lattice_advice import suggestions_to_drop
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.persons import refuse_row_search
from apps.assessments.search_job import search_inputs
from apps.assessments.selectors import overall_risk
from apps.engine.search.feasibility import check_feasibility

CACHE_SECONDS = 3600


def lattice_size(heights: list[int], caps: dict[str, int], quasi: list[str]) -> int:
    return math.prod(min(h, caps.get(q, h)) + 1 for q, h in zip(quasi, heights, strict=True))


def _cache_key(assessment: Assessment, specs: dict[str, HierarchySpec]) -> str:
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


def assessment_precheck(assessment: Assessment) -> dict[str, Any]:
    """The guidance shown before a search (module docstring). Not for data with a person
    key: its figures count records, and that search counts persons."""
    refuse_row_search(assessment)
    if assessment.status == "draft":
        specs = hierarchies_proposed(assessment=assessment)
    else:
        specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    key = _cache_key(assessment, specs)
    hit = cache.get(key)
    if hit is not None:
        return dict(hit)
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
