"""Saving Step 7's release form and starting its job.

Every path (the page, the API) goes through ``release_form_save`` and
``release_form_start``: the version must be a draft (checked under its row lock), the
settings are parsed by the one parser (``config.parse``) and checked against the data set's
variables here, and every change is audited.  The job handlers check the draft again under
the row lock before they write (``jobs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments import steps
from apps.assessments.deidentify import search_target
from apps.assessments.drafts import assessment_editable, assessment_lock_draft
from apps.assessments.models import Assessment
from apps.assessments.persons import refuse_longitudinal_deidentify
from apps.assessments.release_forms.config import (
    MICRODATA,
    SYNTHETIC,
    TABLE,
    ReleaseForm,
    parse,
)
from apps.assessments.selectors import quasi_identifiers, sensitive_columns
from apps.audit.services import audit_record
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.jobs.models import Job
from apps.jobs.queueing import job_create

#: The job kind of each form (``apps.jobs.kinds.JOB_HANDLERS``).
JOB_KINDS = {SYNTHETIC: "assessment-synthetic", TABLE: "assessment-table"}
NUMERIC_TYPES = ("integer", "decimal")


def release_form_of(assessment: Assessment) -> ReleaseForm:
    return assessment.deid.release_form


def _roles(assessment: Assessment) -> dict[str, tuple[str, str]]:
    """Column → (role, inferred type) of the assessment's data set."""
    return {
        name: (role, kind)
        for name, role, kind in Variable.objects.filter(dataset=assessment.dataset).values_list(
            "name", "role", "inferred_type"
        )
    }


def _column(roles: Mapping[str, tuple[str, str]], column: str, field: str, what: str) -> None:
    if column not in roles:
        raise ApplicationError(
            f"{what}: '{column}' is not a column of the data set.", {"field": field}
        )
    if roles[column][0] == "direct":
        raise ApplicationError(
            f"{what}: '{column}' is a direct identifier (Step 2); it never enters a release.",
            {"field": field},
        )


def synthetic_columns(assessment: Assessment, config: ReleaseForm) -> tuple[list[str], str]:
    """The synthesized columns and the attacked (secret) one, defaults filled in."""
    columns = list(config.synthetic.columns) or [
        *quasi_identifiers(assessment),
        *sensitive_columns(assessment),
    ]
    sensitive = [c for c in sensitive_columns(assessment) if c in columns]
    secret = config.synthetic.secret or (
        sensitive[0] if sensitive else columns[-1] if columns else ""
    )
    return columns, secret


def release_form_check(assessment: Assessment, config: ReleaseForm) -> None:
    """The settings against the data set: named columns exist and are not direct
    identifiers; a summed variable is a number."""
    roles = _roles(assessment)
    synthetic = config.synthetic
    for column in synthetic.columns:
        _column(roles, column, "synthetic.columns", "Synthetic data")
    if synthetic.secret:
        _column(roles, synthetic.secret, "synthetic.secret", "Synthetic data")
        if synthetic.columns and synthetic.secret not in synthetic.columns:
            raise ApplicationError(
                f"Synthetic data: the attacked variable '{synthetic.secret}' is not among the "
                "synthesized columns.",
                {"field": "synthetic.secret"},
            )
    table = config.table
    for field, column in (("table.rows", table.rows), ("table.columns", table.columns)):
        if column:
            _column(roles, column, field, "Table")
    if table.value:
        _column(roles, table.value, "table.value", "Table")
        if roles[table.value][1] not in NUMERIC_TYPES:
            raise ApplicationError(
                f"Table: the summed variable '{table.value}' is not a number "
                f"(its type is {roles[table.value][1]}).",
                {"field": "table.value"},
            )


def _ready_check(assessment: Assessment, config: ReleaseForm) -> None:
    """What a job needs beyond valid settings, said before it is queued."""
    if config.form == TABLE and not (config.table.rows and config.table.columns):
        raise ApplicationError(
            "Choose the table's row and column variables first.", {"field": "table"}
        )
    if config.form == SYNTHETIC:
        columns, secret = synthetic_columns(assessment, config)
        if len(columns) < 2 or not secret:
            raise ApplicationError(
                "Synthetic data needs at least two columns (what an intruder knows of a "
                "person, and the variable the attacks try to infer).",
                {"field": "synthetic.columns"},
            )


@transaction.atomic
def release_form_save(
    *, assessment: Assessment, user: User, data: Mapping[str, Any]
) -> ReleaseForm:
    """Parse and store the release form. A change makes a written release stale."""
    assessment_editable(assessment)
    locked = assessment_lock_draft(assessment.id)
    current = locked.deid
    config = parse(data, base=current.release_form)
    release_form_check(locked, config)
    locked.deid_config = current.replace(release_form=config).to_json()
    fields = ["deid_config", "updated_at"]
    if locked.apply_result is not None and config != current.release_form:
        steps.mark_stale(locked, "deidentify")
        fields.append("step_state")
    locked.save(update_fields=fields)
    assessment.deid_config, assessment.step_state = locked.deid_config, locked.step_state
    audit_record(
        organization=locked.organization,
        actor=user,
        action="assessment.deidentify.release_form",
        obj=locked,
        details={"release_form": config.to_json()},
    )
    return config


@transaction.atomic
def release_form_start(*, assessment: Assessment, user: User) -> Job:
    """Queue the job that writes the chosen form's release (the microdata apply job has its
    own start, ``release_apply.assessment_start_apply``)."""
    assessment_editable(assessment)
    refuse_longitudinal_deidentify(assessment)
    config = release_form_of(assessment)
    if config.form == MICRODATA:
        raise ApplicationError(
            "The release form is de-identified records: run the search and apply a solution.",
            {"field": "form"},
            status=409,
        )
    search_target(assessment)  # the data-risk target the attacks are judged against
    release_form_check(assessment, config)
    _ready_check(assessment, config)
    job = job_create(
        organization=assessment.organization,
        kind=JOB_KINDS[config.form],
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id), "release_form": config.to_json()},
        created_by=user,
    )
    # The Step 7 page follows the job that writes the release, whatever its form.
    Assessment.objects.filter(id=assessment.id).update(apply_job=job)
    assessment.apply_job = job
    return job


__all__ = [
    "JOB_KINDS",
    "release_form_check",
    "release_form_of",
    "release_form_save",
    "release_form_start",
    "synthetic_columns",
]
