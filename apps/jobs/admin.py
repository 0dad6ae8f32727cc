from django.contrib import admin

from apps.jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at runtime
    list_display = ("kind", "organization", "status", "progress", "created_at", "finished_at")
    list_filter = ("kind", "status")
