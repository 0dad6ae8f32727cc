"""Assessments brought to Step 7 through the services and the real worker, for browser tests
that start where the interesting part begins."""

from __future__ import annotations

from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Page, expect

from apps.assessments import services
from apps.assessments.models import Assessment
from apps.classification.services import variables_accept_suggestions
from apps.jobs.models import Job
from apps.reviews.models import ReviewDecision
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


def sign_in(browser, base: str, username: str) -> Page:  # type: ignore[no-untyped-def]
    """A fresh browser context (downloads accepted) signed in as ``username``."""
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}")
    page.get_by_role("button", name="Sign in").click()
    return page


def accept_submit_approve(  # type: ignore[no-untyped-def]
    browser,
    base: str,
    ana: Page,
    assessment: Assessment,
    *,
    utility: str,
    note: str,
    waiver: str,
    reasons: str,
) -> tuple[Page, ReviewDecision]:
    """From Step 8's page: the analyst accepts the utility, submits the public release with
    a waiver of the motivated-intruder test (nothing blocks it), the reviewer approves it on
    the review page, and the worker renders and signs the report. Returns the reviewer's
    page and the approving decision."""
    from tests.conftest import wait_for_job

    ana.get_by_label("Why the remaining utility is acceptable for the purpose").fill(utility)
    ana.get_by_test_id("accept-utility").click()
    overview = f"{base}/o/{assessment.organization.slug}/assessments/{assessment.id}/"
    ana.goto(overview)
    expect(ana.get_by_test_id("blockers")).to_have_count(0)
    ana.get_by_test_id("submit-note").fill(note)
    ana.get_by_test_id("submit-intruder-waiver").fill(waiver)
    ana.get_by_test_id("submit").click()
    expect(ana.get_by_test_id("status")).to_have_text("Submitted for review")

    rev = sign_in(browser, base, "reviewer")
    rev.goto(f"{overview}review/")
    rev.get_by_label("Approve the release").check()
    rev.get_by_test_id("reasons").fill(reasons)
    rev.get_by_test_id("decide").click()
    expect(rev.get_by_test_id("decision")).to_contain_text("Approved")
    decision = Assessment.objects.get(id=assessment.id).decisions.get()
    report_job = Job.objects.get(kind="report", params__decision_id=str(decision.id))
    finished = wait_for_job(report_job.id, timeout=120)
    assert finished.status == "succeeded", finished.error
    return rev, decision


def signed_report(page: Page, organization, folder: Path) -> bytes:  # type: ignore[no-untyped-def]
    """On an approved assessment's overview: the signed report downloaded through its link,
    its signature checked valid, intact and trusted (the organization's certificate);
    returns the PDF's bytes."""
    from apps.reports.identity import organization_certificate
    from apps.reports.signing import verify_pdf

    expect(page.get_by_test_id("status")).to_have_text("Approved")
    with page.expect_download() as download:
        page.get_by_test_id("overview-report-link").click()
    pdf = folder / "report.pdf"
    download.value.save_as(pdf)
    check = verify_pdf(pdf.read_bytes(), [organization_certificate(organization)])
    assert check.valid and check.intact and check.trusted, check.problem
    return pdf.read_bytes()
