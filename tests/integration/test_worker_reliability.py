"""Job reliability with real workers on PostgreSQL and Redis (issues 22 and 23): a worker
started without `-Q` runs jobs; a job past the memory ceiling fails with a message and the
worker goes on; a cancel right after a start leaves the worker free for the next jobs;
another organization's burst does not make a job wait its whole length."""

from __future__ import annotations

import time

import pytest

from apps.jobs.cancel_retry import job_cancel
from apps.jobs.kinds import job_queue
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from tests.conftest import running_celery_worker, wait_for_job

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
MB = 1024 * 1024


def handlers(**kinds: str) -> dict[str, str]:
    return {
        "DEIDWEB_TEST_JOB_HANDLERS": ",".join(
            f"{kind}=tests.jobs.handlers.{handler}" for kind, handler in kinds.items()
        )
    }


def draft_assessment(custodian, analyst):
    """A draft assessment, whose jobs its guard lets run."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.assessments.services import assessment_create
    from apps.datasets.services import dataset_upload
    from tests.conftest import read_now

    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("p.csv", b"age,sex\n30,F\n41,M\n"),
        )
    )
    return assessment_create(organization=custodian, dataset=dataset, user=analyst)


def test_a_worker_started_without_q_runs_jobs_of_every_queue(custodian, analyst):
    assessment = draft_assessment(custodian, analyst)
    env = handlers(profile="ok", **{"assessment-search": "ok"})
    with running_celery_worker(env=env, plain=True):
        heavy = job_create(organization=custodian, kind="profile", params={"n": 4})
        interactive = job_create(
            organization=custodian,
            kind="assessment-search",
            params={"n": 2, "assessment_id": str(assessment.id)},
        )
        assert job_queue("profile") != job_queue("assessment-search")
        assert wait_for_job(heavy.id, timeout=30).result == {"squares": [0, 1, 4, 9]}
        assert wait_for_job(interactive.id, timeout=30).result == {"squares": [0, 1]}


def test_a_job_past_the_memory_ceiling_fails_and_the_worker_goes_on(custodian):
    env = {**handlers(profile="allocate"), "DEIDWEB_JOB_MEMORY_LIMIT": "192MB"}
    prefork = ("--pool=prefork", "--concurrency=1")
    with running_celery_worker(prefork, env) as worker:
        greedy = job_create(organization=custodian, kind="profile", params={"megabytes": 2048})
        done = wait_for_job(greedy.id, timeout=60)
        assert done.status == JobStatus.FAILED
        assert done.error.startswith(
            "The job needed more memory than a job may use (192.0 MB, DEIDWEB_JOB_MEMORY_LIMIT)"
        )
        assert 192 * MB < done.result["peak_bytes"] < 192 * MB + 256 * MB
        modest = job_create(organization=custodian, kind="profile", params={"megabytes": 32})
        assert wait_for_job(modest.id, timeout=60).result == {"megabytes": 32}
        assert worker.poll() is None
        log = worker.log_path.read_text()
        assert "past the memory ceiling" in log and "WorkerLostError" not in log


def test_a_cancel_just_after_the_start_leaves_the_worker_free(custodian, analyst):
    """Once, a cancel 8 ms after a start hung the worker and its two reserved jobs stayed
    queued for 50 minutes."""
    env = handlers(profile="slow")
    prefork = ("--pool=prefork", "--concurrency=2")
    with running_celery_worker(prefork, env) as worker:
        for _ in range(3):
            job = job_create(organization=custodian, kind="profile", params={"seconds": 30})
            deadline = time.monotonic() + 30
            while Job.objects.get(id=job.id).status != JobStatus.RUNNING:
                assert time.monotonic() < deadline, "the job did not start"
                time.sleep(0.005)
            job_cancel(job=job)  # within milliseconds of its start
        reserved = [
            job_create(organization=custodian, kind="profile", params={"seconds": 0.2})
            for _ in range(2)
        ]
        for job in reserved:
            assert wait_for_job(job.id, timeout=30).status == JobStatus.SUCCEEDED
        assert worker.poll() is None
        assert worker.log_path.read_text().count("cancelled; its process was stopped") == 3


def test_another_organization_does_not_wait_behind_a_burst(org_factory):
    """Organization A's risk job waited 104 s behind organization B's jobs."""
    env = handlers(profile="slow")
    a, b = org_factory("Alpha"), org_factory("Bravo")
    with running_celery_worker(env=env):  # one job at a time
        burst = [
            job_create(organization=b, kind="profile", params={"seconds": 1}) for _ in range(5)
        ]
        late = job_create(organization=a, kind="profile", params={"seconds": 0.2})
        for job in [*burst, late]:
            wait_for_job(job.id, timeout=60)
        order = list(
            Job.objects.filter(id__in=[j.id for j in [*burst, late]])
            .order_by("started_at")
            .values_list("organization_id", flat=True)
        )
    # B's first job had started before A's was queued; A's runs next, not sixth
    assert order.index(a.id) <= 1, order
