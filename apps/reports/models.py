"""The signed Step 9 report of a review decision (IPC 2016, step 9)."""

from django.db import models

from apps.core.models import OrganizationOwned


class Report(OrganizationOwned):
    """One signed PDF per review decision, stored in the storage backend.

    ``sha256`` is the digest of the signed file as stored; the decision carries the same digest
    (``ReviewDecision.report_sha256``) so a copy handed to anyone can be matched to it."""

    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="reports"
    )
    decision = models.OneToOneField(
        "reviews.ReviewDecision", on_delete=models.CASCADE, related_name="report"
    )
    pdf_path = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64, db_index=True)
    size_bytes = models.BigIntegerField()
    signer = models.CharField(max_length=200, help_text="Subject of the signing certificate.")
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Report for {self.assessment} v{self.decision.version}"


class RecipientSummary(OrganizationOwned):
    """The signed recipient summary of an approved release and its JSON twin (issue 28;
    ``apps.reports.summary``), stored beside the report. ``sha256`` is the signed PDF's
    digest, ``json_sha256`` the twin's, which the PDF prints and carries."""

    assessment = models.ForeignKey(
        "assessments.Assessment", on_delete=models.CASCADE, related_name="recipient_summaries"
    )
    decision = models.OneToOneField(
        "reviews.ReviewDecision", on_delete=models.CASCADE, related_name="recipient_summary"
    )
    pdf_path = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64, db_index=True)
    size_bytes = models.BigIntegerField()
    json_path = models.CharField(max_length=300)
    json_sha256 = models.CharField(max_length=64, db_index=True)
    json_size_bytes = models.BigIntegerField()
    signer = models.CharField(max_length=200)
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Recipient summary for {self.assessment} v{self.decision.version}"
