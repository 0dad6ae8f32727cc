"""Whether the worker that claimed a job is still there, and which workers take a queue.

A job records who runs it as "<Celery node> <host> <pid>" (the process supervising it).
On the same machine the process itself answers: it exists or it does not. Elsewhere the
worker's heartbeat answers (the ``Worker`` row each worker refreshes every
``DEIDWEB_WORKER_HEARTBEAT_SECONDS``): seen within ``DEIDWEB_WORKER_LOST_SECONDS``, it is
alive; silent longer, or gone from the table, it is dead. A job run in-process (no Celery
node) on another machine cannot be checked: "unknown", left to the stale-progress rule.
Reads only: pages and the API ask too.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import Enum

from django.conf import settings
from django.utils import timezone

from apps.jobs.models import Job, JobStatus, Worker

__all__ = [
    "WorkerState",
    "job_is_lost",
    "live_workers",
    "worker_state",
    "workers_listening",
]


class WorkerState(Enum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"


def _seen_since() -> datetime:
    return timezone.now() - timedelta(seconds=int(settings.DEIDWEB_WORKER_LOST_SECONDS))


def live_workers() -> list[Worker]:
    """Workers whose heartbeat is recent."""
    return list(Worker.objects.filter(seen_at__gte=_seen_since()))


def workers_listening(queue: str, workers: Iterable[Worker] | None = None) -> list[Worker]:
    """The live workers that take messages of `queue`."""
    return [w for w in (live_workers() if workers is None else workers) if queue in w.queues]


def worker_state(worker: str) -> WorkerState:
    """Whether the process recorded as running a job (``Job.worker``) is still there."""
    parts = worker.split(" ")
    if len(parts) != 3 or not parts[2].isdigit():
        return WorkerState.UNKNOWN
    node, host, pid = parts[0], parts[1], int(parts[2])
    if host == socket.gethostname():
        return WorkerState.ALIVE if process_alive(pid) else WorkerState.DEAD
    if node == "local":
        return WorkerState.UNKNOWN
    row = Worker.objects.filter(name=node).only("seen_at").first()
    if row is not None and row.seen_at >= _seen_since():
        return WorkerState.ALIVE
    return WorkerState.DEAD


def process_alive(pid: int) -> bool:
    """A process of this machine that exists and is not a zombie left unreaped."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def job_is_lost(job: Job) -> bool:
    """Running, but its worker is gone: its process ended (same machine) or its heartbeat
    stopped (``apps.jobs.liveness``). Where the worker cannot be checked (a job run
    in-process elsewhere, or claimed before workers were recorded), silence longer than
    ``DEIDWEB_JOB_STALE_SECONDS`` means the same."""
    if job.status != JobStatus.RUNNING:
        return False
    state = worker_state(job.worker)
    if state != WorkerState.UNKNOWN:
        return state == WorkerState.DEAD
    last = job.heartbeat_at or job.started_at
    limit = timedelta(seconds=settings.DEIDWEB_JOB_STALE_SECONDS)
    return last is not None and timezone.now() - last > limit
