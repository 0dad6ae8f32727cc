"""Worker heartbeats, and what live workers do for the jobs of dead ones.

Each worker, once ready, runs a thread that every ``DEIDWEB_WORKER_HEARTBEAT_SECONDS``
records it in the ``Worker`` table (its queues, how many jobs it runs at once, when it was
seen) and then looks after every worker's jobs (``jobs_recover``):

- a running job whose worker is gone (its process ended on this machine, or its heartbeat
  stopped for ``DEIDWEB_WORKER_LOST_SECONDS``) is queued again at once, with a new message,
  until it has been started ``DEIDWEB_JOB_MAX_ATTEMPTS`` times, then fails with a message
  (before, such a job showed "running" for ten minutes);
- the messages a dead worker had reserved die with it on the embedded broker (and come
  back only hours later on Redis): its queued jobs get new messages at once;
- a job still queued after ``DEIDWEB_JOB_REDISPATCH_SECONDS`` while this worker has a free
  slot on its queue has lost its message (a worker that hung with it): it gets a new one.

Extra messages are harmless: a message whose job has already run runs the next queued one
of its queue, or nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta
from typing import Any

from celery import signals
from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from apps.jobs.kinds import job_queue
from apps.jobs.liveness import WorkerState, worker_state
from apps.jobs.lost_jobs import job_fail_lost
from apps.jobs.messages import job_lost_again_error
from apps.jobs.models import Job, JobStatus, Worker
from apps.jobs.queueing import job_send
from apps.jobs.running import job_audit

logger = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """The thread that keeps a worker's row fresh and looks after lost jobs."""

    def __init__(self, *, name: str, queues: list[str], concurrency: int) -> None:
        super().__init__(name="deidweb-heartbeat", daemon=True)
        self.node, self.queues, self.concurrency = name, queues, concurrency
        self.started_at = timezone.now()
        self.stopping = threading.Event()

    def run(self) -> None:
        interval = int(settings.DEIDWEB_WORKER_HEARTBEAT_SECONDS)
        first = True
        while first or not self.stopping.wait(interval):
            try:
                if first:
                    worker_replaced(self.node)
                worker_beat(
                    name=self.node,
                    queues=self.queues,
                    concurrency=self.concurrency,
                    started_at=self.started_at,
                )
                jobs_recover(node=self.node, queues=self.queues, concurrency=self.concurrency)
                first = False
            except Exception:  # the heartbeat must go on through a busy or absent database
                logger.exception("worker heartbeat failed")
            finally:
                close_old_connections()

    def stop(self) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(timeout=10)
        try:
            Worker.objects.filter(name=self.node, pid=os.getpid()).delete()
        except Exception:
            logger.exception("could not remove worker %s from the table", self.node)


_heartbeat: Heartbeat | None = None


@signals.worker_ready.connect  # type: ignore[untyped-decorator]  # celery has no type hints
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    global _heartbeat
    if _heartbeat is not None and _heartbeat.is_alive():
        return  # the consumer restarted (a broker reconnection): the thread goes on
    controller = getattr(sender, "controller", None)
    _heartbeat = Heartbeat(
        name=str(getattr(sender, "hostname", "") or socket.gethostname()),
        queues=consumed_queues(sender),
        concurrency=int(getattr(controller, "concurrency", None) or 1),
    )
    _heartbeat.start()


@signals.worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_heartbeat(**_: Any) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


def consumed_queues(consumer: Any) -> list[str]:
    task_consumer = getattr(consumer, "task_consumer", None)
    queues = getattr(task_consumer, "queues", None)
    if queues:
        return sorted({queue.name for queue in queues})
    app = getattr(consumer, "app", None)
    return sorted(app.amqp.queues.consume_from) if app is not None else []


def worker_beat(*, name: str, queues: list[str], concurrency: int, started_at: Any) -> None:
    Worker.objects.update_or_create(
        name=name,
        defaults={
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "queues": queues,
            "concurrency": concurrency,
            "started_at": started_at,
            "seen_at": timezone.now(),
        },
    )


def worker_replaced(name: str) -> None:
    """A worker starting under the name of one that died (a restart after a kill) gives the
    messages the dead one held to its queued jobs."""
    previous = Worker.objects.filter(name=name).exclude(pid=os.getpid()).first()
    if previous is not None:
        _resend_for_dead_worker(previous)


def jobs_recover(*, node: str, queues: list[str], concurrency: int) -> None:
    """What a live worker does every heartbeat for the jobs of dead workers (module doc)."""
    for job in Job.objects.filter(status=JobStatus.RUNNING).exclude(worker=""):
        if worker_state(job.worker) == WorkerState.DEAD:
            job_requeue_lost(job)
    lost = timezone.now() - timedelta(seconds=int(settings.DEIDWEB_WORKER_LOST_SECONDS))
    for dead in Worker.objects.filter(seen_at__lt=lost).exclude(name=node):
        _resend_for_dead_worker(dead)
    _resend_waiting(node=node, queues=queues, concurrency=concurrency)


def job_requeue_lost(job: Job) -> bool:
    """Queue again (with a new message) a running job whose worker is gone, or fail it when
    it has been started ``DEIDWEB_JOB_MAX_ATTEMPTS`` times."""
    lost_worker = job.worker
    if job.attempts >= int(settings.DEIDWEB_JOB_MAX_ATTEMPTS):
        return job_fail_lost(job, error=job_lost_again_error(job.attempts))
    queue = job.queue or job_queue(job.kind)
    with transaction.atomic():
        requeued = Job.objects.filter(
            id=job.id, status=JobStatus.RUNNING, worker=lost_worker
        ).update(
            status=JobStatus.QUEUED,
            worker="",
            progress=0,
            queue=queue,
            dispatched_at=timezone.now(),
            message="Waiting for a worker: the worker running it stopped, it will run again",
        )
        if not requeued:
            return False
        job.refresh_from_db()
        job_audit(job, "job.restart", {"attempt": job.attempts + 1, "lost_worker": lost_worker})
        transaction.on_commit(lambda: job_send(job_id=str(job.id), queue=queue))
    logger.warning("job %s: worker %s lost, queued to run again", job.id, lost_worker)
    return True


def _resend_for_dead_worker(dead: Worker) -> None:
    """New messages for queued jobs of a dead worker's queues, as many as it could hold."""
    deleted, _ = Worker.objects.filter(pk=dead.pk, seen_at=dead.seen_at).delete()
    if not deleted:
        return  # another worker did it
    held = max(1, dead.concurrency) * max(1, int(settings.CELERY_WORKER_PREFETCH_MULTIPLIER))
    waiting = Job.objects.filter(status=JobStatus.QUEUED, queue__in=dead.queues)
    for job in waiting.order_by("created_at")[:held]:
        _resend(job)
    logger.warning("worker %s is gone; its reserved messages were sent again", dead.name)


def _resend_waiting(*, node: str, queues: list[str], concurrency: int) -> None:
    """New messages for jobs that have waited too long on a queue where this worker idles."""
    running = Job.objects.filter(status=JobStatus.RUNNING, worker__startswith=f"{node} ").count()
    idle = concurrency - running
    if idle <= 0 or not queues:
        return
    since = timezone.now() - timedelta(seconds=int(settings.DEIDWEB_JOB_REDISPATCH_SECONDS))
    waiting = Job.objects.filter(status=JobStatus.QUEUED, queue__in=queues).filter(
        Q(dispatched_at__lt=since) | Q(dispatched_at__isnull=True, created_at__lt=since)
    )
    for job in waiting.order_by("created_at")[:idle]:
        _resend(job)


def _resend(job: Job) -> None:
    resent = Job.objects.filter(
        id=job.id, status=JobStatus.QUEUED, dispatched_at=job.dispatched_at
    ).update(dispatched_at=timezone.now())
    if resent:
        logger.warning("job %s: its message was lost; sent again", job.id)
        job_send(job_id=str(job.id), queue=job.queue)
