"""Step 3's threshold and Step 5's context risk computed from their answers, for the
assessment's release model as handled: the one computation the saves (``services``) and a
change of release model (Step 1, which recomputes both from the stored answers) go through.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from apps.assessments.models import Assessment, ThresholdMode
from apps.assessments.threshold_profiles import offered_profiles, profile_record
from apps.core.errors import ApplicationError
from apps.core.labels import invasion_explanation
from apps.datasets.models import ReleaseModel
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.engine.errors import EngineError


def _engine(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Engine input errors become rule violations with the engine's own one-line message."""
    try:
        return call(*args, **kwargs)
    except EngineError as exc:
        message = str(exc)
        raise ApplicationError(message[:1].upper() + message[1:]) from None


def threshold_result(
    assessment: Assessment,
    *,
    profile: str,
    answers: dict[str, Any],
    mode: str,
    preset: str,
    custom_value: float | None,
    justification: str,
) -> dict[str, Any]:
    """Step 3's result for the assessment's release model (as handled): refused when the
    profile sets no threshold for it (e.g. the EMA's public-release value for a non-public
    release), so every path — page, API, a change of release model — goes through it."""
    model = assessment.effective_release_model
    if not model:
        raise ApplicationError(
            "Choose the release model (Step 1) first: which profiles apply, and which risk "
            "measure their values bound, depend on it.",
            {"step": "release"},
        )
    try:
        record = profile_record(profile, model)
    except EngineError as exc:
        offered = ", ".join(p["name"] for p in offered_profiles(model)) or "none"
        raise ApplicationError(
            f"{str(exc)[:1].upper()}{str(exc)[1:]}. Profiles offered for this release: {offered}.",
            {"field": "profile"},
        ) from None
    invasion = _engine(engine_threshold.invasion_of_privacy, answers)
    from_profile = engine_threshold.threshold_for(invasion.level, profile, release_model=model)
    if mode == ThresholdMode.PROFILE:
        chosen = from_profile
    elif mode == ThresholdMode.PRESET:
        chosen = _engine(engine_threshold.preset_threshold, preset)
        if not justification.strip():
            raise ApplicationError(
                "Using a preset instead of the questionnaire's threshold needs a written "
                "justification.",
                {"field": "justification"},
            )
    elif mode == ThresholdMode.CUSTOM:
        if custom_value is None:
            raise ApplicationError(
                "Enter the custom threshold (a probability, e.g. 0.05).", {"field": "custom_value"}
            )
        chosen = _engine(engine_threshold.custom_threshold, custom_value, justification)
    else:
        raise ApplicationError(f"'{mode}' is not a way to set the threshold.")
    checked = _engine(
        engine_threshold.release_threshold,
        chosen,
        profile=profile,
        rows=assessment.dataset.rows,
        justification=justification,
    )
    invasion_result = {
        "level": invasion.level,
        "total": invasion.total,
        "maximum": invasion.maximum,
        "rule": invasion.rule,
        "explanation": invasion.explanation,
        "scores": [asdict(score) for score in invasion.scores],
    }
    # The API's explanation in words too (the engine's names its factors by their keys).
    invasion_result["explanation"] = invasion_explanation(invasion_result)
    return {
        "value": chosen.value,
        "minimum_class_size": chosen.minimum_class_size,
        "origin": chosen.origin,
        "source": chosen.source,
        "profile": profile,
        "profile_name": record["name"],
        "justification": justification.strip() if mode != ThresholdMode.PROFILE else "",
        "invasion_of_privacy": invasion_result,
        "profile_threshold": from_profile.value,
        "profile_range": list(checked.profile_range),
        "outside_profile_range": checked.outside_profile_range,
        "cell_size_equivalent": from_profile.cell_size_equivalent,
        "table": dict(record["values"]),
        # The release model the values were read for, the measure they bound, and the
        # profile as it was (name, edition, source): the snapshot and report print these.
        "release_model": model,
        "measure": record["measure"],
        "profile_detail": record,
    }


def threshold_again(assessment: Assessment) -> dict[str, Any] | None:
    """Step 3's result recomputed from its stored inputs for the current release model, or
    None when the chosen profile sets no value for it (Step 3 must then be done again)."""
    try:
        return threshold_result(
            assessment,
            profile=assessment.threshold_profile,
            answers=assessment.threshold_answers,
            mode=assessment.threshold_mode,
            preset=assessment.threshold_preset,
            custom_value=assessment.threshold_custom_value,
            justification=assessment.threshold_justification,
        )
    except ApplicationError:
        return None


def context_result(assessment: Assessment, answers: dict[str, Any]) -> dict[str, Any]:
    model = assessment.effective_release_model
    if not model:
        raise ApplicationError("Choose the release model (Step 1) first.")
    profile = assessment.threshold_profile
    controls = motives = None
    if model == ReleaseModel.NON_PUBLIC:
        controls = _engine(
            engine_context.controls_level, answers.get("controls", {}), profile=profile
        )
        motives = _engine(engine_context.motives_level, answers.get("motives", {}))
    prevalence = answers.get("prevalence")
    if model != ReleaseModel.PUBLIC and prevalence is None:
        raise ApplicationError(
            "Give the prevalence of the data set's condition in the population (T2), with its "
            "source; use 1 when everyone in the population is in such a data set.",
            {"field": "prevalence"},
        )
    if model != ReleaseModel.PUBLIC and not str(answers.get("prevalence_source", "")).strip():
        raise ApplicationError("Cite the source of the prevalence.", {"field": "prevalence_source"})
    result = _engine(
        engine_context.context_risk,
        model,
        profile=profile,
        controls=controls.level if controls else None,
        motives=motives.level if motives else None,
        prevalence=float(prevalence) if prevalence is not None else None,
        acquaintances=int(answers.get("acquaintances") or engine_context.DEFAULT_ACQUAINTANCES),
        single_sex=bool(answers.get("single_sex", False)),
        breach_rate=float(answers.get("breach_rate", engine_context.DEFAULT_BREACH_RATE)),
        breach_source=answers.get("breach_source") or None,
    )
    return {
        "release_model": model,
        "declared_release_model": assessment.release_model,
        "profile": profile,
        "value": result.value,
        "deciding_attack": result.deciding_attack,
        "explanation": result.explanation,
        "insider": asdict(result.insider) if result.insider else None,
        "acquaintance": asdict(result.acquaintance) if result.acquaintance else None,
        "breach": asdict(result.breach) if result.breach else None,
        "controls": asdict(controls) if controls else None,
        "motives": asdict(motives) if motives else None,
        "prevalence_source": answers.get("prevalence_source", ""),
    }
