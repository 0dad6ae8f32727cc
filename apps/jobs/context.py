"""What a handler is given (:class:`JobContext`): progress reports that also tell it the job
was cancelled or taken over (:class:`JobCancelled`); and :func:`external_work`, how a
handler names work it started outside this process (a Spark job on a cluster) so that a
cancellation stops that work too, not only this process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

from django.db import connections
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


logger = logging.getLogger(__name__)

#: The ``stop`` callables of the external work running now in this process, with what
#: each is (for the job's message).
_EXTERNAL: list[tuple[Callable[[], None], str]] = []
#: How long stopping the external work may take before the process ends anyway.
STOP_SECONDS = 5.0


@contextlib.contextmanager
def external_work(stop: Callable[[], None], what: str) -> Iterator[None]:
    """Work started elsewhere by this job's process, stopped by ``stop()`` (callable from any
    thread) when the job is cancelled.

    A worker cancels a running job by ending its process (``apps.jobs.isolation``): it
    sends SIGTERM and, after a grace period, SIGKILL. While inside this block, SIGTERM
    first calls every registered ``stop`` and says so in the job's message, then ends the
    process; outside it, SIGTERM ends the process at once, as before.

    A job run in-process (isolation off, an eager task: `running_in_process`) is not ended
    by a signal: there a thread reads the job's row every second while inside this block,
    and calls ``stop`` once the job is cancelled. Outside any job, this does nothing."""
    entry = (stop, what)
    installed = _install_handler()
    watcher = None
    job_id = getattr(_IN_PROCESS, "job_id", None)
    if job_id and not _CURRENT_JOB:  # in-process; a job's process has its SIGTERM
        watcher = _Watcher(job_id, stop, what)
    _EXTERNAL.append(entry)
    try:
        yield
    except JobCancelled:
        # the handler saw the cancel itself (a progress report) before any signal came:
        # the work started elsewhere is stopped the same way
        stopped = stop_external_work()
        job_id = _CURRENT_JOB[0] if _CURRENT_JOB else getattr(_IN_PROCESS, "job_id", None)
        if job_id:
            _note_stopped(job_id, stopped)
        raise
    finally:
        _EXTERNAL.remove(entry)
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if watcher is not None:
            watcher.close()


def stop_external_work() -> list[str]:
    """Call every registered ``stop``; what was stopped (a failing stop is logged)."""
    stopped = []
    for stop, what in list(_EXTERNAL):
        try:
            stop()
            stopped.append(what)
        except Exception:  # one that fails must not keep the others running
            logger.exception("could not stop %s", what)
    return stopped


#: The job this process runs, when it is a job's process (`job_process_for`).
_CURRENT_JOB: list[str] = []
#: The job the current thread runs in-process (`running_in_process`).
_IN_PROCESS = threading.local()
#: How often a job run in-process has its row read while it has external work.
POLL_SECONDS = 1.0


@contextlib.contextmanager
def running_in_process(job_id: str) -> Iterator[None]:
    """The current thread runs this job's handler (`apps.jobs.running.job_run_claimed`)."""
    outer = getattr(_IN_PROCESS, "job_id", None)
    _IN_PROCESS.job_id = job_id
    try:
        yield
    finally:
        _IN_PROCESS.job_id = outer


class _Watcher:
    """A thread reading the job's row every `POLL_SECONDS` while external work runs; on a
    cancel it calls ``stop`` once and notes it on the job."""

    def __init__(self, job_id: str, stop: Callable[[], None], what: str) -> None:
        self.job_id, self.stop, self.what = job_id, stop, what
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, name="watch-job-cancel", daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            while not self.done.wait(POLL_SECONDS):
                status = Job.objects.filter(id=self.job_id).values_list("status", flat=True)
                if status.first() == JobStatus.CANCELLED:
                    self.stop()
                    _note_stopped(self.job_id, [self.what])
                    return
        except Exception:  # a database or a stop that fails: the handler goes on, as before
            logger.exception("job %s: could not watch it for a cancel", self.job_id)
        finally:
            connections.close_all()  # this thread's own connection

    def close(self) -> None:
        self.done.set()
        self.thread.join(STOP_SECONDS)


def _note_stopped(job_id: str, stopped: list[str]) -> None:
    """Say on the cancelled job what its cancel stopped (a courtesy: the stop is done)."""
    if stopped:
        with contextlib.suppress(Exception):
            Job.objects.filter(id=job_id, status=JobStatus.CANCELLED).update(
                message=f"Cancelled; {'; '.join(stopped)}"[:300]
            )


def job_process_for(job_id: str) -> None:
    """This process is the one a worker started to run this job (`apps.jobs.isolation`):
    the worker may end it with SIGTERM, which `external_work` then handles."""
    _CURRENT_JOB[:] = [job_id]


def _install_handler() -> bool:
    """The SIGTERM handler, in a job's process (only there, and only from its main thread:
    a handler run in a web or test process is not ended by a signal)."""
    if not _CURRENT_JOB or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is _on_terminate:
        return False  # an outer block installed it
    signal.signal(signal.SIGTERM, _on_terminate)
    return True


def _on_terminate(signum: int, frame: object) -> None:
    """Stop the external work (in a thread: the main thread may be inside the client of
    that work), note it on the cancelled job, then end the process."""

    def stop() -> None:
        _note_stopped(_CURRENT_JOB[0], stop_external_work())

    thread = threading.Thread(target=stop, name="stop-external-work", daemon=True)
    thread.start()
    thread.join(STOP_SECONDS)
    os._exit(128 + signum)
