"""Uploaded data sets: stored once as Parquet, profiled by a job."""

from django.conf import settings
from django.db import models

from apps.core.labels import DATASET_STATUS_LABELS, RELEASE_MODEL_LABELS
from apps.core.models import OrganizationOwned


class DatasetStatus(models.TextChoices):
    CONVERTING = "converting", DATASET_STATUS_LABELS["converting"]
    PROFILING = "profiling", DATASET_STATUS_LABELS["profiling"]
    READY = "ready", DATASET_STATUS_LABELS["ready"]
    FAILED = "failed", DATASET_STATUS_LABELS["failed"]


class ReleaseModel(models.TextChoices):
    PUBLIC = "public", RELEASE_MODEL_LABELS["public"]
    SEMI_PUBLIC = "semi_public", RELEASE_MODEL_LABELS["semi_public"]
    NON_PUBLIC = "non_public", RELEASE_MODEL_LABELS["non_public"]


class Dataset(OrganizationOwned):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    original_filename = models.CharField(max_length=255)
    source_format = models.CharField(max_length=20)
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64, help_text="Digest of the file as uploaded.")
    parquet_sha256 = models.CharField(max_length=64)
    parquet_path = models.CharField(max_length=300)
    original_path = models.CharField(max_length=300, blank=True)
    rows = models.BigIntegerField()
    column_count = models.PositiveIntegerField()
    delimiter = models.CharField(max_length=4, blank=True)
    encoding = models.CharField(max_length=40, blank=True)
    sheet = models.CharField(max_length=100, blank=True)
    ingest_warnings = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=12, choices=DatasetStatus.choices, default=DatasetStatus.PROFILING
    )
    profile = models.JSONField(null=True, blank=True)
    profile_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    intended_release_model = models.CharField(
        max_length=12,
        choices=ReleaseModel.choices,
        blank=True,
        help_text="Used for Step 2 warnings until an assessment sets the release model.",
    )
    # A person table and event tables uploaded together (apps.datasets.tables): the person
    # key, each table's name, role, digest, rows, columns and profile, and which rows of the
    # joined long table (the Parquet file above) are whose events. Empty: one table.
    table_structure = models.JSONField(default=dict, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


# The cluster path's models live in a module of their own (issue #27).
from apps.datasets.cluster_models import ClusterTable, SparkConnection  # noqa: E402

__all__ = ["ClusterTable", "Dataset", "DatasetStatus", "ReleaseModel", "SparkConnection"]
