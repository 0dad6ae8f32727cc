"""Shared fixtures: personas, the services check and a real Celery worker.

Personas follow healthchecks' tests: a custodian organization with an analyst (privacy
officer), a reviewer and an admin, and an outsider who belongs to another organization.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
ADULT = SHARED / "data" / "arx" / "adult.csv"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not settings.configured:  # e.g. `pytest -p no:django tests/engine`
        return
    services = getattr(settings, "DEIDWEB_SERVICES", {})
    missing = [name for name, up in services.items() if not up]
    if not missing:
        return
    if getattr(settings, "DEIDWEB_REQUIRE_SERVICES", False):
        raise pytest.UsageError(
            f"DEIDWEB_REQUIRE_SERVICES is set but {', '.join(missing)} is unreachable "
            "(PostgreSQL on 127.0.0.1:5432, Redis on 127.0.0.1:6379)."
        )
    marker = pytest.mark.skip(reason=f"needs {', '.join(missing)} (not reachable here)")
    for item in items:
        if "services" in item.keywords or "browser" in item.keywords:
            item.add_marker(marker)


@pytest.fixture
def org_factory(db):  # type: ignore[no-untyped-def]
    from apps.accounts.services import organization_create

    def make(name: str = "Custodian", **options: object):  # type: ignore[no-untyped-def]
        return organization_create(
            name=name, slug=f"{name.lower()}-{uuid.uuid4().hex[:6]}", **options
        )

    return make


@pytest.fixture
def user_factory(db):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    def make(username: str, organization=None, role: str | None = None):  # type: ignore[no-untyped-def]
        from apps.accounts.services import membership_set

        user = get_user_model().objects.create_user(username=username, password="pw-" + username)
        if organization is not None and role is not None:
            membership_set(organization=organization, user=user, role=role)
        return user

    return make


@pytest.fixture
def custodian(org_factory):  # type: ignore[no-untyped-def]
    return org_factory("Custodian")


@pytest.fixture
def analyst(user_factory, custodian):  # type: ignore[no-untyped-def]
    return user_factory("analyst", custodian, "analyst")


@pytest.fixture
def reviewer(user_factory, custodian):  # type: ignore[no-untyped-def]
    return user_factory("reviewer", custodian, "reviewer")


@pytest.fixture
def admin_user(user_factory, custodian):  # type: ignore[no-untyped-def]
    return user_factory("orgadmin", custodian, "admin")


@pytest.fixture
def outsider(user_factory, org_factory):  # type: ignore[no-untyped-def]
    return user_factory("outsider", org_factory("Elsewhere"), "admin")


@pytest.fixture
def client_for(client):  # type: ignore[no-untyped-def]
    from django.test import Client

    def make(user) -> Client:  # type: ignore[no-untyped-def]
        c = Client()
        c.force_login(user)
        return c

    return make


# --- a real Celery worker ---------------------------------------------------------------


@contextlib.contextmanager
def running_celery_worker(
    pool: Sequence[str] = ("--pool=solo",),
    env: dict[str, str] | None = None,
    queue: str | None = None,
    plain: bool = False,
) -> Iterator[subprocess.Popen[bytes]]:
    """A `celery worker` subprocess on real Redis, using the test database and media root.

    The queue name is unique to this worker so a worker left over from elsewhere can never
    take its jobs; while it runs, new jobs go to its queue. `pool` chooses the pool (solo by
    default; a cancel terminates a task only in a prefork pool); `env` adds to its
    environment (settings such as DEIDWEB_MAX_COLUMNS). Jobs go to the queue's interactive and
    heavy queues (``<queue>-interactive``, ``<queue>-heavy``); give ``queue`` to start a
    second worker on the queues of a first one. `plain` starts it without `-Q`, as
    `celery -A deidweb worker` is started by hand. The process leads its own process group."""
    from django.db import connection

    from deidweb.celery import app

    if not (settings.DEIDWEB_SERVICES["redis"] and settings.DEIDWEB_SERVICES["postgres"]):
        pytest.skip("a real worker needs PostgreSQL and Redis")
    db = connection.settings_dict
    queue = queue or f"deidweb-test-{uuid.uuid4().hex[:8]}"
    queues = {"interactive": f"{queue}-interactive", "heavy": f"{queue}-heavy"}
    node = f"{queue}-{uuid.uuid4().hex[:4]}"
    environment = {
        **os.environ,
        **(env or {}),
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.test",
        "TEST_DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "TEST_BROKER_URL": settings.CELERY_BROKER_URL,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "DEIDWEB_INTERACTIVE_QUEUE": queues["interactive"],
        "DEIDWEB_HEAVY_QUEUE": queues["heavy"],
    }
    log = open(Path(settings.MEDIA_ROOT).parent / f"{node}.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "deidweb",
            "worker",
            *pool,
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            *([] if plain else ["-Q", ",".join([queue, *queues.values()])]),
            "-n",
            f"{node}@%h",
        ],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    previous = (
        settings.CELERY_TASK_DEFAULT_QUEUE,
        app.conf.task_default_queue,
        settings.DEIDWEB_JOB_QUEUES,
    )
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    app.conf.task_default_queue = queue
    settings.DEIDWEB_JOB_QUEUES = queues
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the Celery worker exited early; see {log.name}")
            destination = [f"{node}@{os.uname().nodename}"]
            if app.control.ping(destination=destination, timeout=1.0):
                break
        else:
            raise RuntimeError(f"the Celery worker did not answer within 60 s; see {log.name}")
        process.log_path = Path(log.name)  # type: ignore[attr-defined]  # for tests to read
        yield process
    finally:
        (
            settings.CELERY_TASK_DEFAULT_QUEUE,
            app.conf.task_default_queue,
            settings.DEIDWEB_JOB_QUEUES,
        ) = previous
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """The session's worker (solo pool). Tests that use it must commit their data
    (``transaction=True``)."""
    with running_celery_worker() as process:
        yield process


def wait_for_job(job_id: object, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    from apps.jobs.models import Job

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(id=job_id)
        if job.is_finished:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish within {timeout} s (status {job.status})")


def read_now(dataset):  # type: ignore[no-untyped-def]
    """Run an uploaded data set's job here, as a worker would: read the file into Parquet and
    profile it (for tests without a worker). Returns the data set, ready. Where a worker is
    running (tests with services), it may claim the job first: then this waits for it."""
    from apps.jobs.claiming import job_execute
    from apps.jobs.models import Job

    job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    if dataset.status != "ready" and not Job.objects.get(id=dataset.profile_job_id).is_finished:
        wait_for_job(dataset.profile_job_id)
        dataset.refresh_from_db()
    assert dataset.status == "ready", Job.objects.get(id=dataset.profile_job_id).error
    return dataset
