"""Organizations (data custodians) and the roles their members hold."""

from django.conf import settings
from django.db import models

from apps.core.labels import ROLE_LABELS
from apps.core.models import BaseModel


class Role(models.TextChoices):
    ANALYST = "analyst", ROLE_LABELS["analyst"]
    REVIEWER = "reviewer", ROLE_LABELS["reviewer"]
    ADMIN = "admin", ROLE_LABELS["admin"]


def signing_passphrase_purpose(organization_id: object) -> str:
    """What a sealed signing passphrase is bound to (apps.core.crypto): it opens only as the
    passphrase of this organization."""
    return f"organization {organization_id} signing passphrase"


class Organization(BaseModel):
    # Fields holding sealed values or wrapped keys: `rotate_master_key` re-wraps them.
    SEALED_FIELDS = ("signing_passphrase_sealed",)

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=60, unique=True)
    keep_original_uploads = models.BooleanField(
        default=False,
        help_text="Keep the uploaded file as received, next to its Parquet copy. Off by default: "
        "one copy of personal data is easier to protect than two.",
    )
    upload_limit_bytes = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="Largest upload accepted; empty means the site-wide limit.",
    )
    require_two_approvals = models.BooleanField(
        default=False, help_text="A release needs the approval of two different reviewers."
    )
    reassessment_months = models.PositiveSmallIntegerField(
        default=12, help_text="Months after approval at which a release must be re-assessed."
    )
    # The PKCS#12 bundle (certificate and key) that signs Step 9 reports, in the storage
    # backend, encrypted with a passphrase kept apart from the file: here, itself sealed
    # with a data key of its own that the master key wraps (apps.core.crypto).
    signing_certificate_path = models.CharField(max_length=300, blank=True)
    signing_passphrase_sealed = models.TextField(
        blank=True, help_text="The PKCS#12 passphrase, sealed (apps.core.crypto); never shown."
    )
    # Certificates (PEM) of identities the organization signed with before the current one:
    # reports they signed still verify after a new identity is imported.
    signing_previous_certificates = models.JSONField(default=list, blank=True)
    signing_timestamp_url = models.URLField(
        blank=True,
        help_text="RFC 3161 timestamp authority that countersigns each report's signature "
        "time; empty uses the site's DEIDWEB_TSA_URL, if any.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(BaseModel):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organization"], name="one_membership_per_org")
        ]
        ordering = ["organization__name"]

    def __str__(self) -> str:
        return f"{self.user} — {self.organization} ({self.role})"

    # Capabilities, in the method's terms. Kept here so pages, API and services agree.
    @property
    def can_edit(self) -> bool:
        """Upload data, classify variables and run jobs: the privacy officer's work."""
        return self.role in {Role.ANALYST, Role.ADMIN}

    @property
    def can_see_raw_values(self) -> bool:
        """Sample and top values of columns may contain direct identifiers."""
        return self.role in {Role.ANALYST, Role.ADMIN}

    @property
    def can_review(self) -> bool:
        return self.role in {Role.REVIEWER, Role.ADMIN}

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN


class ApiToken(BaseModel):
    """A key one user gives a script to call the API as them, revocable on its own.

    Only the SHA-256 digest of the key is stored: the key is shown once, when it is made, and
    a copy of the database does not let anyone call the API. A plain hash is enough (no slow
    password hash): the key is 256 random bits, not something a person chose."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the key is for, e.g. 'nightly job'.")
    prefix = models.CharField(
        max_length=16, help_text="The key's first characters, to tell it apart."
    )
    digest = models.CharField(max_length=64, unique=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
