from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.accounts.audited_admin import AuditedAdmin
from apps.datasets.models import Dataset


@admin.register(Dataset)
class DatasetAdmin(AuditedAdmin):
    """A data set never moves to another organization: its assessments, decisions and audit
    trail belong to the one it was uploaded to."""

    list_display = ("name", "organization", "rows", "column_count", "status", "created_at")
    list_filter = ("organization", "status")
    readonly_fields = ("sha256", "parquet_sha256", "parquet_path", "original_path", "profile")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        return (*fields, "organization", "intended_release_model") if obj is not None else fields
