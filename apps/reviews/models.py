"""Submission, review decisions, comments and the governance records of a release."""

from typing import Any

from django.conf import settings
from django.db import models

from apps.assessments.steps import step_title
from apps.core.labels import DECISION_LABELS
from apps.core.models import OrganizationOwned


class FrozenError(Exception):
    """A decided thing is immutable."""


class FrozenQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        # Django's ON DELETE SET NULL of a user link is the one update allowed.
        if (
            kwargs
            and all(v is None for v in kwargs.values())
            and set(kwargs)
            <= {
                "taken_by",
                "taken_by_id",
            }
        ):
            return super().update(**kwargs)
        raise FrozenError("A frozen record of an assessment is never changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise FrozenError("A frozen record of an assessment is never deleted.")


class AssessmentSnapshot(OrganizationOwned):
    """Everything a decision on one version rests on, frozen when it was submitted.

    Roles and reasons, threshold and answers, context inputs, hierarchies, the search's
    configuration and result, the applied solution, and the release files with their SHA-256.
    Review pages, the decision and the Step 9 report read this record, never the live rows:
    the data set's roles may change later for new versions, this version stays as submitted.
    Never changed or deleted once taken (``save``/queryset guards here, database triggers in
    ``apps.core.db_guards``); ``sha256`` is the digest of ``content`` as canonical JSON.
    """

    assessment = models.OneToOneField(
        "assessments.Assessment", on_delete=models.PROTECT, related_name="snapshot"
    )
    version = models.PositiveIntegerField()
    content = models.JSONField()
    sha256 = models.CharField(max_length=64)
    taken_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    origin = models.CharField(
        max_length=12,
        default="submission",
        help_text="'submission', or 'migration' for a version decided before snapshots existed.",
    )

    objects = FrozenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Frozen record of version {self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise FrozenError("A frozen record of an assessment is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise FrozenError("A frozen record of an assessment is never deleted.")


class Submission(OrganizationOwned):
    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="submissions"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField()
    # A public release submitted with no motivated-intruder test: the submitter's written
    # reason (issue 28; UK ICO 2025 asks for the test and its results to be recorded).
    intruder_test_waiver = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]


class Decision(models.TextChoices):
    APPROVE = "approve", DECISION_LABELS["approve"]
    REJECT = "reject", DECISION_LABELS["reject"]


class ReviewDecision(OrganizationOwned):
    """One reviewer's decision on one version, with what it rested on."""

    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="decisions"
    )
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="decisions")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.CharField(max_length=8, choices=Decision.choices)
    reasons = models.TextField()
    version = models.PositiveIntegerField()
    final = models.BooleanField(default=False, help_text="This decision settled the submission.")
    figures = models.JSONField(default=dict, help_text="The figures the decision rested on.")
    digests = models.JSONField(default=dict, help_text="SHA-256 of the input and released files.")
    report_sha256 = models.CharField(max_length=64, blank=True)
    snapshot = models.ForeignKey(
        AssessmentSnapshot,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="decisions",
        help_text="The frozen record this decision was taken on.",
    )
    # The audit chain's head right after the decision was recorded: printed in the signed
    # report, so cutting or re-writing the trail afterwards is detected (audit_verify).
    audit_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    audit_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]

    @property
    def outcome(self) -> str:
        return {"approve": "Approved", "reject": "Rejected"}.get(self.decision, self.decision)


class StepComment(OrganizationOwned):
    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="comments"
    )
    step = models.CharField(max_length=30)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    text = models.TextField()

    class Meta:
        ordering = ["created_at"]

    @property
    def step_title(self) -> str:
        """What the comment is on, as people say it ("Step 4: Data risk"), never the slug."""
        return step_title(self.step)


class ReleaseRecord(OrganizationOwned):
    """The release registry: what went to whom, when, under which model and quasi-identifiers."""

    assessment = models.OneToOneField(
        "assessments.Assessment", on_delete=models.PROTECT, related_name="release_record"
    )
    dataset_name = models.CharField(max_length=200)
    recipient = models.CharField(max_length=200)
    release_model = models.CharField(max_length=12)
    quasi_identifiers = models.JSONField(default=list)
    decided_at = models.DateTimeField()
    reassess_on = models.DateField(help_text="When the release must be re-assessed.")
    reassess_months = models.PositiveSmallIntegerField(
        default=12,
        help_text="Months between approval and re-assessment; the default comes from the "
        "release model (apps.reviews.reassessment).",
    )
    reminder_sent_at = models.DateTimeField(null=True, blank=True)
    overlaps = models.JSONField(
        default=list,
        blank=True,
        help_text="Earlier releases to the same recipient sharing quasi-identifiers.",
    )

    class Meta:
        ordering = ["-decided_at"]


class ReassessmentTrigger(OrganizationOwned):
    """Why a released assessment must be re-assessed before its interval ends (ISO/IEC 27559
    §8.3.4, §9.3.2; UK ICO 2025): open until someone records what was done about it."""

    class Kind(models.TextChoices):
        NEW_PUBLIC_DATA = "new_public_data", "New public data"
        NEW_RECIPIENT = "new_recipient", "New recipient"
        INCIDENT = "incident", "Incident"
        SCHEDULED_REVIEW = "scheduled_review", "Scheduled review"

    release = models.ForeignKey(ReleaseRecord, on_delete=models.PROTECT, related_name="triggers")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    occurred_on = models.DateField()
    note = models.TextField()
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.TextField(blank=True)

    class Meta:
        ordering = ["-occurred_on"]


class MotivatedIntruderTest(OrganizationOwned):
    """A motivated-intruder test of a public or semi-public release (El Emam's open-data
    protocol; UK ICO 2025): who tried, which sources, what was searched (``method``), the
    outcome and the date."""

    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="intruder_tests"
    )
    tester = models.CharField(max_length=200)
    tested_on = models.DateField()
    sources = models.TextField(
        blank=True, help_text="The outside sources the tester linked the release to."
    )
    method = models.TextField(help_text="What was searched, and how.")
    outcome = models.TextField()
    re_identified = models.PositiveIntegerField(default=0)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-tested_on"]
