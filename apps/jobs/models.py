"""Background work (profiling, risk, search, apply) as rows that pages and the API can follow."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.core.labels import JOB_STATUS_LABELS, label_for
from apps.core.models import OrganizationOwned


class JobStatus(models.TextChoices):
    QUEUED = "queued", JOB_STATUS_LABELS["queued"]
    RUNNING = "running", JOB_STATUS_LABELS["running"]
    SUCCEEDED = "succeeded", JOB_STATUS_LABELS["succeeded"]
    FAILED = "failed", JOB_STATUS_LABELS["failed"]
    CANCELLED = "cancelled", JOB_STATUS_LABELS["cancelled"]


FINISHED = {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}


class Job(OrganizationOwned):
    kind = models.CharField(max_length=40, db_index=True)
    status = models.CharField(
        max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    # What went wrong, in words a member can act on (pages, API, audit trail).
    error = models.TextField(blank=True)
    # The traceback of an unexpected failure: for the log and the site's administrators
    # (Django admin) only, since it shows code, paths and possibly values of the data.
    error_detail = models.TextField(blank=True)
    # What the job works on, as "<app>.<model>:<uuid>" so any app can own jobs.
    subject = models.CharField(max_length=120, blank=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Who runs it: "<Celery node name> <pid of the process running the handler>", set when a
    # worker claims the job, so that a re-delivery of its task can tell whether that worker
    # is gone (apps.jobs.claiming.job_execute).
    worker = models.CharField(max_length=200, blank=True)
    # The Celery queue its messages go to ("" for a job run in-process, never sent): a
    # worker given a message of this queue runs the fairest queued job of the queue
    # (apps.jobs.scheduling), and a live worker sends another when one was lost.
    queue = models.CharField(max_length=200, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "kind", "status"]),
            models.Index(fields=["queue", "status"]),
        ]

    def __str__(self) -> str:
        # The audit trail records it as the object's name: words, never the kind's key.
        return f"{self.kind_label}: job {self.id} ({self.get_status_display().lower()})"

    @property
    def kind_label(self) -> str:
        """What the job does, in words (apps.core.labels)."""
        return label_for("job_kind", self.kind)

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    @property
    def poll_interval_ms(self) -> int:
        """How soon a page showing this unfinished job asks again: a tenth of the time since
        it was queued (or started), between 0.5 s and 5 s. A short job is seen ending within
        half a second; a long one costs a request every 5 s."""
        since = self.started_at or self.created_at
        age = (timezone.now() - since).total_seconds() if since else 0.0
        return int(1000 * round(min(5.0, max(0.5, age / 10)), 1))  # in steps of 0.1 s

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class Worker(models.Model):
    """A running Celery worker, as its heartbeat last described it (apps.jobs.workers):
    which queues it takes, how many jobs at once, and when it was last seen alive."""

    name = models.CharField(max_length=200, unique=True)  # the Celery node name
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    concurrency = models.PositiveSmallIntegerField(default=1)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"worker {self.name} (pid {self.pid})"
