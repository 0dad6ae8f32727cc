"""Deciding on a submitted version, commenting on it while it is under review, and revising
a decided version as a new draft (the state machine is drawn in ``apps.reviews.submissions``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.accounts.selectors import membership_get
from apps.assessments import steps
from apps.assessments.models import Assessment, AssessmentStatus, HierarchySpec
from apps.assessments.person_suppression import rows_suppressed
from apps.assessments.services import forget_search
from apps.audit.services import audit_record
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.reviews import hooks
from apps.reviews.models import Decision, ReviewDecision, StepComment
from apps.reviews.registry import release_register
from apps.reviews.snapshot import FROZEN_FIELDS, AssessmentRecord, assessment_record
from apps.reviews.submissions import notify


def decision_figures(record: AssessmentRecord) -> dict[str, Any]:
    """The figures a decision rests on, read from the version's frozen record."""
    assessment = record.assessment
    overall = record.overall or {}
    applied = assessment.apply_result or {}
    after = (applied.get("risk_after") or {}).get("data_risk")
    context = overall.get("context_risk")
    return {
        "release_model": assessment.effective_release_model,
        "threshold": overall.get("threshold"),
        "context_risk": context,
        "data_risk_target": overall.get("data_risk_target"),
        "data_risk_before": (applied.get("risk_before") or {}).get("data_risk"),
        "data_risk_after": after,
        "overall_risk_after": after * context
        if after is not None and context is not None
        else None,
        "passes": applied.get("passes"),
        "rows_in": applied.get("rows_in"),
        "suppressed_rows": rows_suppressed(applied),
        "entropy_percent": (applied.get("utility") or {}).get("entropy_percent"),
        "levels": applied.get("levels"),
        "quasi_identifiers": applied.get("quasi_identifiers"),
    }


@transaction.atomic
def review_decide(
    *, assessment: Assessment, reviewer: User, decision: str, reasons: str
) -> ReviewDecision:
    assessment = Assessment.objects.select_for_update().get(id=assessment.id)
    membership = membership_get(user=reviewer, organization=assessment.organization)
    if not membership.can_review:
        raise ApplicationError("Only reviewers and administrators decide on a release.", status=403)
    if assessment.status != AssessmentStatus.SUBMITTED:
        raise ApplicationError(
            "Only a submitted assessment can be decided; this one is "
            f"{assessment.get_status_display().lower()}.",
            status=409,
        )
    if decision not in Decision.values:
        raise ApplicationError(f"'{decision}' is not a decision (approve or reject).")
    if not reasons.strip():
        raise ApplicationError(
            "Give the reasons for the decision; they go into the report.", {"field": "reasons"}
        )
    submission = assessment.submissions.order_by("-created_at").first()
    assert submission is not None
    if submission.submitted_by_id == reviewer.pk:
        raise ApplicationError(
            "You submitted this assessment: another reviewer must decide on it.", status=403
        )
    if submission.decisions.filter(reviewer=reviewer).exists():
        raise ApplicationError("You have already decided on this submission.", status=409)
    approvals_needed = 2 if assessment.organization.require_two_approvals else 1
    earlier_approvals = submission.decisions.filter(decision=Decision.APPROVE).count()
    final = decision == Decision.REJECT or earlier_approvals + 1 >= approvals_needed
    frozen = assessment_record(assessment)
    record = ReviewDecision.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        submission=submission,
        reviewer=reviewer,
        decision=decision,
        reasons=reasons.strip(),
        version=assessment.version,
        final=final,
        figures=decision_figures(frozen),
        digests=frozen.digests(),
        snapshot=frozen.snapshot,
    )
    event = audit_record(
        organization=assessment.organization,
        actor=reviewer,
        action="review.decision",
        obj=assessment,
        details={
            "decision": decision,
            "final": final,
            "version": assessment.version,
            "reasons": record.reasons,
            "snapshot_sha256": frozen.snapshot.sha256 if frozen.snapshot else "",
            "digests": record.digests,
        },
    )
    # The chain's head right after the decision: the signed report prints it, so the trail
    # cannot later be cut back or re-written past this point unnoticed.
    record.audit_sequence, record.audit_hash = event.sequence, event.hash
    record.save(update_fields=["audit_sequence", "audit_hash", "updated_at"])
    if final:
        assessment.status = (
            AssessmentStatus.APPROVED if decision == Decision.APPROVE else AssessmentStatus.REJECTED
        )
        assessment.decided_at = timezone.now()
        assessment.save(update_fields=["status", "decided_at", "updated_at"])
        if decision == Decision.APPROVE:
            release_register(assessment=assessment, record=frozen)
        hooks.decision_final.send(decision=record, user=reviewer)
    submitter = submission.submitted_by
    outcome = {"approve": "approved", "reject": "rejected"}[decision]
    if not final:
        outcome = f"approved by {reviewer.get_username()}; a second approval is required"
    notify(
        [getattr(submitter, "email", "")],
        f"{assessment.title} (v{assessment.version}) {outcome.split(';')[0]}",
        f"{reviewer.get_username()} {outcome} '{assessment.title}' version "
        f"{assessment.version}.\n\nReasons: {record.reasons}\n",
    )
    return record


@transaction.atomic
def step_comment_add(*, assessment: Assessment, author: User, step: str, text: str) -> StepComment:
    if not membership_get(user=author, organization=assessment.organization).can_review:
        raise ApplicationError("Only reviewers and administrators comment on a review.", status=403)
    if step not in steps.BY_SLUG and step != "general":
        raise ApplicationError(f"'{step}' is not a step.")
    locked_status = (
        Assessment.objects.select_for_update()
        .filter(id=assessment.id)
        .values_list("status", flat=True)
        .first()
    )
    if locked_status != AssessmentStatus.SUBMITTED:
        raise ApplicationError(
            "Comments are made while a version is under review; this one is "
            f"{AssessmentStatus(locked_status or 'draft').label.lower()}. Comment on the newer "
            "version.",
            status=409,
        )
    if not text.strip():
        raise ApplicationError("The comment is empty.", {"field": "text"})
    comment = StepComment.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        step=step,
        author=author,
        text=text.strip(),
    )
    audit_record(
        organization=assessment.organization,
        actor=author,
        action="review.comment",
        obj=assessment,
        details={"step": step, "text": comment.text},
    )
    return comment


# What a new version starts from: the frozen fields but its own number, with the data set it
# reads and the key that opens its sealed secrets (neither is part of the decision's record).
_COPIED = (
    "dataset_id",
    *(name for name in FROZEN_FIELDS if name != "version"),
    "secrets_wrapped_key",
)


@transaction.atomic
def assessment_revise(*, assessment: Assessment, user: User) -> Assessment:
    """A new draft version with everything the frozen one had; the old one stays as it was."""
    assessment = Assessment.objects.select_for_update().get(id=assessment.id)
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError("Only analysts and administrators revise assessments.", status=403)
    if assessment.status not in (AssessmentStatus.REJECTED, AssessmentStatus.APPROVED):
        raise ApplicationError(
            "Only a rejected or approved assessment is revised as a new version.", status=409
        )
    if assessment.next_versions.exists():
        raise ApplicationError(
            "This version was already revised; open the newer version.", status=409
        )
    new = Assessment(
        organization=assessment.organization,
        created_by=user,
        previous=assessment,
        version=assessment.version + 1,
        status=AssessmentStatus.DRAFT,
        **{field: getattr(assessment, field) for field in _COPIED},
    )
    new.save()
    HierarchySpec.objects.bulk_create(
        [
            HierarchySpec(
                organization=spec.organization,
                assessment=new,
                column=spec.column,
                kind=spec.kind,
                params=spec.params,
                arx_csv=spec.arx_csv,
                height=spec.height,
                level_labels=spec.level_labels,
            )
            for spec in assessment.hierarchies.all()
        ]
    )
    new.utility_accepted = False  # a new version's utility must be confirmed again
    fields = ["utility_accepted"]
    # The new version picks up the data set's roles as they are now; results computed on the
    # roles the old version was decided with are stale when those roles changed since.
    snapshot = getattr(assessment, "snapshot", None)
    if snapshot is not None and _roles(snapshot.content["variables"]) != _live_roles(assessment):
        steps.mark_changed(new, "classification")
        fields += ["step_state", *forget_search(new)]
    new.save(update_fields=fields)
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.revise",
        obj=new,
        details={
            "from_version": assessment.version,
            "version": new.version,
            "previous": str(assessment.id),
        },
    )
    return new


def _roles(variables: list[dict[str, Any]]) -> dict[str, tuple[str, bool]]:
    return {v["name"]: (v["role"], bool(v["keep_for_analysis"])) for v in variables}


def _live_roles(assessment: Assessment) -> dict[str, tuple[str, bool]]:
    return {
        name: (role, keep)
        for name, role, keep in Variable.objects.filter(
            dataset_id=assessment.dataset_id
        ).values_list("name", "role", "keep_for_analysis")
    }
