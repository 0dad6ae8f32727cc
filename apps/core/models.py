"""Base model classes shared by every app."""

import uuid

from django.db import models


class BaseModel(models.Model):
    """Public objects use random UUIDs so their identifiers reveal nothing and cannot be guessed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class OrganizationOwned(BaseModel):
    """Every object below an organization carries it directly, so isolation is one filter."""

    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        abstract = True
