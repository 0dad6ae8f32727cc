"""Fair turns between organizations and members, and a limit on a member's long jobs
(issue 23, item 7: one analyst queued 35 jobs in 3 s; organization A's risk job waited
104 s behind organization B's apply jobs)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.core.errors import ApplicationError
from apps.jobs import kinds
from apps.jobs.delivery import job_run_delivered
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.jobs.scheduling import fairest_queued


@pytest.fixture
def quick(settings, monkeypatch):
    """Every kind runs the quick test handler, in-process (no child process here), without
    the guards of real assessments."""
    monkeypatch.setattr(kinds, "JOB_GUARDS", {})
    settings.DEIDWEB_JOB_HANDLERS = {kind: "tests.jobs.handlers.ok" for kind in kinds.JOB_HANDLERS}
    settings.DEIDWEB_JOB_ISOLATION = False


def queue_jobs(organization, user, kind, count):
    return [
        job_create(organization=organization, kind=kind, created_by=user, enqueue=False)
        for _ in range(count)
    ]


def on_queue(jobs, queue="heavy"):
    Job.objects.filter(id__in=[j.id for j in jobs]).update(queue=queue)


def test_another_organization_goes_before_the_rest_of_a_burst(db, org_factory, user_factory, quick):
    b = org_factory("Bravo")
    a = org_factory("Alpha")
    a_user = user_factory("a-analyst", a, "analyst")
    burst = queue_jobs(b, None, "assessment-apply", 5)  # queued first, by the system here
    late = queue_jobs(a, a_user, "assessment-apply", 1)[0]
    on_queue([*burst, late])
    order = []
    for message in burst + [late]:  # each message is one turn of the queue
        assert job_run_delivered(job_id=str(message.id), worker="w1@box") is True
        order.append(Job.objects.filter(status=JobStatus.SUCCEEDED).order_by("-finished_at")[0])
    ran = [job.id for job in order]
    # B's first job started first (no one else waited); then A, which has not had a turn,
    # before B's other four; FIFO would have run A's job last
    assert ran == [burst[0].id, late.id, *[j.id for j in burst[1:]]]


def test_within_an_organization_members_take_turns(db, custodian, user_factory, quick):
    ana = user_factory("ana", custodian, "analyst")
    bo = user_factory("bo", custodian, "analyst")
    anas = queue_jobs(custodian, ana, "assessment-risk", 3)
    bos = queue_jobs(custodian, bo, "assessment-risk", 2)
    on_queue(anas + bos, "interactive")
    order = []
    for message in anas + bos:
        job_run_delivered(job_id=str(message.id), worker="w1@box")
        order.append(Job.objects.filter(status=JobStatus.SUCCEEDED).order_by("-finished_at")[0].id)
    assert order == [anas[0].id, bos[0].id, anas[1].id, bos[1].id, anas[2].id]


def test_an_organization_with_a_job_running_waits_for_one_without(db, org_factory, quick):
    a, b = org_factory("Alpha"), org_factory("Bravo")
    b_running, b_next = queue_jobs(b, None, "assessment-apply", 2)
    a_job = queue_jobs(a, None, "assessment-apply", 1)[0]
    on_queue([b_running, b_next, a_job])
    Job.objects.filter(id=b_running.id).update(status=JobStatus.RUNNING)
    assert fairest_queued("heavy") == a_job.id


def test_a_message_runs_nothing_when_its_queue_is_empty(db, custodian, quick):
    job = queue_jobs(custodian, None, "profile", 1)[0]
    on_queue([job])
    Job.objects.filter(id=job.id).update(status=JobStatus.CANCELLED)
    assert job_run_delivered(job_id=str(job.id), worker="w1@box") is False
    # and never runs a job of another queue
    other = queue_jobs(custodian, None, "assessment-risk", 1)[0]
    on_queue([other], "interactive")
    assert job_run_delivered(job_id=str(job.id), worker="w1@box") is False
    assert Job.objects.get(id=other.id).status == JobStatus.QUEUED


def test_a_member_may_have_only_so_many_long_jobs_at_once(db, custodian, analyst, settings):
    settings.DEIDWEB_JOB_USER_HEAVY_LIMIT = 2
    first, second = (
        job_create(organization=custodian, kind=kind, created_by=analyst, enqueue=False)
        for kind in ("profile", "assessment-apply")
    )
    with pytest.raises(ApplicationError) as refused:
        job_create(organization=custodian, kind="ingest", created_by=analyst, enqueue=False)
    assert refused.value.status == 429
    assert refused.value.message == (
        "You already have 2 long jobs queued or running, the most one person may have at once "
        "(2): Profiling the data set (queued); Writing the de-identified file (Step 7) "
        "(queued). Wait until one of them ends, or cancel one, then start this one again."
    )
    # interactive jobs, other members and deidweb's own jobs are not counted or refused
    job_create(organization=custodian, kind="assessment-risk", created_by=analyst, enqueue=False)
    job_create(organization=custodian, kind="report", created_by=analyst, enqueue=False)
    # one ends: the next is accepted
    Job.objects.filter(id=first.id).update(status=JobStatus.SUCCEEDED)
    job_create(organization=custodian, kind="ingest", created_by=analyst, enqueue=False)
    assert second.status == JobStatus.QUEUED


def test_the_upload_past_the_limit_is_refused_with_the_message_and_nothing_kept(
    db, custodian, analyst, client_for, settings
):
    from apps.datasets.models import Dataset

    settings.DEIDWEB_JOB_USER_HEAVY_LIMIT = 3
    client = client_for(analyst)
    answers = [
        client.post(
            "/api/v1/datasets/",
            {
                "organization": custodian.slug,
                "file": SimpleUploadedFile(f"f{i}.csv", b"age,sex\n30,F\n41,M\n"),
            },
        )
        for i in range(4)
    ]
    assert [a.status_code for a in answers] == [201, 201, 201, 429]
    assert "You already have 3 long jobs queued or running" in answers[3].content.decode()
    assert Dataset.objects.filter(organization=custodian).count() == 3
