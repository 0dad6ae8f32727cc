"""The kinds of job and what each app registers for its own: the handler, the guard, the
hooks on a job's end and on its retry (dotted paths, so that ``jobs`` imports no app above
it), the queue each kind goes to, and the limit on a member's long jobs.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import User
from django.utils.module_loading import import_string

from apps.core.errors import ApplicationError
from apps.jobs.models import Job, JobStatus

logger = logging.getLogger(__name__)

# kind → dotted path of ``handler(job: Job, context: JobContext) -> dict``.
JOB_HANDLERS: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_ingest_handler",
    "ingest-tables": "apps.datasets.table_upload.dataset_tables_ingest_handler",
    "profile": "apps.datasets.services.dataset_profile_handler",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_handler",
    "assessment-risk": "apps.assessments.risk.assessment_risk_handler",
    # person-keyed data in persons (person_search_job, longitudinal_release), else
    # records: an upload's release (release_apply) or a cluster table's (cluster_release)
    "assessment-search": "apps.assessments.person_search_job.assessment_search_dispatch",
    "assessment-apply": "apps.assessments.longitudinal_release.assessment_apply_dispatch",
    "assessment-synthetic": "apps.assessments.release_forms.jobs.assessment_synthetic_handler",
    "assessment-table": "apps.assessments.release_forms.jobs.assessment_table_handler",
    "report": "apps.reports.jobs.report_generate_handler",
}


# kind → dotted path of ``guard(job: Job, action: str) -> None`` that raises ApplicationError
# when the job may not be run, cancelled or retried (``action``): the work of a submitted or
# decided assessment is frozen. Every path goes through ``job_guard``; the handlers check again
# under a row lock before they write.
JOB_GUARDS: dict[str, str] = {
    "assessment-risk": "apps.assessments.drafts.assessment_job_guard",
    "assessment-search": "apps.assessments.drafts.assessment_job_guard",
    "assessment-apply": "apps.assessments.drafts.assessment_job_guard",
    "assessment-synthetic": "apps.assessments.drafts.assessment_job_guard",
    "assessment-table": "apps.assessments.drafts.assessment_job_guard",
    "report": "apps.reports.jobs.report_job_guard",
}


# kind → dotted path of ``hook(job: Job) -> None`` called once the job has ended in any way
# (succeeded, failed, cancelled, worker lost), outside the handler: it must not raise.
JOB_FINISHED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_finished",
    "ingest-tables": "apps.datasets.services.dataset_profile_finished",
    "profile": "apps.datasets.services.dataset_profile_finished",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_finished",
    "assessment-apply": "apps.assessments.release_apply.assessment_apply_finished",
    "assessment-synthetic": "apps.assessments.release_apply.assessment_apply_finished",
    "assessment-table": "apps.assessments.release_apply.assessment_apply_finished",
}
# kind → dotted path of ``hook(old: Job, new: Job) -> None`` called when a job is re-run.
JOB_RETRIED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_retried",
    "ingest-tables": "apps.datasets.services.dataset_profile_retried",
    "profile": "apps.datasets.services.dataset_profile_retried",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_retried",
}


def job_guard(job: Job, action: str) -> None:
    """Raise the kind's ApplicationError when the job may not be run, cancelled or retried
    (``action``) now (``JOB_GUARDS``)."""
    path = JOB_GUARDS.get(job.kind)
    if path:
        import_string(path)(job, action)


def job_notify_finished(job: Job) -> None:
    """Tell the owner of the job's subject that the job has ended (``JOB_FINISHED``)."""
    path = JOB_FINISHED.get(job.kind)
    if not path:
        return
    try:
        import_string(path)(job)
    except Exception:  # a hook must not raise; if one does, the job's end still stands
        logger.exception("job %s: the hook on its end failed", job.id)


# kind → the class of queue its task goes to (``settings.DEIDWEB_JOB_QUEUES``).
JOB_QUEUE_CLASSES: dict[str, str] = {
    "ingest": "heavy",
    "ingest-tables": "heavy",
    "profile": "heavy",
    "cluster-profile": "heavy",
    "assessment-risk": "interactive",
    "assessment-search": "interactive",
    "assessment-apply": "heavy",
    "assessment-synthetic": "heavy",
    "assessment-table": "heavy",
    "report": "heavy",
}


def job_queue(kind: str) -> str:
    """The Celery queue of a job of this kind."""
    queues: dict[str, str] = settings.DEIDWEB_JOB_QUEUES
    return queues[JOB_QUEUE_CLASSES.get(kind, "heavy")]


# Kinds deidweb starts by itself (a decision's report): never refused for a member's limit.
JOB_SYSTEM_KINDS = {"report"}


def _user_limited(kind: str) -> bool:
    return JOB_QUEUE_CLASSES.get(kind, "heavy") == "heavy" and kind not in JOB_SYSTEM_KINDS


def check_user_limit(*, user: User, kind: str) -> None:
    """Refuse a member's long job past ``DEIDWEB_JOB_USER_HEAVY_LIMIT`` of them queued or
    running. The member's row is locked first, so two requests at once cannot both pass."""
    if not _user_limited(kind):
        return
    User.objects.select_for_update().filter(pk=user.pk).first()
    limited = [k for k in JOB_HANDLERS if _user_limited(k)]
    pending = list(
        Job.objects.filter(
            created_by=user, kind__in=limited, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
        ).order_by("created_at")
    )
    limit = int(settings.DEIDWEB_JOB_USER_HEAVY_LIMIT)
    if len(pending) < limit:
        return
    listed = "; ".join(f"{job.kind_label} ({job.get_status_display().lower()})" for job in pending)
    raise ApplicationError(
        f"You already have {len(pending)} long jobs queued or running, the most one person "
        f"may have at once ({limit}): {listed}. Wait until one of them ends, or cancel one, "
        "then start this one again.",
        {"limit": limit, "jobs": [str(job.id) for job in pending]},
        status=429,
    )
