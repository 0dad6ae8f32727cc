from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.jobs.models import Job


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    """Jobs are started, cancelled and retried through the pages and the API, with their
    rules (who may, and never for a frozen version)."""

    list_display = ("kind", "organization", "status", "progress", "created_at", "finished_at")
    list_filter = ("kind", "status")
