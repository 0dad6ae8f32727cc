from django.contrib import admin

from apps.datasets.models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    list_display = ("name", "organization", "rows", "column_count", "status", "created_at")
    list_filter = ("organization", "status")
    readonly_fields = ("sha256", "parquet_sha256", "parquet_path", "original_path", "profile")
