"""Step 8's figures of a microdata release that the apply job reads beside the written
file: the measures that compare the released rows with the original ones (attribute
disclosure, small cells, the other columns, identifiers left in text, attack tests), the
before/after distribution of each quasi-identifier for the charts, and the search's own
figures for the applied levels. Shared by an upload's release (`release_apply`) and a
cluster table's (`cluster_release`)."""

from __future__ import annotations

from typing import Any

from apps.assessments.attack_tests import release_attacks
from apps.assessments.configuration import DeidConfig
from apps.assessments.freetext import free_text_columns, release_text_scan
from apps.assessments.models import Assessment
from apps.assessments.release_columns import release_columns_measure
from apps.assessments.release_measures import release_measures
from apps.assessments.selectors import sensitive_columns
from apps.assessments.threat_model_live import current_threat_model
from apps.classification.models import Variable


def release_rows_checks(
    assessment: Assessment,
    data: Any,
    released: Any,
    *,
    quasi: list[str],
    specs: dict[str, Any],
    levels: dict[str, int],
    config: DeidConfig,
    target: dict[str, Any],
    release_size: int,
    technique_results: list[dict[str, Any]],
    progress: Any,
) -> dict[str, Any]:
    """Step 8's measures that read the released rows beside the original ones (frames or
    queries): attribute disclosure and small cells, the other released columns, identifiers
    left in released text, and the attack tests vs control and baseline (issue 28)."""
    progress(80, "Measuring the release: attribute disclosure, small cells", force=True)
    sensitive = sensitive_columns(assessment)
    masking_json = {c: m.to_json() for c, m in config.masking.items()}
    measured = release_measures(
        data,
        released,
        quasi=quasi,
        sensitive=sensitive,
        levels=levels,
        tops={q: specs[q].height for q in quasi},
        masked=[c for c, m in config.masking.items() if m.method != "remove"],
    )
    roles = dict(Variable.objects.filter(dataset=assessment.dataset).values_list("name", "role"))
    progress(83, "Measuring the other released columns", force=True)
    released_columns = release_columns_measure(
        data,
        released,
        quasi=quasi,
        sensitive=sensitive,
        masking=masking_json,
        roles=roles,
        free_text=free_text_columns(assessment),
        release_size=release_size,
        release_model=target["release_model"],
        data_risk_target=float(target["data_risk_target"]),
    )
    progress(85, "Scanning released text for identifiers", force=True)
    text_scan = release_text_scan(data, released, quasi=quasi, masking=masking_json, roles=roles)
    progress(88, "Attack tests: singling out, linkability, inference", force=True)
    attacks = release_attacks(
        data,
        released,
        quasi=quasi,
        hierarchies=specs,
        levels=levels,
        sensitive=sensitive,
        known_columns=current_threat_model(assessment)["known_columns"],
        masked=list(config.masking),
        data_risk_target=float(target["data_risk_target"]),
        seed_key=f"{assessment.id}:{sorted(levels.items())}",
        blanks=any(t["technique"] == "local_suppression" for t in technique_results),
    )
    return {
        **measured,
        **text_scan,
        "released_columns": released_columns,
        "attacks": attacks,
    }


def _generalization_only(assessment: Assessment, levels: dict[str, int]) -> dict[str, Any] | None:
    """The search's own figures for the applied levels (record suppression, no further
    technique): what Step 8 compares the techniques against."""
    search = assessment.search_result or {}
    nodes = [search.get("solution") or {}, *(search.get("pareto") or [])]
    return next((dict(n) for n in nodes if n and n.get("levels") == levels), None)


MAX_CHART_VALUES = 30


def _distributions(problem: Any, levels: tuple[int, ...], released: Any) -> list[dict[str, Any]]:
    """Per quasi-identifier, on the generalized values: records before de-identification
    (original values grouped) and records released (suppressed rows removed). The largest
    groups first, at most 30 of them for a readable chart."""
    import numpy as np

    out = []
    for j, (lookup, level) in enumerate(zip(problem.lookups, levels, strict=True)):
        mapped = lookup.maps[level][problem.codes[j]]
        before = np.bincount(mapped, weights=problem.counts.astype(np.float64)).astype(np.int64)
        after_by_label = {label: n for label, n in released[j].after}
        labels = lookup.labels[level]
        rows = sorted(
            (
                (labels[g], int(before[g]), int(after_by_label.get(labels[g], 0)))
                for g in np.flatnonzero(before)
            ),
            key=lambda r: (-r[1], str(r[0])),
        )
        shown = rows[:MAX_CHART_VALUES]
        out.append(
            {
                "column": lookup.column,
                "level": level,
                "labels": [r[0] if r[0] is not None else "(missing)" for r in shown],
                "before": [r[1] for r in shown],
                "after": [r[2] for r in shown],
                "groups": len(rows),
                "original_values": int(np.count_nonzero(problem.frequencies[j][0])),
                "suppressed_rows": released[j].suppressed_rows,
            }
        )
    return out
