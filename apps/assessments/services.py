"""Writes for an assessment's steps: creating it, Steps 1, 3 and 5, starting its jobs
(Step 4's risk), accepting Step 8's utility (Step 7 is in ``deidentify.py``).

Every write first checks that the assessment is a draft (``drafts.py``). Every save stores
the inputs as entered and the computed result with all its intermediate figures, then marks
the steps that depend on it stale (``steps.mark_changed``). The results of Steps 3 and 5
are computed in ``step_results.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.models import Organization
from apps.assessments import steps
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import (
    RELEASE_FIELDS,
    AgreementKind,
    Assessment,
    AssessmentStatus,
    ThresholdMode,
)
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.step_results import context_result, threshold_again, threshold_result
from apps.assessments.threat_model import step1_part, step5_part
from apps.audit.services import audit_record
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets.models import Dataset, DatasetStatus, ReleaseModel
from apps.jobs.models import Job
from apps.jobs.queueing import job_create

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
        assessment.threshold_result = threshold_again(assessment)
        fields.append("threshold_result")
        if assessment.threshold_result is None:
            dropped.append("threshold")
    # The context risk depends on the release model: recompute it from the stored answers,
    # or drop it when those answers do not suffice for the new model.
    if assessment.context_result is not None:
        try:
            assessment.context_result = context_result(assessment, assessment.context_answers)
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
    result = threshold_result(
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


# --------------------------------------------------------------------------- Step 5


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
    assessment.context_result = context_result(assessment, answers)
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
