"""An assessment: one planned release of one data set, taken through the method's steps.

Each step's inputs are stored as entered and its computed result as JSON holding every input
and intermediate figure, so a page, the API and the Step 9 report all show the same
derivation without recomputing it.
"""

from typing import Any

from django.conf import settings
from django.db import models

from apps.assessments.configuration import DeidConfig
from apps.core.labels import (
    AGREEMENT_KIND_LABELS,
    ASSESSMENT_STATUS_LABELS,
    HIERARCHY_KIND_LABELS,
    THRESHOLD_MODE_LABELS,
)
from apps.core.models import OrganizationOwned
from apps.datasets.models import ReleaseModel


class FrozenAssessmentError(Exception):
    """A submitted or decided version is immutable."""


class AssessmentStatus(models.TextChoices):
    DRAFT = "draft", ASSESSMENT_STATUS_LABELS["draft"]
    SUBMITTED = "submitted", ASSESSMENT_STATUS_LABELS["submitted"]
    APPROVED = "approved", ASSESSMENT_STATUS_LABELS["approved"]
    REJECTED = "rejected", ASSESSMENT_STATUS_LABELS["rejected"]


class AgreementKind(models.TextChoices):
    NONE = "", AGREEMENT_KIND_LABELS[""]
    DATA_SHARING_AGREEMENT = "dsa", AGREEMENT_KIND_LABELS["dsa"]
    TERMS_OF_USE = "terms_of_use", AGREEMENT_KIND_LABELS["terms_of_use"]


class ThresholdMode(models.TextChoices):
    PROFILE = "profile", THRESHOLD_MODE_LABELS["profile"]
    PRESET = "preset", THRESHOLD_MODE_LABELS["preset"]
    CUSTOM = "custom", THRESHOLD_MODE_LABELS["custom"]


# What the sealed keys-and-linking-tables file of a release is bound to (apps.core.crypto).
SECRETS_BUNDLE_PURPOSE = "release keys and linking tables"


# Step 1's stored fields, in the order the page and the API show them: the one list the
# service, the page, the API and the frozen record of a version read.
RELEASE_FIELDS = (
    "release_model",
    "recipient_organization",
    "recipient_contact",
    "purpose",
    "agreement_kind",
    "agreement_reference",
    "agreement_date",
)


class Assessment(OrganizationOwned):
    # Fields holding sealed values or wrapped keys: `rotate_master_key` re-wraps them.
    SEALED_FIELDS = ("secrets_wrapped_key",)

    dataset = models.ForeignKey(
        "datasets.Dataset", on_delete=models.PROTECT, related_name="assessments"
    )
    title = models.CharField(max_length=200)
    status = models.CharField(
        max_length=12, choices=AssessmentStatus.choices, default=AssessmentStatus.DRAFT
    )
    version = models.PositiveIntegerField(default=1)
    previous = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="next_versions",
        help_text="The frozen version this one was revised from.",
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    # Step 1 — release model and recipient
    release_model = models.CharField(max_length=12, choices=ReleaseModel.choices, blank=True)
    recipient_organization = models.CharField(max_length=200, blank=True)
    recipient_contact = models.CharField(max_length=200, blank=True)
    purpose = models.TextField(blank=True)
    agreement_kind = models.CharField(
        max_length=16, choices=AgreementKind.choices, blank=True, default=AgreementKind.NONE
    )
    agreement_reference = models.CharField(max_length=300, blank=True)
    agreement_date = models.DateField(null=True, blank=True)

    # Step 2 — several rows per person (issue 25): the person key (a direct identifier
    # column of the data set), each quasi-identifier's level ("person": constant within a
    # person; "event": may vary from row to row) and, for Step 4, the adversary power (how
    # many of a person's events an adversary knows: "1"…"10" or "all").
    person_key = models.CharField(max_length=300, blank=True)
    person_levels = models.JSONField(default=dict, blank=True)
    adversary_power = models.CharField(max_length=3, default="3")

    # Steps 1 and 5 — the threat model (issue 28; apps.assessments.threat_model): the named
    # recipients and the pseudonymisation domain (Step 1), the adversary's known columns and
    # whether they know the target is in the data (Step 5).
    threat_model = models.JSONField(default=dict, blank=True)
    # Step 1 — the named pseudonymisation domain whose key this release's keyed pseudonyms
    # share (none: a new key, unlinkable to any other release; apps.assessments.domains).
    pseudonym_domain = models.ForeignKey(
        "assessments.PseudonymDomain",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="assessments",
    )

    # Step 3 — threshold
    threshold_profile = models.CharField(max_length=40, default="ontario_ipc_2016")
    threshold_mode = models.CharField(
        max_length=10, choices=ThresholdMode.choices, default=ThresholdMode.PROFILE
    )
    threshold_answers = models.JSONField(default=dict, blank=True)
    threshold_preset = models.CharField(max_length=40, blank=True)
    threshold_custom_value = models.FloatField(null=True, blank=True)
    threshold_justification = models.TextField(blank=True)
    threshold_result = models.JSONField(null=True, blank=True)

    # Step 4 — data risk (a job)
    risk_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    risk_result = models.JSONField(null=True, blank=True)
    # {} = the release is not a sample of a larger population (the IPC's default: prosecutor
    # risk only); {"region": key} or {"size": N} = estimate population uniqueness too.
    population = models.JSONField(default=dict, blank=True)

    # Step 5 — context risk
    context_answers = models.JSONField(default=dict, blank=True)
    context_result = models.JSONField(null=True, blank=True)

    # Step 7 — de-identification: configuration, search, choice and output
    deid_config = models.JSONField(default=dict, blank=True)
    search_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    search_result = models.JSONField(null=True, blank=True)
    chosen_levels = models.JSONField(null=True, blank=True)
    apply_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    apply_result = models.JSONField(null=True, blank=True)
    output_parquet_path = models.CharField(max_length=300, blank=True)
    output_csv_path = models.CharField(max_length=300, blank=True)
    secrets_path = models.CharField(
        max_length=300, blank=True, help_text="Keys and linking tables, stored apart from the data."
    )
    # The sealed secrets file's data key, wrapped by the master key (apps.core.crypto): kept
    # here rather than in the file so that rotating the master key never rewrites a file
    # whose digest a submission recorded.
    secrets_wrapped_key = models.TextField(blank=True)

    # Step 8 — utility accepted for the purpose
    utility_note = models.TextField(blank=True)
    utility_accepted = models.BooleanField(default=False)

    # Step 7 — why each altered variable was altered as it was (issue 28; the EMA Policy 0070
    # anonymisation report asks for one per variable): column → text
    # (apps.assessments.justifications).
    variable_justifications = models.JSONField(default=dict, blank=True)

    # slug → {"done": bool, "stale": bool, "at": iso time}; see steps.py
    step_state = models.JSONField(default=dict, blank=True)

    # Set on the read-only copies that show a frozen version's record (reviews.snapshot).
    read_only = False

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.read_only:
            raise FrozenAssessmentError(
                "This is the frozen record of a version; it is never saved."
            )
        super().save(*args, **kwargs)

    @property
    def effective_release_model(self) -> str:
        """A non-public release without a recorded data sharing agreement is handled as
        semi-public (IPC guideline, step 1): nothing binds the recipient to the controls."""
        if (
            self.release_model == ReleaseModel.NON_PUBLIC
            and self.agreement_kind != AgreementKind.DATA_SHARING_AGREEMENT
        ):
            return ReleaseModel.SEMI_PUBLIC
        return self.release_model

    @property
    def deid(self) -> DeidConfig:
        """The stored Step 7 configuration, typed, as stored (``deidentify.deid_config``
        completes it with the current direct identifiers)."""
        return DeidConfig.from_json(self.deid_config)


class PseudonymDomain(OrganizationOwned):
    """A named pseudonymisation domain (EDPB Guidelines 01/2025, section 3): releases that
    choose it share one key, so a recipient of several of them can link a person's
    pseudonyms across them. Defined by an organization administrator; the key is sealed
    (envelope-encrypted under the master key, bound to this domain)."""

    SEALED_FIELDS = ("key_sealed",)

    name = models.CharField(max_length=200)
    description = models.TextField(
        blank=True, help_text="Who can link the pseudonyms of this domain's releases."
    )
    key_sealed = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"], name="pseudonym_domain_unique_name"
            )
        ]

    def __str__(self) -> str:
        return self.name


class HierarchySpec(OrganizationOwned):
    """How one quasi-identifier is generalized: the builder's settings and the hierarchy they
    produced, kept in ARX's CSV form so the report and a re-run use exactly the same table."""

    class Kind(models.TextChoices):
        INTERVAL = "interval", HIERARCHY_KIND_LABELS["interval"]
        DATE = "date", HIERARCHY_KIND_LABELS["date"]
        PREFIX = "prefix", HIERARCHY_KIND_LABELS["prefix"]
        CATEGORICAL = "categorical", HIERARCHY_KIND_LABELS["categorical"]
        ARX = "arx", HIERARCHY_KIND_LABELS["arx"]
        SUPPRESS = "suppress", HIERARCHY_KIND_LABELS["suppress"]
        ICD10 = "icd10", HIERARCHY_KIND_LABELS["icd10"]
        ICD9CM = "icd9cm", HIERARCHY_KIND_LABELS["icd9cm"]

    assessment = models.ForeignKey(Assessment, on_delete=models.CASCADE, related_name="hierarchies")
    column = models.CharField(max_length=300)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True)
    arx_csv = models.TextField(help_text="The hierarchy in ARX format (value;level1;…).")
    height = models.PositiveSmallIntegerField()
    level_labels = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assessment", "column"], name="one_hierarchy_per_column"
            )
        ]
        ordering = ["column"]
