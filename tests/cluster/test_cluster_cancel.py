"""A cluster job cancelled the way the API and the pages cancel it (issue #27): its Spark
jobs stop on the server, the job ends cancelled saying so, the assessment keeps what it
had, and nothing is written to the release area.

On a real Apache Spark (local mode). The job runs as a worker runs it, in a watched process
of its own (`apps.jobs.isolation`); the cancel is ``POST /api/v1/jobs/<id>/cancel/``. That
the server stopped is seen on the server itself: its processes (the JVM and its Python
workers) go idle, and its log records the job tag's jobs cancelled.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections

from apps.assessments import release_apply
from apps.assessments.models import Assessment
from apps.engine.rows import open_engine
from apps.jobs import isolation
from apps.jobs.claiming import job_claim, job_execute, worker_id
from apps.jobs.models import Job, JobStatus
from tests.assessments.conftest import trade_off_people
from tests.cluster.helpers import assessed, connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark]

#: The register's 400 rows repeated this many times: the new release's passes are long.
REPEAT = 25_000
WRITING = "Masking, generalizing, suppressing and writing on the cluster"
#: CPU seconds in 3 s that the server's Python workers use when busy (at least), and when
#: idle (at most): busy before the cancel, idle after it.
BUSY, IDLE = 0.3, 0.1


def _processes() -> dict[int, tuple[int, float]]:
    """pid → (parent, CPU seconds) of every process of this machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        found[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)
    return found


def _workers(pid: int, processes: dict[int, tuple[int, float]]) -> dict[int, float]:
    """The CPU seconds of the server's Python workers (every process below its JVM)."""
    below: dict[int, float] = {}
    for child, (_, seconds) in processes.items():
        parent = processes[child][0]
        while parent not in (0, 1, pid) and parent in processes:
            parent = processes[parent][0]
        if parent == pid and child != pid:
            below[child] = seconds
    return below


def workers_cpu_over(pid: int, seconds: float) -> float:
    """CPU time the server's Python workers used in ``seconds`` (those alive throughout)."""
    before = _workers(pid, _processes())
    time.sleep(seconds)
    after = _workers(pid, _processes())
    return sum(after[p] - before[p] for p in before.keys() & after.keys())


def server_log_after(log: Path, start: int, words: str, timeout: float = 30) -> str:
    """The server's log from ``start`` once ``words`` is in it (a busy server writes its
    log a moment after it acts), or as it is after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace")[start:]
        if words in text or time.monotonic() > deadline:
            return text
        time.sleep(0.5)


def wait_for(job: Job, message: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if message in job.message:
            return
        assert job.status == JobStatus.RUNNING, (job.status, job.error)
        time.sleep(0.2)
    raise AssertionError(f"{message!r} never came (last: {job.message!r})")


def test_a_cancelled_cluster_apply_stops_its_spark_jobs_and_writes_nothing(
    custodian, analyst, admin_user, client_for, spark_server, tmp_path: Path, monkeypatch
):
    from apps.datasets.cluster import cluster_dataset_register

    lake = tmp_path / "lake"
    lake.mkdir()
    trade_off_people().write_parquet(lake / "register.parquet")
    with open_engine("spark", remote=spark_server.remote) as engine:
        session = engine.session
        session.read.parquet(str(lake / "register.parquet")).write.saveAsTable("register_small")
        session.sql("CREATE TABLE register_cancel AS SELECT * FROM register_small")
    connect(custodian, admin_user, spark_server.remote, lake)
    dataset = cluster_dataset_register(
        organization=custodian, user=analyst, source="table:register_cancel"
    )
    assert job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    assert dataset.status == "ready", dataset.profile_job.error
    assessment: Assessment = assessed(custodian, analyst, dataset)  # Steps 1-8, released
    before = Assessment.objects.get(id=assessment.id)
    released = before.apply_result["cluster_release"]
    releases = lake / "releases"
    files_before = sorted(p.relative_to(releases) for p in releases.rglob("*") if p.is_file())
    assert any(p.suffix == ".parquet" for p in files_before)

    # The table grows on the cluster: 10 million rows, the same 400 repeated.
    with open_engine("spark", remote=spark_server.remote) as engine:
        engine.session.sql("DROP TABLE register_cancel")
        engine.session.sql(
            "CREATE VIEW register_cancel AS SELECT r.* FROM register_small r "
            f"CROSS JOIN range({REPEAT})"
        )

    # Step 7's apply again, run as a worker runs it: in a watched process of its own
    # (a new interpreter here, this test process having computed with polars).
    db = connection.settings_dict
    monkeypatch.setenv(
        "TEST_DATABASE_URL", f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    )
    job = release_apply.assessment_start_apply(assessment=before, user=analyst)
    claimed = job_claim(str(job.id), worker_id("test@box"))
    assert claimed is not None
    watched: dict = {}

    def watch() -> None:
        try:
            watched.update(watch=isolation.run_isolated(claimed))
        finally:
            connections.close_all()  # this thread's own

    worker = threading.Thread(target=watch, daemon=True)
    worker.start()
    wait_for(job, WRITING)
    # the release's Spark job runs: the server is busy, its Python workers running the
    # release's masking and recoding batch by batch (on a loaded machine they get less
    # than a core: sampled until they are clearly above the idle bound checked after)
    busy, deadline = 0.0, time.monotonic() + 30
    while busy <= BUSY and time.monotonic() < deadline:
        busy = workers_cpu_over(spark_server.pid, 3.0)
    assert busy > BUSY, busy
    log_before = spark_server.log.read_text(errors="replace")

    response = client_for(analyst).post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "cancelled"
    cancelled_at = time.monotonic()
    worker.join(isolation.CANCEL_GRACE_SECONDS + 10)
    assert not worker.is_alive()
    ended_in = time.monotonic() - cancelled_at
    # the job's process stopped its Spark jobs and ended by itself, within the grace
    # ended by the worker's SIGTERM (143), or by itself on seeing the cancel in a progress
    # report first (0), or, having seen it first and stopped its Spark jobs, by the worker's
    # SIGTERM arriving as it left the external work (its default handler back: -15); what
    # matters in every case is checked below: the Spark jobs stopped, nothing written
    assert watched["watch"].exitcode in (0, 128 + signal.SIGTERM, -signal.SIGTERM), watched["watch"]
    assert ended_in < isolation.CANCEL_GRACE_SECONDS

    # the server: the job tag's jobs were cancelled, and it went idle (they do not finish)
    log = server_log_after(spark_server.log, len(log_before), "[OPERATION_CANCELED]")
    assert "[OPERATION_CANCELED] Operation has been canceled" in log, log[-3000:]
    assert "[SPARK_JOB_CANCELLED]" in log, log[-3000:]
    time.sleep(2)
    idle = workers_cpu_over(spark_server.pid, 3.0)
    assert idle < IDLE, idle

    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert job.message == ("Cancelled; the Spark jobs it started on the cluster were interrupted")
    # the assessment keeps its previous release; nothing new in the release area
    after = Assessment.objects.get(id=assessment.id)
    assert after.apply_result == before.apply_result
    assert after.apply_result["cluster_release"] == released
    assert (after.status, after.version, after.chosen_levels) == (
        before.status,
        before.version,
        before.chosen_levels,
    )
    new_files = sorted(p.relative_to(releases) for p in releases.rglob("*") if p.is_file())
    assert [p for p in new_files if p not in files_before] == []
