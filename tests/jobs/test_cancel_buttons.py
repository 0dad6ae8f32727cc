"""Each Cancel button cancels the job it stands under (issue 22, item 4: the Cancel button
under Step 7's apply cancelled the search). Every job panel is checked: Step 4's risk, Step
7's search and apply side by side, the upload on the data set's page, the job's own page;
a job that may not be cancelled (a decision's report) has no button."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from apps.assessments import deidentify
from apps.assessments.models import Assessment
from apps.classification.services import variables_accept_suggestions
from apps.datasets.services import dataset_upload
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from tests.assessments.conftest import through_risk, trade_off_people, uploaded_register
from tests.reviews.conftest import run

PANEL = 'data-testid="job-progress"'
SHOWN = re.compile(r"/jobs/([0-9a-f-]{36})/progress/")
FORM = re.compile(r'<form method="post" action="([^"]+)">(.*?)</form>', re.S)


def panels(html: str) -> list[tuple[str | None, str | None]]:
    """Per job panel of a page, in order: (the job it shows, where its Cancel button posts).
    A panel runs until the next one."""
    parts = html.split(PANEL)[1:]
    found = []
    for part in parts:
        shown = SHOWN.search(part)
        button = next((f.group(1) for f in FORM.finditer(part) if "cancel-job" in f.group(2)), None)
        found.append((shown.group(1) if shown else None, button))
    return found


def queued(assessment: Assessment, kind: str, analyst) -> Job:
    return job_create(
        organization=assessment.organization,
        kind=kind,
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id)},
        created_by=analyst,
        enqueue=False,
    )


def step_page(assessment: Assessment, slug: str) -> str:
    return reverse(
        "assessment-step",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id, "slug": slug},
    )


def press(client, action: str, page: str):
    return client.post(action, {"back": "subject"}, HTTP_REFERER=page)


@pytest.fixture
def at_step_7(custodian, analyst):
    dataset = uploaded_register(custodian, analyst, trade_off_people())
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    return assessment


def test_step_7_search_and_apply_buttons_cancel_their_own_jobs(at_step_7, analyst, client_for):
    assessment = at_step_7
    search, apply = (
        queued(assessment, "assessment-search", analyst),
        queued(assessment, "assessment-apply", analyst),
    )
    Job.objects.filter(id=search.id).update(status=JobStatus.RUNNING)
    Assessment.objects.filter(id=assessment.id).update(search_job=search, apply_job=apply)
    client = client_for(analyst)
    page = step_page(assessment, "deidentify")
    shown = panels(client.get(page).content.decode())
    assert [job for job, _ in shown] == [str(search.id), str(apply.id)]
    assert all(button for _, button in shown)

    # the button under the apply cancels the apply, and only it; back to Step 7
    response = press(client, shown[1][1], page)
    assert response.status_code == 302 and response["Location"] == page
    assert Job.objects.get(id=apply.id).status == JobStatus.CANCELLED
    assert Job.objects.get(id=search.id).status == JobStatus.RUNNING
    # the search's button then cancels the search
    press(client, shown[0][1], page)
    assert Job.objects.get(id=search.id).status == JobStatus.CANCELLED
    # finished jobs have no button
    assert all(button is None for _, button in panels(client.get(page).content.decode()))


def test_step_4_risk_button_cancels_the_risk_job(at_step_7, analyst, client_for):
    assessment = at_step_7
    risk = queued(assessment, "assessment-risk", analyst)
    Assessment.objects.filter(id=assessment.id).update(risk_job=risk)
    client = client_for(analyst)
    page = step_page(assessment, "data-risk")
    [(shown, action)] = panels(client.get(page).content.decode())
    assert shown == str(risk.id) and action
    press(client, action, page)
    assert Job.objects.get(id=risk.id).status == JobStatus.CANCELLED


def test_the_upload_panel_cancels_the_upload_and_the_job_page_its_job(
    custodian, analyst, client_for
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("people.csv", b"age,sex\n30,F\n41,M\n"),
    )
    other = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("other.csv", b"age,sex\n30,F\n41,M\n"),
    )
    client = client_for(analyst)
    page = reverse("dataset-detail", kwargs={"org": custodian.slug, "dataset_id": dataset.id})
    [(shown, action)] = panels(client.get(page).content.decode())
    assert shown == str(dataset.profile_job_id) and action
    assert press(client, action, page)["Location"] == page
    assert Job.objects.get(id=dataset.profile_job_id).status == JobStatus.CANCELLED
    assert Job.objects.get(id=other.profile_job_id).status == JobStatus.QUEUED

    job_page = reverse("job-detail", kwargs={"org": custodian.slug, "job_id": other.profile_job_id})
    [(shown, action)] = panels(client.get(job_page).content.decode())
    assert shown == str(other.profile_job_id) and action
    response = client.post(action, {"back": "job"})
    assert response["Location"] == job_page
    assert Job.objects.get(id=other.profile_job_id).status == JobStatus.CANCELLED


def test_a_job_that_may_not_be_cancelled_has_no_button(custodian, analyst, client_for):
    report = job_create(organization=custodian, kind="report", created_by=analyst, enqueue=False)
    page = reverse("job-detail", kwargs={"org": custodian.slug, "job_id": report.id})
    [(shown, button)] = panels(client_for(analyst).get(page).content.decode())
    assert shown == str(report.id) and button is None


def test_a_reviewer_sees_no_cancel_button(at_step_7, analyst, reviewer, client_for):
    risk = queued(at_step_7, "assessment-risk", analyst)
    page = reverse("job-detail", kwargs={"org": at_step_7.organization.slug, "job_id": risk.id})
    [(_, button)] = panels(client_for(reviewer).get(page).content.decode())
    assert button is None
