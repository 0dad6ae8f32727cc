"""Each step's block as the assessment API shows it: its stored inputs and results (and its
last job), through the step's serializer. The whole assessment (``api.py``) and each step's
action (``api_steps.py``, ``api_deidentify.py``) answer with these."""

from __future__ import annotations

from typing import Any

from apps.assessments import deidentify, steps
from apps.assessments.configuration import DeidConfig
from apps.assessments.hierarchies import hierarchy_preview
from apps.assessments.models import RELEASE_FIELDS, Assessment, HierarchySpec
from apps.assessments.person_dates import dates_state
from apps.assessments.person_suppression import node_suppression_data, release_suppression_data
from apps.assessments.persons import persons_state
from apps.assessments.selectors import overall_risk
from apps.assessments.serializers import (
    ContextSerializer,
    OverallSerializer,
    PersonsSerializer,
    RiskSerializer,
    ThresholdStateSerializer,
    UtilitySerializer,
)
from apps.assessments.serializers_deidentify import (
    ApplySerializer,
    DeidConfigSerializer,
    HierarchySerializer,
    SearchSerializer,
)
from apps.assessments.serializers_release import (
    ReleaseStateSerializer,
)
from apps.assessments.threshold_profiles import offered_profiles
from apps.assessments.withheld import hierarchy_params_for_role
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.models import Job
from apps.jobs.selectors import job_refresh


def _job(job: Job | None) -> Job | None:
    return job_refresh(job) if job is not None else None


def release_data(assessment: Assessment) -> dict[str, Any]:
    fields = (*RELEASE_FIELDS, "effective_release_model")
    threat = assessment.threat_model or {}
    domain = threat.get("pseudonymisation") or {}
    return ReleaseStateSerializer(
        {
            **{f: getattr(assessment, f) for f in fields},
            "recipients": threat.get("recipients") or [],
            "pseudonym_linkers": domain.get("who_can_link", ""),
            "pseudonym_key_kept": domain.get("key_kept", ""),
        }
    ).data


def threshold_data(assessment: Assessment) -> dict[str, Any]:
    answers = assessment.threshold_answers or {}
    return ThresholdStateSerializer(
        {
            "profile": assessment.threshold_profile,
            "mode": assessment.threshold_mode,
            "answers": {key: answers.get(key) for key, _, _ in engine_threshold.INVASION_FACTORS},
            "preset": assessment.threshold_preset,
            "custom_value": assessment.threshold_custom_value,
            "justification": assessment.threshold_justification,
            "result": assessment.threshold_result,
            "profiles": offered_profiles(assessment.effective_release_model),
        }
    ).data


def context_data(assessment: Assessment) -> dict[str, Any]:
    answers = assessment.context_answers or {}
    controls = answers.get("controls") or {}
    motives = answers.get("motives") or {}
    threat = assessment.threat_model or {}
    return ContextSerializer(
        {
            "known_columns": threat.get("known_columns"),
            "target_in_sample": threat.get("target_in_sample") or "known",
            "controls": {k: controls.get(k) for k, _ in engine_context.CONTROLS},
            "motives": {k: motives.get(k) for k, _, _ in engine_context.MOTIVES},
            "prevalence": answers.get("prevalence"),
            "prevalence_source": answers.get("prevalence_source", ""),
            "acquaintances": answers.get("acquaintances") or engine_context.DEFAULT_ACQUAINTANCES,
            "single_sex": bool(answers.get("single_sex", False)),
            "breach_rate": answers.get("breach_rate", engine_context.DEFAULT_BREACH_RATE),
            "breach_source": answers.get("breach_source") or "",
            "release_model": assessment.effective_release_model,
            "result": assessment.context_result,
        }
    ).data


def persons_data(assessment: Assessment, *, suggest: bool = True) -> dict[str, Any]:
    """Step 2's persons block; ``suggest`` reads the data for the suggested levels."""
    state = persons_state(assessment, suggest=suggest)
    state["person_dates"] = dates_state(DeidConfig.from_json(assessment.deid_config))
    return PersonsSerializer(state).data


def deid_config_data(assessment: Assessment) -> dict[str, Any]:
    config = deidentify.deid_config(assessment).to_json()
    return DeidConfigSerializer(
        {**config, "direct_identifiers": deidentify.direct_identifiers(assessment)}
    ).data


def risk_data(assessment: Assessment) -> dict[str, Any]:
    return RiskSerializer(
        {
            "result": assessment.risk_result,
            "job": _job(assessment.risk_job),
            "population": assessment.population or {},
        }
    ).data


def search_data(assessment: Assessment) -> dict[str, Any]:
    return SearchSerializer(
        {
            "result": assessment.search_result,
            "chosen_levels": assessment.chosen_levels,
            "person_suppression": node_suppression_data(
                (assessment.search_result or {}).get("solution")
            ),
            "job": _job(assessment.search_job),
        }
    ).data


def apply_data(assessment: Assessment) -> dict[str, Any]:
    return ApplySerializer(
        {
            "result": assessment.apply_result,
            "job": _job(assessment.apply_job),
            "person_suppression": release_suppression_data(assessment.apply_result),
        }
    ).data


def utility_data(assessment: Assessment) -> dict[str, Any]:
    return UtilitySerializer(
        {"note": assessment.utility_note, "accepted": assessment.utility_accepted}
    ).data


def overall_data(assessment: Assessment) -> dict[str, Any] | None:
    overall = overall_risk(assessment)
    return OverallSerializer(overall).data if overall is not None else None


def steps_data(assessment: Assessment) -> list[dict[str, Any]]:
    data = []
    for state in steps.step_states(assessment):
        step = state["step"]
        data.append(
            {
                "number": step.number,
                "slug": step.slug,
                "title": step.title,
                "guideline": step.guideline,
                "summary": step.summary,
                "state": state["state"],
                "done": state["done"],
                "stale": state["stale"],
            }
        )
    return data


def hierarchy_data(
    assessment: Assessment, spec: HierarchySpec, *, raw_values: bool
) -> dict[str, Any]:
    """One hierarchy as the API shows it. Its value lists (the ARX table, the groups of a
    categorical one) hold every original value: only for a role allowed raw values; the
    others get the levels' groups as the report shows them (``hierarchy_preview``)."""
    params = hierarchy_params_for_role(spec.kind, spec.params, raw_values=raw_values)
    return HierarchySerializer(
        {
            "column": spec.column,
            "kind": spec.kind,
            "params": params,
            "arx_csv": spec.arx_csv if raw_values else None,
            "height": spec.height,
            "level_labels": spec.level_labels,
            "preview": hierarchy_preview(assessment, spec, raw_values=raw_values),
        }
    ).data


def stale_states(assessment: Assessment) -> set[str]:
    return {s["step"].slug for s in steps.step_states(assessment) if s["stale"]}
