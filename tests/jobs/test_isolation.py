"""A job runs in a child process its worker watches (issue 23, item 2: a 1.6 KB workbook
took the worker to 5.7 GB and the system killed it). Past the memory ceiling, past the time
limit, cancelled or crashed, the job's process ends and the job says why; the worker goes
on, and the job's temporary files go with it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from django.db import connections

from apps.jobs import isolation
from apps.jobs.cancel_retry import job_cancel
from apps.jobs.claiming import job_claim, worker_id
from apps.jobs.isolation import format_bytes, pool_threads, run_isolated
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.jobs.running import job_run_claimed

pytestmark = pytest.mark.django_db(transaction=True)  # the child process reads committed rows
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def forked(request, monkeypatch):
    """This test process has computed with polars (other tests), so its jobs would start as
    new interpreters, which do not see the settings a test changes; the handlers of these
    tests compute nothing with polars, and the forked path is the one under test. The tests
    marked ``interpreter`` take the worker's own decision."""
    if "interpreter" not in request.keywords:
        monkeypatch.setattr(isolation, "pool_threads", lambda: [])


def claimed(custodian, handler: str, settings, **params) -> Job:
    settings.DEIDWEB_JOB_HANDLERS = {"profile": f"tests.jobs.handlers.{handler}"}
    job = job_create(organization=custodian, kind="profile", params=params, enqueue=False)
    return job_claim(str(job.id), worker_id("test@box"))


def in_background(job: Job) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def watch() -> None:
        try:
            outcome.update(watch=run_isolated(job))
        finally:
            connections.close_all()  # this thread's own: none left open at the teardown

    thread = threading.Thread(target=watch)
    thread.start()
    return thread, outcome


def wait_for(job: Job, message: str, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if message in job.message:
            return job
        time.sleep(0.05)
    raise AssertionError(f"{job.message!r} never came")


def test_a_job_past_the_memory_ceiling_fails_with_a_message_in_bounded_memory(custodian, settings):
    settings.DEIDWEB_JOB_MEMORY_LIMIT = 192 * MB
    job = claimed(custodian, "allocate", settings, megabytes=4096)
    watch = run_isolated(job)  # it asks for 4 GB, 16 MB at a time
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == (
        "The job needed more memory than a job may use (192.0 MB, DEIDWEB_JOB_MEMORY_LIMIT) "
        "and was stopped; the worker goes on with other jobs. Run it on a smaller file, or "
        "ask your administrator to raise the limit."
    )
    # stopped on crossing the ceiling: it had taken more than 192 MB and far less than 4 GB
    assert 192 * MB < watch.peak_bytes < 192 * MB + 256 * MB, format_bytes(watch.peak_bytes)
    assert job.result == {"peak_bytes": watch.peak_bytes, "limit_bytes": 192 * MB}
    assert int(job.message == "Failed") and watch.exitcode == -9

    # this process, the worker, goes on: the next job runs
    settings.DEIDWEB_JOB_MEMORY_LIMIT = 2048 * MB
    after = claimed(custodian, "ok", settings, n=3)
    run_isolated(after)
    after.refresh_from_db()
    assert (after.status, after.result) == (JobStatus.SUCCEEDED, {"squares": [0, 1, 4]})


def test_a_job_within_the_ceiling_is_not_stopped(custodian, settings):
    settings.DEIDWEB_JOB_MEMORY_LIMIT = 512 * MB
    job = claimed(custodian, "allocate", settings, megabytes=128)
    watch = run_isolated(job)
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCEEDED, {"megabytes": 128})
    assert 96 * MB <= watch.peak_bytes < 512 * MB  # seen taking most of its 128 MB


def test_a_cancel_stops_the_job_process_at_once_and_its_temporary_files_go(custodian, settings):
    job = claimed(custodian, "writes_temp_then_waits", settings)
    thread, outcome = in_background(job)
    scratch = Path(wait_for(job, "deidweb-job-").message)
    assert scratch.is_dir() and oct(scratch.stat().st_mode)[-3:] == "700"
    assert [p.name.startswith("left-behind-") for p in scratch.iterdir()] == [True]
    cancelled_at = time.monotonic()
    job_cancel(job=job)
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - cancelled_at < 3
    assert outcome["watch"].exitcode == -signal.SIGTERM  # nothing to stop elsewhere: at once
    assert Job.objects.get(id=job.id).status == JobStatus.CANCELLED
    assert not scratch.exists()


def test_a_cancel_stops_the_work_a_job_started_elsewhere_before_its_process_ends(
    custodian, settings, tmp_path
):
    """A job that started work outside its process (a Spark job on a cluster) registers how
    to stop it; the cancel has the process call that first, then end (issue #27)."""
    job = claimed(custodian, "external_work_then_waits", settings, folder=str(tmp_path))
    thread, outcome = in_background(job)
    wait_for(job, "working elsewhere")
    cancelled_at = time.monotonic()
    job_cancel(job=job)
    thread.join(isolation.CANCEL_GRACE_SECONDS + 5)
    assert not thread.is_alive() and time.monotonic() - cancelled_at < 4
    assert (tmp_path / "stopped").read_text() == "interrupted by the cancel"
    assert outcome["watch"].exitcode == 128 + signal.SIGTERM  # ended by itself, not killed
    job.refresh_from_db()
    assert (job.status, job.message) == (
        JobStatus.CANCELLED,
        "Cancelled; the test's outside work was stopped",
    )


def test_a_cancel_stops_the_work_a_job_run_in_process_started_elsewhere(
    custodian, settings, tmp_path
):
    """Without its own process (isolation off, an eager task) the job is not ended by a
    signal: the cancel still stops its outside work, within about a second."""
    job = claimed(custodian, "external_work_until_stopped", settings, folder=str(tmp_path))

    def run_in_process() -> None:
        try:
            job_run_claimed(job)
        finally:
            connections.close_all()  # this thread's own

    thread = threading.Thread(target=run_in_process)
    thread.start()
    wait_for(job, "working elsewhere")
    cancelled_at = time.monotonic()
    job_cancel(job=job)
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - cancelled_at < 3
    assert (tmp_path / "stopped").read_text() == "interrupted by the cancel"
    job.refresh_from_db()
    assert (job.status, job.message, job.error) == (
        JobStatus.CANCELLED,
        "Cancelled; the test's outside work was stopped",
        "",
    )


def test_a_crashed_job_process_fails_the_job(custodian, settings):
    job = claimed(custodian, "crash", settings)
    run_isolated(job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert f"giving this reference: job {job.id}" in job.error
    assert job.error_detail == (
        "The job's process ended (signal SIGSEGV) without recording the job's end."
    )


def test_a_job_past_the_time_limit_is_stopped(custodian, settings):
    settings.DEIDWEB_JOB_TIME_LIMIT = 1
    job = claimed(custodian, "slow", settings, seconds=60)
    started = time.monotonic()
    run_isolated(job)
    job.refresh_from_db()
    assert time.monotonic() - started < 5
    assert (job.status, job.error) == (
        JobStatus.FAILED,
        "The job ran longer than the limit of 1 s (DEIDWEB_JOB_TIME_LIMIT) and was stopped.",
    )


def test_the_job_process_ends_with_its_worker(custodian, settings):
    """A worker killed mid-job takes its job's process with it (no orphan writes on)."""
    import signal
    import subprocess
    import sys

    job = claimed(custodian, "slow", settings, seconds=60)
    Job.objects.filter(id=job.id).update(worker="")  # the worker below claims it again
    Job.objects.filter(id=job.id).update(status=JobStatus.QUEUED)
    script = (
        "import django; django.setup();"
        "from apps.jobs.isolation import run_isolated;"
        "from apps.jobs.claiming import job_claim, worker_id;"
        f"run_isolated(job_claim('{job.id}', worker_id('kill@box')))"
    )
    env = {**os.environ, "DEIDWEB_TEST_JOB_HANDLERS": "profile=tests.jobs.handlers.slow"}
    from django.db import connection

    db = connection.settings_dict
    env["TEST_DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    worker = subprocess.Popen([sys.executable, "-c", script], env=env)
    running = wait_for(job, "working")
    child = [
        int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _parent(int(pid)) == worker.pid
    ]
    assert len(child) == 1 and running.worker.endswith(f" {worker.pid}")
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{child[0]}"):
        if _state(child[0]) == "Z":
            break
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child[0]}") or _state(child[0]) == "Z"
    # The killed processes' database sessions end when the server notices: wait for their
    # locks to go, so that the test's own clean-up (a TRUNCATE) does not meet them.
    with connection.cursor() as cursor:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0] == 0:
                break
            time.sleep(0.1)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "gone"


@pytest.mark.interpreter
def test_a_worker_process_that_computed_with_polars_runs_its_job_in_a_new_interpreter(
    custodian, settings, monkeypatch
):
    """A process forked after polars has started its thread pool waits for ever on its
    first polars call (the CI run of 2026-11: profiles "running" for 90 s). A worker process
    with a pool running starts the job's process as a new interpreter instead."""
    import polars as pl
    from django.db import connection

    pl.DataFrame({"v": list(range(10_000))}).group_by("v").len()  # this process's pool runs
    assert [name for name in pool_threads() if name.startswith("polars-")]
    db = connection.settings_dict
    monkeypatch.setenv(
        "TEST_DATABASE_URL", f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    )
    monkeypatch.setenv("DEIDWEB_TEST_JOB_HANDLERS", "profile=tests.jobs.handlers.polars_group_by")
    settings.DEIDWEB_JOB_TIME_LIMIT = 60  # (a hung process fails the test in a minute)
    job = claimed(custodian, "polars_group_by", settings)
    run_isolated(job)
    job.refresh_from_db()
    assert (job.status, job.result["counts"]) == (JobStatus.SUCCEEDED, [10_000, 10_000, 10_000])
    assert job.result["pid"] != os.getpid()


def test_the_kernels_a_worker_process_loads_at_start_leave_it_able_to_fork():
    """What a worker process loads as it starts (deidweb/celery.py) starts no compute pool,
    and a process forked afterwards computes with polars."""
    import subprocess
    import sys

    script = (
        "import os, django, polars as pl; django.setup();"
        "from apps.engine.search.preload import load_kernels;"
        "from apps.jobs.isolation import pool_threads;"
        "load_kernels(); print(pool_threads(), flush=True);"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    n = pl.DataFrame({'v': [i % 3 for i in range(30000)]}).group_by('v').len().height\n"
        "    print(n, flush=True); os._exit(0)\n"
        "os.waitpid(pid, 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split("\n")[:2] == ["[]", "3"]
