"""Writes for Step 2: creating variables with suggestions, and confirming roles."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.audit.services import audit_record
from apps.classification import hooks
from apps.classification.detectors import EXAMPLE_PREFIX, suggest_roles
from apps.classification.models import ClassificationChange, Variable, VariableRole
from apps.core.errors import ApplicationError
from apps.datasets.models import Dataset, ReleaseModel
from apps.datasets.profiling import DatasetProfile


def variables_create_from_profile(
    *, dataset: Dataset, profile: DatasetProfile, sample: pl.DataFrame
) -> list[Variable]:
    """One Variable per column with its computed suggestion.

    Safe to run again (a retried profiling job): suggestions and profiles are refreshed, while
    roles a person already confirmed are left exactly as they were.
    """
    suggestions = {s.column: s for s in suggest_roles(profile, sample)}
    variables = []
    for column in profile.columns:
        suggestion = suggestions.get(column.name)
        column_profile = _column_dict(column)
        defaults = {
            "organization": dataset.organization,
            "position": column.position,
            "inferred_type": column.inferred_type,
            "profile": column_profile,
            "suggested_role": suggestion.role if suggestion else VariableRole.OTHER,
            "suggested_reason": suggestion.reason
            if suggestion
            else "No identifying pattern found.",
            "suggestion_confidence": suggestion.confidence if suggestion else "low",
            "suggestion_evidence": list(suggestion.evidence) if suggestion else [],
            "suggestion_kind": suggestion.kind if suggestion else "",
            "needs_review": bool(suggestion and suggestion.needs_review),
        }
        variable, _ = Variable.objects.update_or_create(
            dataset=dataset, name=column.name, defaults=defaults
        )
        variables.append(variable)
    return variables


def _column_dict(column: object) -> dict[str, object]:
    from dataclasses import asdict, is_dataclass

    if is_dataclass(column) and not isinstance(column, type):
        return asdict(column)
    return dict(vars(column))


@dataclass(frozen=True)
class RoleDecision:
    variable_id: str
    role: str
    reason: str = ""
    keep_for_analysis: bool = False


# The reason recorded when a confident suggestion is confirmed without a typed reason.
ACCEPTED_AS_SUGGESTED = "Accepted as suggested"


def accepted_as_suggested(variable: Variable) -> str:
    """What the record says for a confident suggestion confirmed as it is: that it was the
    suggestion, on what evidence. Sampled text (masked examples of free text) is left out:
    the trail is read by people who may not see raw values."""
    evidence = [
        str(line)
        for line in variable.suggestion_evidence or []
        if not str(line).startswith(EXAMPLE_PREFIX)
    ]
    text = (
        f"{ACCEPTED_AS_SUGGESTED} ({variable.suggestion_confidence} confidence): "
        f"{variable.suggested_reason}"
    )
    return f"{text} Evidence: {'; '.join(evidence)}." if evidence else text


def _typed_reason(reason: str, variable: Variable) -> str:
    """The reason as a person wrote it for this decision. Text that came from the system —
    the suggestion's reason, an "accepted as suggested" record, or the reason recorded for
    the role the column has now (a form or a client sending it back) — argues for the
    present role, not for a change, so it counts as no reason."""
    text = reason.strip()
    copied = {variable.suggested_reason.strip(), variable.reason.strip()} - {""}
    if text in copied or text.startswith(ACCEPTED_AS_SUGGESTED):
        return ""
    return text


def _role_label(role: str) -> str:
    return str(VariableRole(role).label).lower()


@transaction.atomic
def variables_classify(
    *, dataset: Dataset, user: User, decisions: Iterable[RoleDecision]
) -> list[ClassificationChange]:
    """Confirm or change roles. Each real change is recorded with who, when, from → to, why.

    The one guard of Step 2 decisions, for the page, the API and bulk accept alike:

    - confirming a confident suggestion (`Variable.confident_suggestion`) may leave the
      reason empty: the record says it was accepted as suggested, with the evidence;
    - confirming a low-confidence suggestion (or free text left in the release), and
      departing from the suggestion or from a role already confirmed, need a reason typed
      by a person; the suggestion's own text or the reason recorded for the earlier role
      is not one.
    """
    by_id = {str(v.id): v for v in Variable.objects.select_for_update().filter(dataset=dataset)}
    changes = []
    now = timezone.now()
    # Every decision is checked before anything is written, and every problem is reported at
    # once (column → message), so a form shows each missing reason in one round.
    problems: dict[str, str] = {}
    accepted: list[tuple[Variable, RoleDecision, str, bool]] = []
    for decision in decisions:
        variable = by_id.get(str(decision.variable_id))
        if variable is None:
            raise ApplicationError(
                f"Variable {decision.variable_id} is not a column of data set '{dataset.name}'."
            )
        if decision.role not in VariableRole.values:
            problems[variable.name] = f"'{decision.role}' is not a role (column '{variable.name}')."
            continue
        unchanged = (
            variable.role == decision.role
            and variable.keep_for_analysis == decision.keep_for_analysis
            and (not decision.reason.strip() or decision.reason.strip() == variable.reason)
        )
        if unchanged:
            continue
        reason = _typed_reason(decision.reason, variable)
        typed = bool(reason)
        current = variable.role or variable.suggested_role
        if not typed and decision.role != current:
            problems[variable.name] = (
                f"Column '{variable.name}': say why it is {_role_label(decision.role)} "
                f"rather than {_role_label(current)}."
            )
            if decision.reason.strip():
                problems[variable.name] += (
                    " The suggestion's own text, or the reason recorded for the earlier "
                    "role, is not a reason for this change."
                )
            continue
        if not typed and not variable.role:
            if not variable.confident_suggestion:
                why = (
                    "it looks like free text, which a person must read"
                    if variable.needs_review
                    else "the suggestion has low confidence (nothing recognized is no "
                    "evidence that it is harmless)"
                )
                problems[variable.name] = (
                    f"Column '{variable.name}': {why}; say why it is {_role_label(decision.role)}."
                )
                continue
            reason = accepted_as_suggested(variable)
        elif not typed:
            reason = variable.reason  # the same role, only "needed for analysis" changed
        accepted.append((variable, decision, reason, typed))
    if problems:
        first = next(iter(problems))
        raise ApplicationError(
            " ".join(problems.values())
            if len(problems) == 1
            else f"{len(problems)} columns need attention: " + " ".join(problems.values()),
            {
                "column": first,
                "field": "reason",
                "errors": problems,
                "roles": list(VariableRole.values),
            },
        )
    for variable, decision, reason, _ in accepted:
        changes.append(
            ClassificationChange(
                organization=dataset.organization,
                variable=variable,
                changed_by=user,
                from_role=variable.role,
                to_role=decision.role,
                reason=reason,
                keep_for_analysis=decision.keep_for_analysis,
            )
        )
        variable.role = decision.role
        variable.reason = reason
        variable.keep_for_analysis = decision.keep_for_analysis
        variable.confirmed_by = user
        variable.confirmed_at = now
        variable.save(
            update_fields=[
                "role",
                "reason",
                "keep_for_analysis",
                "confirmed_by",
                "confirmed_at",
                "updated_at",
            ]
        )
    ClassificationChange.objects.bulk_create(changes)
    for change, (_, _, _, typed) in zip(changes, accepted, strict=True):
        audit_record(
            organization=dataset.organization,
            actor=user,
            action="classification.change",
            obj=change.variable,
            details={
                "dataset": str(dataset.id),
                "column": change.variable.name,
                "from": change.from_role,
                "to": change.to_role,
                "reason": change.reason,
                # False: no reason was typed (a confident suggestion accepted as suggested,
                # or only "needed for analysis" changed under the reason already recorded).
                "reason_typed": typed,
                "keep_for_analysis": change.keep_for_analysis,
            },
        )
    if changes:
        hooks.roles_changed.send(dataset=dataset)
    return changes


def variables_accept_suggestions(*, dataset: Dataset, user: User) -> list[ClassificationChange]:
    """Confirm every unconfirmed confident suggestion as it is (recorded as accepted as
    suggested, with its evidence). Low-confidence suggestions and free text left in the
    release stay unconfirmed: a person decides them row by row, with a reason."""
    decisions = [
        RoleDecision(variable_id=str(v.id), role=v.suggested_role)
        for v in Variable.objects.filter(dataset=dataset, role="")
        if v.confident_suggestion
    ]
    return variables_classify(dataset=dataset, user=user, decisions=decisions)


@transaction.atomic
def dataset_set_release_model(*, dataset: Dataset, user: User, release_model: str) -> bool:
    """The release model the data set is meant for (it preselects Step 1 of new assessments
    and tunes the suggestions); recorded in the audit trail. Returns whether it changed."""
    if release_model not in ReleaseModel.values and release_model != "":
        raise ApplicationError(
            f"'{release_model}' is not a release model.", {"field": "intended_release_model"}
        )
    locked = Dataset.objects.select_for_update().get(id=dataset.id)
    if locked.intended_release_model == release_model:
        return False
    previous = locked.intended_release_model
    locked.intended_release_model = release_model
    locked.save(update_fields=["intended_release_model", "updated_at"])
    dataset.intended_release_model = release_model
    audit_record(
        organization=dataset.organization,
        actor=user,
        action="dataset.release_model",
        obj=dataset,
        details={"from": previous, "to": release_model},
    )
    return True


def identifier_values_shown(
    *, dataset: Dataset, user: User, via: str, columns: Iterable[str] | None = None
) -> list[str]:
    """Record that raw values (samples, top values, extremes) of direct identifiers were
    shown to ``user`` through ``via`` (a page or an API call). ``columns`` limits it to the
    columns shown; a column counts as a direct identifier when confirmed as one, or
    suggested as one and not yet confirmed. Returns the columns recorded."""
    variables = Variable.objects.filter(dataset=dataset)
    if columns is not None:
        variables = variables.filter(name__in=list(columns))
    direct = [
        v.name
        for v in variables.order_by("position")
        if v.role == VariableRole.DIRECT or (not v.role and v.suggested_role == VariableRole.DIRECT)
    ]
    if direct:
        audit_record(
            organization=dataset.organization,
            actor=user,
            action="dataset.identifier_values_read",
            obj=dataset,
            details={"columns": direct, "via": via},
        )
    return direct
