"""Assessments brought to Step 7 through the services and the real worker, for browser tests
that start where the interesting part begins."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from apps.assessments import services
from apps.assessments.models import Assessment
from apps.classification.services import variables_accept_suggestions
from tests.assessments.conftest import LOW_ANSWERS, trade_off_people
from tests.conftest import wait_for_job


def trade_off_at_step_7(custodian, analyst) -> Assessment:  # type: ignore[no-untyped-def]
    """The 400-person ``trade_off_people`` register as a public release at low invasion of
    privacy (target k = 10), its suggestions accepted and Step 4 measured."""
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        name="Clinic register",
        upload=SimpleUploadedFile("register.csv", trade_off_people().write_csv().encode()),
    )
    assert wait_for_job(dataset.profile_job_id, timeout=120).status == "succeeded"
    dataset.refresh_from_db()
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    job = services.assessment_start_risk(assessment=assessment, user=analyst)
    assert wait_for_job(job.id, timeout=120).status == "succeeded"
    return assessment


def reload_when_settled(page) -> None:  # type: ignore[no-untyped-def]
    """Reload the page once its job has finished. The page reloads itself when it sees the
    job end (templates/jobs/_progress.html), so a reload of ours may be cut short by that
    one (net::ERR_ABORTED): then the page's own reload is the one that counts."""
    from playwright.sync_api import Error

    try:
        page.reload()
    except Error as exc:
        if "ERR_ABORTED" not in str(exc) and "detached" not in str(exc):
            raise
    page.wait_for_load_state("load")


def justify_on_step_7(page, text: str) -> int:  # type: ignore[no-untyped-def]
    """On Step 7's page after the file is written: a justification for every altered
    variable (required before submission, EMA Policy 0070), saved; returns how many."""
    boxes = page.get_by_test_id("justifications").locator("textarea")
    count = boxes.count()
    for i in range(count):
        boxes.nth(i).fill(text)
    page.get_by_test_id("save-justifications").click()
    expect(page.get_by_test_id("justifications").locator("textarea").first).to_have_value(text)
    return count
