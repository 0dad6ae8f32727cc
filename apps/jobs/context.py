"""What a handler is given (:class:`JobContext`): progress reports that also tell it the job
was cancelled or taken over (:class:`JobCancelled`).
"""

from __future__ import annotations

import time

from django.utils import timezone

from apps.jobs.models import Job, JobStatus


class JobCancelled(Exception):
    """Raised inside a handler when the job was cancelled; unwinds the work cleanly."""


class JobContext:
    """Handed to a handler: report progress, learn about cancellation."""

    def __init__(self, job: Job, *, min_interval: float = 1.0) -> None:
        self.job = job
        self.worker = job.worker
        self._min_interval = min_interval
        self._last_write = 0.0

    def progress(self, percent: float, message: str = "", *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < self._min_interval:
            return
        self._last_write = now
        # Only while this worker has it: cancelled, or taken over by another worker after
        # this one was thought lost, the work stops here.
        updated = Job.objects.filter(
            id=self.job.id, status=JobStatus.RUNNING, worker=self.worker
        ).update(
            progress=max(0, min(100, int(percent))),
            message=message[:300],
            heartbeat_at=timezone.now(),
        )
        if not updated:
            raise JobCancelled()

    def check_cancelled(self) -> None:
        if Job.objects.filter(id=self.job.id, status=JobStatus.CANCELLED).exists():
            raise JobCancelled()
