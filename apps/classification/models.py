"""Step 2 of the method: every column of a data set gets exactly one role."""

from django.conf import settings
from django.db import models

from apps.core.labels import VARIABLE_ROLE_LABELS
from apps.core.models import OrganizationOwned


class VariableRole(models.TextChoices):
    DIRECT = "direct", VARIABLE_ROLE_LABELS["direct"]
    QUASI = "quasi", VARIABLE_ROLE_LABELS["quasi"]
    SENSITIVE = "sensitive", VARIABLE_ROLE_LABELS["sensitive"]
    OTHER = "other", VARIABLE_ROLE_LABELS["other"]


# Confidences a suggestion can be taken at without a person's reason (apps.classification
# .detectors: high or medium when values or the name point somewhere, low when nothing does).
CONFIDENT = ("high", "medium")


class Variable(OrganizationOwned):
    dataset = models.ForeignKey(
        "datasets.Dataset", on_delete=models.CASCADE, related_name="variables"
    )
    name = models.CharField(max_length=300)
    position = models.PositiveIntegerField()
    inferred_type = models.CharField(max_length=20)
    profile = models.JSONField(default=dict)
    # The computed suggestion, kept as shown so the record says what the person confirmed.
    suggested_role = models.CharField(max_length=12, choices=VariableRole.choices)
    suggested_reason = models.TextField()
    suggestion_confidence = models.CharField(max_length=10, blank=True)
    suggestion_evidence = models.JSONField(default=list, blank=True)
    # What the detector recognized (age, date_of_birth, postal_code…): picks Step 7 defaults.
    suggestion_kind = models.CharField(max_length=40, blank=True)
    needs_review = models.BooleanField(default=False)
    # The role a person confirmed; empty until then.
    role = models.CharField(max_length=12, choices=VariableRole.choices, blank=True)
    reason = models.TextField(blank=True)
    keep_for_analysis = models.BooleanField(
        default=False,
        help_text="The analysis needs this column. A direct identifier the analysis needs must "
        "be reclassified as a quasi-identifier and generalized (IPC guideline, step 2).",
    )
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["dataset", "position"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="one_variable_per_column")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_confirmed(self) -> bool:
        return bool(self.role)

    @property
    def confident_suggestion(self) -> bool:
        """Whether the suggestion may be confirmed without a reason typed by a person (as bulk
        accept does): a high- or medium-confidence one that leaves no free text in the
        release unread. "Other (low confidence)" means nothing was recognized, which is no
        evidence that the column is harmless."""
        unread_text = self.needs_review and self.suggested_role != VariableRole.DIRECT
        return self.suggestion_confidence in CONFIDENT and not unread_text


class ClassificationChange(OrganizationOwned):
    """Append-only record of every role change: who, when, from → to, and why."""

    variable = models.ForeignKey(Variable, on_delete=models.CASCADE, related_name="changes")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    from_role = models.CharField(max_length=12, blank=True)
    to_role = models.CharField(max_length=12)
    reason = models.TextField()
    keep_for_analysis = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
