from django.contrib import admin

from apps.accounts.audited_admin import ReadOnlyAdmin
from apps.jobs.models import Job, Worker


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    """Jobs are started, cancelled and retried through the pages and the API, with their
    rules (who may, and never for a frozen version)."""

    list_display = ("kind", "organization", "status", "progress", "created_at", "finished_at")
    list_filter = ("kind", "status")


@admin.register(Worker)
class WorkerAdmin(ReadOnlyAdmin):
    """The workers as their heartbeats describe them (a row goes when its worker stops)."""

    list_display = ("name", "hostname", "pid", "queues", "concurrency", "started_at", "seen_at")
