"""Submitting a version for review: what still blocks it, the submission itself, and the
e-mails the review sends.

The review state machine (the decision half is in ``apps.reviews.decisions``):

draft ──submit──▶ submitted ──approve (1 or 2 reviewers)──▶ approved
                      └──────reject──▶ rejected
rejected / approved ──revise──▶ a new draft version (the old one stays readable, frozen)
"""

from __future__ import annotations

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
from apps.assessments.models import Assessment, AssessmentStatus
from apps.assessments.release_columns import column_blockers
from apps.assessments.threat_model import threat_model_blockers
from apps.assessments.threat_model_live import current_threat_model
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.engine.threshold import is_a_sentence
from apps.reviews.models import Submission
from apps.reviews.selectors import intruder_test_status
from apps.reviews.snapshot import snapshot_take


def notify(recipients: list[str], subject: str, body: str) -> None:
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
    notify(
        _reviewer_emails(assessment, exclude=user),
        f"Review requested: {assessment.title} (v{assessment.version})",
        f"{user.get_username()} submitted '{assessment.title}' version {assessment.version} "
        f"for review.\n\nNote: {submission.note}\n",
    )
    return submission
