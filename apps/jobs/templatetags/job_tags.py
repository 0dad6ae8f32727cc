"""Template filters of the job panels."""

from __future__ import annotations

from django import template

from apps.jobs.cancel_retry import job_may_cancel
from apps.jobs.models import Job

register = template.Library()


@register.filter
def may_cancel(job: Job) -> bool:
    """Whether the panel of this job offers its Cancel button (its rules allow a cancel)."""
    return job_may_cancel(job)
