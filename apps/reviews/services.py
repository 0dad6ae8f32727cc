"""The review state machine: submit → approve / reject → (revise as a new version).

draft ──submit──▶ submitted ──approve (1 or 2 reviewers)──▶ approved
                      └──────reject──▶ rejected
rejected / approved ──revise──▶ a new draft version (the old one stays readable, frozen)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership, Role
from apps.accounts.selectors import membership_get
from apps.assessments import steps
from apps.assessments.freetext import identifier_blockers
from apps.assessments.justifications import justification_blockers
from apps.assessments.models import Assessment, AssessmentStatus, HierarchySpec
from apps.assessments.person_suppression import rows_suppressed
from apps.assessments.release_columns import column_blockers
from apps.assessments.services import forget_search
from apps.assessments.services import quasi_identifiers as current_quasi_identifiers
from apps.assessments.threat_model import threat_model_blockers
from apps.assessments.threat_model_live import current_threat_model
from apps.audit.services import audit_record
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.engine.threshold import is_a_sentence
from apps.reviews import hooks
from apps.reviews.models import (
    Decision,
    MotivatedIntruderTest,
    ReleaseRecord,
    ReviewDecision,
    StepComment,
    Submission,
)
from apps.reviews.reassessment import default_interval, reassess_on
from apps.reviews.selectors import INTRUDER_TESTED_MODELS, intruder_test_status
from apps.reviews.snapshot import (
    FROZEN_FIELDS,
    AssessmentRecord,
    assessment_record,
    snapshot_take,
)


def _notify(recipients: list[str], subject: str, body: str) -> None:
    recipients = [r for r in recipients if r]
    if recipients:
        # After commit: a rolled-back submission must not have announced itself.
        transaction.on_commit(
            lambda: send_mail(
                f"[deidweb] {subject}",
                body,
                settings.DEFAULT_FROM_EMAIL,
                recipients,
                fail_silently=True,
            )
        )


def _reviewer_emails(assessment: Assessment, exclude: User | None = None) -> list[str]:
    memberships = Membership.objects.filter(
        organization=assessment.organization, role__in=[Role.REVIEWER, Role.ADMIN]
    ).select_related("user")
    return [m.user.email for m in memberships if exclude is None or m.user_id != exclude.pk]


def submission_blockers(assessment: Assessment) -> list[str]:
    """What stands between this assessment and a submission, in the method's words."""
    blockers = []
    if assessment.status != AssessmentStatus.DRAFT:
        blockers.append(
            f"It is {assessment.get_status_display().lower()}; only a draft can be submitted."
        )
    for state in steps.step_states(assessment):
        step = state["step"]
        if state["stale"]:
            blockers.append(f"Step {step.number} ({step.title}) is stale: recompute it.")
        elif not state["done"]:
            blockers.append(f"Step {step.number} ({step.title}) is not done.")
    if assessment.apply_result is not None and not assessment.apply_result.get("passes"):
        blockers.append("The de-identified file does not meet the risk target (Step 7).")
    blockers += threat_model_blockers(current_threat_model(assessment))
    blockers += identifier_blockers(assessment.apply_result, assessment.deid)
    blockers += column_blockers(assessment.apply_result, assessment.deid)
    blockers += justification_blockers(assessment)
    return blockers


@transaction.atomic
def assessment_submit(
    *, assessment: Assessment, user: User, note: str, intruder_waiver: str = ""
) -> Submission:
    """Submit a complete draft. A public release with no motivated-intruder test recorded
    needs a written reason (at least a sentence), kept with the submission and in the audit
    trail, and printed in the report."""
    assessment = Assessment.objects.select_for_update().get(id=assessment.id)
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError("Only analysts and administrators submit assessments.", status=403)
    blockers = submission_blockers(assessment)
    if blockers:
        raise ApplicationError(
            "The assessment cannot be submitted yet: " + " ".join(blockers),
            {"blockers": blockers},
            status=409,
        )
    if not note.strip():
        raise ApplicationError("Add a note for the reviewer.", {"field": "note"})
    intruder = intruder_test_status(assessment)
    waiver = intruder_waiver.strip() if intruder["expected"] and not intruder["done"] else ""
    if intruder["required"] and not intruder["done"] and not is_a_sentence(waiver):
        raise ApplicationError(
            "No motivated-intruder test is recorded for this public release: record one, or "
            "say in at least one full sentence why the release goes without it (the reviewer "
            "sees the reason and the report prints it).",
            {"field": "intruder_waiver"},
        )
    submission = Submission.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        submitted_by=user,
        note=note.strip(),
        intruder_test_waiver=waiver,
    )
    snapshot = snapshot_take(assessment=assessment, user=user)
    assessment.status = AssessmentStatus.SUBMITTED
    assessment.submitted_at = timezone.now()
    assessment.save(update_fields=["status", "submitted_at", "updated_at"])
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.submit",
        obj=assessment,
        details={
            "version": assessment.version,
            "note": submission.note,
            "snapshot": str(snapshot.id),
            "snapshot_sha256": snapshot.sha256,
            "release_files": {k: f["sha256"] for k, f in snapshot.content["files"].items()},
            "intruder_tests": intruder["tests"],
            **({"intruder_test_waiver": waiver} if waiver else {}),
        },
    )
    _notify(
        _reviewer_emails(assessment, exclude=user),
        f"Review requested: {assessment.title} (v{assessment.version})",
        f"{user.get_username()} submitted '{assessment.title}' version {assessment.version} "
        f"for review.\n\nNote: {submission.note}\n",
    )
    return submission


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
    _notify(
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


def release_overlaps(
    assessment: Assessment, quasi_identifiers: list[str] | None = None
) -> list[dict[str, Any]]:
    """Earlier releases to the same recipient sharing quasi-identifiers with this one: their
    combination could be linked back by the recipient (IPC governance). The quasi-identifiers
    are the data set's current ones unless given (a frozen record's)."""
    recipient = assessment.recipient_organization.strip().lower()
    if not recipient:
        return []
    quasi = set(
        current_quasi_identifiers(assessment) if quasi_identifiers is None else quasi_identifiers
    )
    overlaps = []
    earlier = ReleaseRecord.objects.filter(organization=assessment.organization).exclude(
        assessment__dataset=assessment.dataset, assessment__title=assessment.title
    )
    for record in earlier:
        if record.recipient.strip().lower() != recipient or record.assessment_id == assessment.id:
            continue
        shared = sorted(quasi & set(record.quasi_identifiers))
        if shared:
            overlaps.append(
                {
                    "release": str(record.id),
                    "assessment": str(record.assessment_id),
                    "dataset": record.dataset_name,
                    "decided_at": record.decided_at.isoformat(),
                    "shared_quasi_identifiers": shared,
                }
            )
    return overlaps


def release_register(*, assessment: Assessment, record: AssessmentRecord) -> ReleaseRecord:
    """Enter an approved release in the registry, from its frozen record."""
    now = timezone.now()
    frozen = record.assessment
    quasi = record.quasi_identifiers
    return ReleaseRecord.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        dataset_name=assessment.dataset.name,
        recipient=frozen.recipient_organization or "Public",
        release_model=frozen.effective_release_model,
        quasi_identifiers=quasi,
        decided_at=now,
        reassess_months=default_interval(frozen.effective_release_model),
        reassess_on=reassess_on(now, default_interval(frozen.effective_release_model)),
        overlaps=release_overlaps(frozen, quasi),
    )


def reassessment_reminders(*, today: dt.date | None = None) -> list[ReleaseRecord]:
    """E-mail the organization's analysts and admins about releases due for re-assessment."""
    today = today or timezone.localdate()
    due = list(
        ReleaseRecord.objects.filter(
            reassess_on__lte=today, reminder_sent_at__isnull=True
        ).select_related("organization", "assessment")
    )
    for record in due:
        emails = [
            m.user.email
            for m in Membership.objects.filter(
                organization=record.organization, role__in=[Role.ANALYST, Role.ADMIN]
            ).select_related("user")
        ]
        send_mail(
            f"[deidweb] Re-assessment due: {record.assessment.title}",
            f"The release of '{record.dataset_name}' to {record.recipient} "
            f"(approved {record.decided_at:%Y-%m-%d}) was due for re-assessment on "
            f"{record.reassess_on:%Y-%m-%d}.",
            settings.DEFAULT_FROM_EMAIL,
            [e for e in emails if e],
            fail_silently=True,
        )
        record.reminder_sent_at = timezone.now()
        record.save(update_fields=["reminder_sent_at", "updated_at"])
        audit_record(
            organization=record.organization,
            actor=None,
            action="release.reminder",
            obj=record.assessment,
            details={"reassess_on": record.reassess_on.isoformat()},
        )
    return due


MAX_RE_IDENTIFIED = 2**31 - 1  # PositiveIntegerField


@transaction.atomic
def intruder_test_record(
    *,
    assessment: Assessment,
    user: User,
    tester: str,
    tested_on: dt.date,
    method: str,
    outcome: str,
    re_identified: int = 0,
    sources: str = "",
) -> MotivatedIntruderTest:
    """One entry of the motivated-intruder log: who tried, which sources, what was searched
    (``method``), the outcome and the date."""
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError(
            "Only analysts and administrators record intruder tests.", status=403
        )
    if assessment.effective_release_model not in INTRUDER_TESTED_MODELS:
        raise ApplicationError(
            "A motivated-intruder test is recorded for public and semi-public releases."
        )
    if not (tester.strip() and sources.strip() and method.strip() and outcome.strip()):
        raise ApplicationError(
            "Say who tested, which sources they used, what they searched, and what came of it."
        )
    today = timezone.localdate()
    if tested_on > today:
        raise ApplicationError(
            f"The test date {tested_on.isoformat()} is in the future: record a test once it "
            f"has been done (today is {today.isoformat()}).",
            {"field": "tested_on"},
        )
    # No more people can be found than there are records (the count also fits its column).
    records = assessment.dataset.rows or MAX_RE_IDENTIFIED
    if isinstance(re_identified, bool) or not 0 <= re_identified <= records:
        raise ApplicationError(
            f"The number of people re-identified must be a whole number from 0 to {records} "
            "(the records in the data set).",
            {"field": "re_identified"},
        )
    test = MotivatedIntruderTest.objects.create(
        organization=assessment.organization,
        assessment=assessment,
        tester=tester.strip(),
        tested_on=tested_on,
        sources=sources.strip(),
        method=method.strip(),
        outcome=outcome.strip(),
        re_identified=re_identified,
        recorded_by=user,
    )
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="release.intruder_test",
        obj=assessment,
        details={
            "tester": test.tester,
            "tested_on": tested_on.isoformat(),
            "sources": test.sources,
            "re_identified": re_identified,
        },
    )
    return test
