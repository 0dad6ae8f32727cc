"""Writes for an assessment, Steps 1–6 (Steps 7–8 are in ``deidentify.py``).

Every save stores the inputs as entered and the computed result with all its intermediate
figures, then marks the steps that depend on it stale (``steps.mark_changed``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.models import Organization
from apps.assessments import steps
from apps.assessments.models import (
    RELEASE_FIELDS,
    AgreementKind,
    Assessment,
    AssessmentStatus,
    ThresholdMode,
)
from apps.core.errors import ApplicationError
from apps.core.labels import invasion_explanation
from apps.datasets.models import Dataset, DatasetStatus, ReleaseModel
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.engine.errors import EngineError
from apps.jobs.models import Job
from apps.jobs.services import job_create


def _frozen_error(status: str) -> ApplicationError:
    label = AssessmentStatus(status).label.lower()
    return ApplicationError(
        f"This assessment is {label} and frozen; start a new version to change it.",
        {"status": status},
        status=409,
    )


def assessment_editable(assessment: Assessment) -> None:
    """The one check every write to an assessment goes through: only a draft changes.

    The status is read from the database, under a row lock when inside a transaction, so a
    submission that happened after the caller loaded the assessment is seen. (The database
    refuses such a write too: ``apps.core.db_guards``.)"""
    if assessment.read_only:
        raise _frozen_error(assessment.status)
    rows = Assessment.objects.filter(id=assessment.id)
    if transaction.get_connection().in_atomic_block:
        rows = rows.select_for_update()
    status = rows.values_list("status", flat=True).first()
    if status is None:
        raise ApplicationError("The assessment no longer exists.", status=404)
    if status != AssessmentStatus.DRAFT:
        assessment.status = status
        raise _frozen_error(status)


def assessment_lock_draft(assessment_id: Any) -> Assessment:
    """For a job handler about to write its result: lock the assessment's row and return it,
    or refuse when it is no longer a draft (submitted, decided). Call inside a transaction."""
    locked = Assessment.objects.select_for_update().get(id=assessment_id)
    if locked.status != AssessmentStatus.DRAFT:
        raise _frozen_error(locked.status)
    return locked


def assessment_job_guard(job: Job, action: str) -> None:
    """A risk, search or apply job of a submitted or decided version is never run, cancelled
    or retried: its results are what the reviewer decides on."""
    assessment_id = (job.params or {}).get("assessment_id") or job.subject.partition(":")[2]
    status = (
        Assessment.objects.filter(id=assessment_id, organization_id=job.organization_id)
        .values_list("status", flat=True)
        .first()
    )
    if status is None:
        raise ApplicationError("The assessment of this job no longer exists.", status=404)
    if status != AssessmentStatus.DRAFT:
        label = AssessmentStatus(status).label.lower()
        verb = {"run": "run", "cancel": "cancelled", "retry": "retried"}.get(action, action)
        raise ApplicationError(
            f"This job belongs to a version that is {label}: its work is frozen and cannot be "
            f"{verb}. Start a new version to change the assessment.",
            {"status": status},
            status=409,
        )


def _engine(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Engine input errors become rule violations with the engine's own one-line message."""
    try:
        return call(*args, **kwargs)
    except EngineError as exc:
        message = str(exc)
        raise ApplicationError(message[:1].upper() + message[1:]) from None


# Steps whose change moves the target of the Step 7 search (or what it searches over).
SEARCH_INPUTS = ("release", "classification", "threshold", "context-risk")


def forget_search(assessment: Assessment) -> list[str]:
    """The last search answered a question that is no longer asked: drop its solutions (the
    applied output stays, marked stale, until a new one is written)."""
    assessment.search_result = None
    assessment.chosen_levels = None
    return ["search_result", "chosen_levels"]


def assessments_roles_changed(*, dataset: Dataset) -> None:
    """Draft assessments of the data set: results computed on the old roles become stale
    (``classification.hooks.roles_changed``, inside its transaction).

    Only drafts: a submitted or decided version keeps the roles it was submitted with (its
    frozen record); a new version picks up the new roles."""
    for assessment in Assessment.objects.select_for_update().filter(
        dataset=dataset, status=AssessmentStatus.DRAFT
    ):
        steps.mark_changed(assessment, "classification")
        fields = forget_search(assessment)
        assessment.save(update_fields=["step_state", *fields, "updated_at"])


def risk_input_save(
    assessment: Assessment, *, field: str, value: Any, action: str, user: User | None
) -> list[str]:
    """Save one of Step 4's inputs (the population, the adversary power): a measured data
    risk becomes stale, and the change is audited. Returns the stale steps."""
    from apps.audit.services import audit_record

    setattr(assessment, field, value)
    stale = []
    if assessment.risk_result is not None:
        steps.mark_stale(assessment, "data-risk")
        stale.append("data-risk")
    assessment.save(update_fields=[field, "step_state", "updated_at"])
    audit_record(
        organization=assessment.organization,
        actor=user,
        action=action,
        obj=assessment,
        details={"version": assessment.version, field: value, "stale": stale},
    )
    return stale


def _save(
    assessment: Assessment,
    slug: str,
    fields: list[str],
    user: User | None = None,
    extra: dict[str, Any] | None = None,
) -> list[str]:
    """Save a step, mark what depends on it stale, and record the answers in the audit trail."""
    from apps.audit.services import audit_record

    stale = steps.mark_changed(assessment, slug)
    if "deidentify" in stale or slug in SEARCH_INPUTS:
        fields = [*fields, *forget_search(assessment)]
    assessment.save(update_fields=[*fields, "step_state", "updated_at"])
    audit_record(
        organization=assessment.organization,
        actor=user,
        action=f"assessment.{slug.replace('-', '_')}",
        obj=assessment,
        details={
            "version": assessment.version,
            "stale": stale,
            **{f: getattr(assessment, f) for f in fields if not f.endswith("_result")},
            **(extra or {}),
        },
    )
    return stale


@transaction.atomic
def assessment_create(
    *, organization: Organization, dataset: Dataset, user: User, title: str = ""
) -> Assessment:
    if dataset.organization_id != organization.id:
        raise ApplicationError("The data set belongs to another organization.")
    if dataset.status != DatasetStatus.READY:
        raise ApplicationError(
            f"'{dataset.name}' is not profiled yet; wait for its profiling job to finish."
        )
    from apps.audit.services import audit_record

    assessment = Assessment.objects.create(
        organization=organization,
        dataset=dataset,
        title=title.strip() or f"Release of {dataset.name}",
        created_by=user,
        release_model=dataset.intended_release_model,
    )
    audit_record(
        organization=organization,
        actor=user,
        action="assessment.create",
        obj=assessment,
        details={"dataset": str(dataset.id), "title": assessment.title},
    )
    return assessment


# --------------------------------------------------------------------------- Step 1


@transaction.atomic
def assessment_set_release(
    *,
    assessment: Assessment,
    user: User | None = None,
    release_model: str,
    recipient_organization: str = "",
    recipient_contact: str = "",
    purpose: str = "",
    agreement_kind: str = "",
    agreement_reference: str = "",
    agreement_date: dt.date | None = None,
    recipients: list[str] | str | None = None,
    pseudonym_linkers: str = "",
    pseudonym_key_kept: str = "",
) -> list[str]:
    """Step 1. A non-public release without a data sharing agreement is accepted but handled
    as semi-public (``Assessment.effective_release_model``), and the page says so.

    With it, the threat model's Step 1 part (``threat_model.py``): the recipients named one
    by one (none given: the recipient organization) and the pseudonymisation domain."""
    from apps.assessments.threat_model import step1_part

    assessment_editable(assessment)
    if release_model not in ReleaseModel.values:
        raise ApplicationError(
            f"'{release_model}' is not a release model.", {"field": "release_model"}
        )
    if agreement_kind not in AgreementKind.values:
        raise ApplicationError(
            f"'{agreement_kind}' is not a kind of agreement.", {"field": "agreement_kind"}
        )
    if release_model != ReleaseModel.PUBLIC and not recipient_organization.strip():
        raise ApplicationError(
            "Name the recipient: a semi-public or non-public release goes to someone identifiable.",
            {"field": "recipient_organization"},
        )
    if agreement_kind and not agreement_reference.strip():
        raise ApplicationError(
            "Give the agreement's reference (title, number or file) so it can be found again.",
            {"field": "agreement_reference"},
        )
    part = step1_part(
        recipients=recipients, who_can_link=pseudonym_linkers, key_kept=pseudonym_key_kept
    )
    assessment.threat_model = {**(assessment.threat_model or {}), **part}
    assessment.release_model = release_model
    assessment.recipient_organization = recipient_organization.strip()
    assessment.recipient_contact = recipient_contact.strip()
    assessment.purpose = purpose.strip()
    assessment.agreement_kind = agreement_kind
    assessment.agreement_reference = agreement_reference.strip()
    assessment.agreement_date = agreement_date
    fields = [*RELEASE_FIELDS, "threat_model"]
    # The threshold's profile values are read for the release model: recompute them from
    # the stored answers, or drop the result when the profile sets none for the new model.
    dropped: list[str] = []
    if assessment.threshold_result is not None:
        assessment.threshold_result = _threshold_again(assessment)
        fields.append("threshold_result")
        if assessment.threshold_result is None:
            dropped.append("threshold")
    # The context risk depends on the release model: recompute it from the stored answers,
    # or drop it when those answers do not suffice for the new model.
    if assessment.context_result is not None:
        try:
            assessment.context_result = _context_result(assessment, assessment.context_answers)
        except ApplicationError:
            assessment.context_result = None
        fields.append("context_result")
    extra = (
        {"threshold_dropped": f"the {assessment.threshold_profile} profile sets no value for it"}
        if dropped
        else None
    )
    return [*dropped, *_save(assessment, "release", fields, user, extra)]


# --------------------------------------------------------------------------- Step 3


def _threshold_result(
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
    from apps.assessments.threshold_profiles import offered_profiles, profile_record

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


@transaction.atomic
def assessment_set_threshold(
    *,
    assessment: Assessment,
    user: User | None = None,
    profile: str,
    answers: dict[str, Any],
    mode: str = ThresholdMode.PROFILE,
    preset: str = "",
    custom_value: float | None = None,
    justification: str = "",
) -> list[str]:
    """Step 3: the invasion-of-privacy questionnaire scored into a level, the level into a
    threshold by the chosen profile's values for the release model — or a preset, or a
    custom value that needs a written justification (it goes into the report)."""
    assessment_editable(assessment)
    result = _threshold_result(
        assessment,
        profile=profile,
        answers=answers,
        mode=mode,
        preset=preset,
        custom_value=custom_value,
        justification=justification,
    )
    assessment.threshold_profile = profile
    assessment.threshold_answers = answers
    assessment.threshold_mode = mode
    assessment.threshold_preset = preset if mode == ThresholdMode.PRESET else ""
    assessment.threshold_custom_value = custom_value if mode == ThresholdMode.CUSTOM else None
    assessment.threshold_justification = result["justification"]
    assessment.threshold_result = result
    return _save(
        assessment,
        "threshold",
        [
            "threshold_profile",
            "threshold_answers",
            "threshold_mode",
            "threshold_preset",
            "threshold_custom_value",
            "threshold_justification",
            "threshold_result",
        ],
        user,
    )


def _threshold_again(assessment: Assessment) -> dict[str, Any] | None:
    """Step 3's result recomputed from its stored inputs for the current release model, or
    None when the chosen profile sets no value for it (Step 3 must then be done again)."""
    try:
        return _threshold_result(
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


# --------------------------------------------------------------------------- Step 5


def _context_result(assessment: Assessment, answers: dict[str, Any]) -> dict[str, Any]:
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


@transaction.atomic
def assessment_set_context(
    *,
    assessment: Assessment,
    answers: dict[str, Any],
    user: User | None = None,
    known_columns: list[str] | None = None,
    target_in_sample: str = "known",
) -> list[str]:
    """Step 5: the context risk — 1 for public; max(T1, T2, T3) otherwise, T1 fixed at
    low controls × high motives for semi-public (IPC 2016, step 5).

    With it, the threat model's Step 5 part: the columns the adversary knows (None: the
    quasi-identifiers of Step 2, as they stand) and whether they know the target is in the
    data."""
    from apps.assessments.threat_model import step5_part
    from apps.classification.models import Variable

    assessment_editable(assessment)
    columns = list(
        Variable.objects.filter(dataset=assessment.dataset)
        .order_by("position")
        .values_list("name", flat=True)
    )
    part = step5_part(
        columns=columns, known_columns=known_columns, target_in_sample=target_in_sample
    )
    model = {k: v for k, v in (assessment.threat_model or {}).items() if k != "known_columns"}
    assessment.threat_model = {**model, **part}
    assessment.context_result = _context_result(assessment, answers)
    assessment.context_answers = answers
    return _save(
        assessment, "context-risk", ["context_answers", "context_result", "threat_model"], user
    )


# --------------------------------------------------------------------------- Step 4


@transaction.atomic
def assessment_start_risk(*, assessment: Assessment, user: User) -> Job:
    assessment_editable(assessment)
    quasi = quasi_identifiers(assessment)
    if not quasi:
        raise ApplicationError(
            "No confirmed quasi-identifier: finish Step 2 (classification) first.",
            {"step": "classification"},
        )
    return assessment_job_start(assessment=assessment, user=user, kind="risk")


def assessment_job_start(*, assessment: Assessment, user: User, kind: str, **params: Any) -> Job:
    """Start one of an assessment's jobs (``risk``, ``search`` or ``apply``): the job of kind
    ``assessment-<kind>`` on this assessment, recorded in its ``<kind>_job`` field (the
    step's page and API show that one). The caller has checked the step may run."""
    job = job_create(
        organization=assessment.organization,
        kind=f"assessment-{kind}",
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id), **params},
        created_by=user,
    )
    Assessment.objects.filter(id=assessment.id).update(**{f"{kind}_job": job})
    setattr(assessment, f"{kind}_job", job)
    return job


def quasi_identifiers(assessment: Assessment) -> list[str]:
    from apps.classification.models import Variable

    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="quasi")
        .order_by("position")
        .values_list("name", flat=True)
    )


def sensitive_columns(assessment: Assessment) -> list[str]:
    from apps.classification.models import Variable

    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="sensitive")
        .order_by("position")
        .values_list("name", flat=True)
    )


# --------------------------------------------------------------------------- Step 8


@transaction.atomic
def assessment_accept_utility(
    *, assessment: Assessment, note: str, user: User | None = None
) -> list[str]:
    assessment_editable(assessment)
    if assessment.apply_result is None:
        raise ApplicationError(
            "Apply a de-identification (Step 7) first.", {"step": "deidentify"}, status=409
        )
    if not note.strip():
        raise ApplicationError(
            "Say why the remaining utility is acceptable for the purpose.", {"field": "note"}
        )
    assessment.utility_note = note.strip()
    assessment.utility_accepted = True
    return _save(assessment, "utility", ["utility_note", "utility_accepted"], user)
