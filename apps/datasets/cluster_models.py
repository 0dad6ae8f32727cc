"""The cluster path's rows (issue #27): an organization's Spark Connect connection, and a
data set that is a table on that cluster instead of an uploaded file.

deidweb keeps no copy of a cluster table: the profile, Step 4 and Step 7 run as Spark
jobs next to the data (``apps.engine.rows``), and the release is written back to the
cluster under the prefix the organization allows (docs/spark.md).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.core.models import OrganizationOwned


def spark_remote_purpose(organization_id: object) -> str:
    """What a sealed Spark Connect address is bound to (apps.core.crypto): it opens only as
    the address of this organization's cluster."""
    return f"organization {organization_id} spark connect address"


class SparkConnection(OrganizationOwned):
    """One per organization: where its cluster is, and where releases may be written."""

    # Fields holding sealed values or wrapped keys: `rotate_master_key` re-wraps them.
    SEALED_FIELDS = ("remote_sealed",)

    remote_sealed = models.TextField(
        help_text="The Spark Connect URL with its token, sealed (apps.core.crypto); never shown."
    )
    release_prefix = models.CharField(
        max_length=500,
        help_text="Releases are written only below this path of the cluster (s3a://…, /lake/…).",
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization"], name="one_spark_connection_per_org")
        ]

    def __str__(self) -> str:
        return f"Spark Connect connection of {self.organization_id}"


class ClusterTable(OrganizationOwned):
    """A data set whose rows stay on the organization's cluster: a catalog table
    (``table:NAME``) or a Parquet/Delta path the cluster reads."""

    dataset = models.OneToOneField(
        "datasets.Dataset", on_delete=models.CASCADE, related_name="cluster_table"
    )
    source = models.CharField(max_length=500)

    def __str__(self) -> str:
        return self.source
