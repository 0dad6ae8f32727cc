"""Each job a worker runs, in a child process of its own that the worker watches.

The worker process (a Celery pool process) claims the job, forks a child that runs the
handler, and watches it until it exits:

- memory: the child's resident memory is read every 50 ms; past the ceiling
  (``DEIDWEB_JOB_MEMORY_LIMIT``) the child is killed and the job fails with a message
  naming the limit, while the worker goes on to its next job (before, a 1.6 KB workbook
  could take the worker itself to 5.7 GB and the kernel killed it);
- cancellation: the job's row is read every second; once cancelled, or taken over by
  another worker, the child is ended at once, even inside a long polars or numba call:
  SIGTERM, then SIGKILL after ``CANCEL_GRACE_SECONDS`` — the grace in which a job that
  started work elsewhere (a Spark job on a cluster) stops that work first
  (`apps.jobs.context.external_work`);
- time: past ``DEIDWEB_JOB_TIME_LIMIT`` the child is killed and the job fails;
- any other end of the child (killed by the system, a crash) fails the job with what
  happened, rather than leaving it "running".

The child dies with the worker (``PR_SET_PDEATHSIG``), so a worker killed mid-job leaves
no orphan writing on; its temporary files go to a private folder removed when it ends,
however it ends.

Forking is fast (the child shares the worker's imported modules and loaded kernels) but
safe only from a process that has started no compute thread pool: the child holds only
the forking thread, so a pool inherited from the worker has no threads behind it and the
child's first polars call waits for ever (polars' pool, and the engine's own encoding
threads, start on first use). The worker process therefore loads only the numba kernels
when it starts (:func:`preload_in_background`, waited for before the first fork), and
:func:`fork_is_safe` checks before every job: when a pool runs in this process anyway
(code in the worker process that computed with polars), the job's process is started as
a new interpreter instead (``python -m deidweb.job_process``, a few seconds more), watched in
the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from uuid import UUID

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, connections

from apps.jobs.context import STOP_SECONDS, job_process_for
from apps.jobs.messages import out_of_memory_error, time_limit_error, unexpected_error_message
from apps.jobs.models import Job, JobStatus
from apps.jobs.running import job_fail, job_run_claimed

logger = logging.getLogger(__name__)

MEMORY_POLL_SECONDS = 0.05
ROW_POLL_SECONDS = 1.0
#: How long a cancelled job's process has, after SIGTERM, to stop its external work.
CANCEL_GRACE_SECONDS = STOP_SECONDS + 5.0
_PAGE = os.sysconf("SC_PAGE_SIZE")


class Stop(Enum):
    MEMORY = "memory"
    TIME = "time"
    CANCELLED = "cancelled"


@dataclass
class Watch:
    """What the worker saw of the job's process."""

    stop: Stop | None = None
    peak_bytes: int = 0
    exitcode: int | None = None
    failure: str = ""  # the worker's own error starting or watching the process


def run_isolated(job: Job) -> Watch:
    """Run a job this process has claimed in a watched child process, to its end."""
    watch = Watch()
    child: Child | None = None
    scratch = ""
    try:
        scratch = tempfile.mkdtemp(prefix=f"deidweb-job-{job.id}-")  # private: mode 0700
        connections.close_all()  # the child opens its own; it must not share these sockets
        child = Child.start(job.id, scratch)
        _watch(child, job, watch)
    except SoftTimeLimitExceeded:  # Celery's soft time limit, raised in this process
        watch.stop = Stop.TIME
    except Exception:
        # The worker failed to start or to watch the job's process: the job says so, never
        # left "running" on a live worker.
        logger.exception("job %s: could not run or watch its process", job.id)
        watch.failure = traceback.format_exc()
    finally:
        if child is not None:
            grace = CANCEL_GRACE_SECONDS if watch.stop == Stop.CANCELLED else 0.0
            watch.exitcode = child.stop(grace=grace)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    _conclude(job, watch)
    return watch


#: Threads of a compute pool, by the names the system gives them: polars' pool
#: (``polars-0``…) and its async runtime. A process running any cannot fork a job's process.
_POOL_THREAD = re.compile(r"polars-\d+|tokio-rt-worker")
#: The loading of the kernels a worker process starts with (None: none started).
_PRELOAD: list[threading.Thread] = []
#: How long a first job waits for that loading before it starts anyway.
PRELOAD_WAIT_SECONDS = 300.0


def preload_in_background(load: Callable[[], None]) -> None:
    """Run ``load`` (the kernels' loading: it must start no thread pool) in a thread of this
    worker process, so that the process starts at once; the first job waits for its end
    before it forks (a fork in the middle of loading could copy a held lock)."""
    thread = threading.Thread(target=load, name="load-compiled-code", daemon=True)
    _PRELOAD.append(thread)
    thread.start()


def _wait_for_preload() -> None:
    for thread in _PRELOAD:
        thread.join(PRELOAD_WAIT_SECONDS)


def pool_threads() -> list[str]:
    """The names of the compute-pool threads running in this process."""
    names = []
    for comm in Path("/proc/self/task").glob("*/comm"):
        try:
            name = comm.read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if _POOL_THREAD.fullmatch(name):
            names.append(name)
    return sorted(names)


def fork_is_safe() -> bool:
    """Whether a process forked from this one can compute: no compute pool runs here."""
    return not pool_threads()


class Child:
    """The job's process, forked from the worker process (a Celery pool process, being a
    daemon, may not start a multiprocessing child), or a new interpreter when forking is
    not safe (:func:`fork_is_safe`)."""

    def __init__(self, pid: int, process: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self.exitcode: int | None = None
        self._process = process  # (kept so that it is not reaped behind our back)

    @classmethod
    def start(cls, job_id: UUID, scratch: str) -> Child:
        _wait_for_preload()
        parent = os.getpid()
        pool = pool_threads()
        if pool:
            logger.warning(
                "job %s: this worker process runs compute threads (%s); its process starts "
                "as a new interpreter instead of a fork",
                job_id,
                ", ".join(pool),
            )
            return cls.spawn(job_id, scratch, parent)
        pid = os.fork()
        if pid == 0:  # the child: run the job, then leave without the parent's exit handlers
            code = 1
            try:
                run_child(job_id, scratch, parent)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        return cls(pid)

    @classmethod
    def spawn(cls, job_id: UUID, scratch: str, parent: int) -> Child:
        """The job's process as a new interpreter (``deidweb/job_process.py``)."""
        process = subprocess.Popen(  # noqa: S603 (this interpreter, a fixed module)
            [sys.executable, "-m", "deidweb.job_process", str(job_id), scratch, str(parent)],
            cwd=Path(__file__).resolve().parents[2],
            env={**os.environ, "TMPDIR": scratch},
        )
        return cls(process.pid, process)

    def is_alive(self) -> bool:
        if self.exitcode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode is None

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self, *, grace: float = 0.0) -> int | None:
        """End the process if it still runs: with a ``grace``, SIGTERM first and SIGKILL
        only if it still runs that much later; its exit code (negative: the signal)."""
        if grace and self.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            self.wait(grace)
        if self.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
            self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode


def run_child(job_id: UUID, scratch: str, parent: int, forked: bool = True) -> None:
    """The job's process: run the claimed job (forked from the worker, or a new interpreter
    started by it)."""
    _die_with(parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the worker, which ends us
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    job_process_for(str(job_id))
    if forked:
        # The worker's Celery app (deidweb.celery), the current one in a worker's process.
        current_app._after_fork()  # noqa: SLF001  # the broker connections of the parent are not ours
    try:
        job_run_claimed(Job.objects.get(id=job_id))
    finally:
        connections.close_all()


def _die_with(parent: int) -> None:
    """End this process when its parent (the worker) ends, whatever way it ends."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        logger.warning("this system cannot end a job's process with its worker")
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def _watch(process: Child, job: Job, watch: Watch) -> None:
    limit = int(settings.DEIDWEB_JOB_MEMORY_LIMIT)
    deadline = time.monotonic() + int(settings.DEIDWEB_JOB_TIME_LIMIT)
    next_row_check = 0.0
    # What the job takes: the growth of the child's own memory (anonymous pages: its heap
    # and arrays) since it was forked, not the worker's pages it shares from the start
    # nor files it maps (the system can drop those).
    baseline = anonymous_bytes(process.pid)
    while process.is_alive():
        used = max(0, anonymous_bytes(process.pid) - baseline)
        watch.peak_bytes = max(watch.peak_bytes, used)
        if used > limit:
            watch.stop = Stop.MEMORY
            return
        now = time.monotonic()
        if now >= deadline:
            watch.stop = Stop.TIME
            return
        if now >= next_row_check:
            next_row_check = now + ROW_POLL_SECONDS
            try:
                row = Job.objects.filter(id=job.id).values_list("status", "worker").first()
            except DatabaseError:  # a database that does not answer now stops no job
                logger.warning("job %s: could not read its row; watching on", job.id)
                connections.close_all()
                process.wait(MEMORY_POLL_SECONDS)
                continue
            if row is None or row[0] == JobStatus.CANCELLED or row[1] != job.worker:
                # cancelled, deleted, or taken over by another worker: stop the work now
                watch.stop = Stop.CANCELLED
                return
        process.wait(MEMORY_POLL_SECONDS)


def anonymous_bytes(pid: int) -> int:
    """The resident anonymous memory of a process of this machine: resident pages less
    those backed by files or shared memory (``/proc/<pid>/statm``; 0 when unreadable)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            fields = handle.read().split()
        return (int(fields[1]) - int(fields[2])) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _conclude(job: Job, watch: Watch) -> None:
    """Fail the job with what happened when its process ended without recording its end."""
    row = Job.objects.filter(id=job.id).values_list("status", "worker").first()
    if watch.stop == Stop.CANCELLED:
        logger.info("job %s: cancelled; its process was stopped", job.id)
    if row is None or row[0] != JobStatus.RUNNING or row[1] != job.worker:
        return  # it ended by itself, was cancelled, or is another worker's now
    memory = {"peak_bytes": watch.peak_bytes, "limit_bytes": int(settings.DEIDWEB_JOB_MEMORY_LIMIT)}
    if watch.stop == Stop.MEMORY:
        logger.error("job %s: past the memory ceiling (%s), stopped", job.id, memory)
        job_fail(job, error=memory_limit_error(), detail=f"memory: {memory}", result=memory)
    elif watch.stop == Stop.TIME:
        job_fail(job, error=time_limit_error())
    elif watch.failure:
        job_fail(job, error=unexpected_error_message(job), detail=watch.failure)
    elif watch.exitcode == -signal.SIGKILL:
        # Killed from outside: the kernel's out-of-memory killer, most often.
        logger.error("job %s: its process was killed (%s)", job.id, memory)
        job_fail(job, error=out_of_memory_error(), detail=f"SIGKILL; memory: {memory}")
    else:
        how = (
            f"signal {signal.Signals(-watch.exitcode).name}"
            if watch.exitcode is not None and watch.exitcode < 0
            else f"exit code {watch.exitcode}"
        )
        logger.error("job %s: its process ended (%s) without recording the job's end", job.id, how)
        job_fail(
            job,
            error=unexpected_error_message(job),
            detail=f"The job's process ended ({how}) without recording the job's end.",
        )


def memory_limit_error() -> str:
    limit = int(settings.DEIDWEB_JOB_MEMORY_LIMIT)
    return (
        f"The job needed more memory than a job may use ({format_bytes(limit)}, "
        "DEIDWEB_JOB_MEMORY_LIMIT) and was stopped; the worker goes on with other jobs. Run "
        "it on a smaller file, or ask your administrator to raise the limit."
    )


def format_bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TB"
