"""Submit → reject with a comment → revise and resubmit → approve → both download the signed
report and the released file. Chromium, a real worker, Redis and PostgreSQL."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from apps.assessments import deidentify, release_apply, services
from apps.assessments.models import Assessment
from apps.classification.models import Variable
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
)
from apps.datasets.demo import generate_register
from tests.assessments.conftest import LOW_ANSWERS
from tests.browser.prepared import reload_when_settled, sign_in, signed_report
from tests.conftest import wait_for_job
from tests.justify import justify_all

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]
TIMEOUT = 120_000


def prepared_assessment(organization, analyst) -> Assessment:
    """Steps 1-8 done through the services, the jobs run by the real worker."""
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=organization,
        user=analyst,
        name="Demo register",
        upload=SimpleUploadedFile("demo.csv", generate_register(800).write_csv().encode()),
    )
    assert wait_for_job(dataset.profile_job_id, timeout=120).status == "succeeded"
    dataset.refresh_from_db()
    variables_accept_suggestions(dataset=dataset, user=analyst)
    keep = {"age", "sex", "postal_code"}
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            # left out of the release (as "other" they would be released as they are, exact
            # dates of birth included, which the free-text guard now refuses to submit)
            RoleDecision(variable_id=str(v.id), role="direct", reason="Not needed: left out")
            for v in Variable.objects.filter(dataset=dataset, role="quasi").exclude(name__in=keep)
        ],
    )
    assessment = services.assessment_create(
        organization=organization, dataset=dataset, user=analyst
    )
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    for start in (
        services.assessment_start_risk,
        deidentify.assessment_start_search,
        release_apply.assessment_start_apply,
    ):
        job = start(assessment=assessment, user=analyst)
        assert wait_for_job(job.id, timeout=120).status == "succeeded"
        assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Bands suffice.")
    justify_all(assessment)
    return assessment


def test_reject_revise_approve_and_download(
    celery_worker_process, live_server, browser, analyst, reviewer, custodian, tmp_path
):
    from apps.reports.identity import organization_signing_ensure

    organization_signing_ensure(organization=custodian)
    v1 = prepared_assessment(custodian, analyst)
    base = live_server.url
    overview = f"{base}/o/{custodian.slug}/assessments/{v1.id}/"

    # The analyst submits.
    ana = sign_in(browser, base, "analyst")
    ana.goto(overview)
    ana.get_by_test_id("submit-note").fill("All steps done; public release of age bands.")
    ana.get_by_test_id("submit-intruder-waiver").fill(
        "Open-data release of counts already published; the custodian waived the test."
    )
    ana.get_by_test_id("submit").click()
    expect(ana.get_by_test_id("status")).to_have_text("Submitted for review")

    # The reviewer comments on Step 3 and rejects.
    rev = sign_in(browser, base, "reviewer")
    rev.get_by_role("link", name="Reviews").click()
    rev.get_by_test_id("review-queue").get_by_role("link", name=v1.title).click()
    rev.get_by_label("Comment on").select_option("threshold")
    rev.get_by_test_id("comment-text").fill(
        "Diagnoses are sensitive: the invasion of privacy is high."
    )
    rev.get_by_test_id("add-comment").click()
    expect(rev.get_by_test_id("comment")).to_contain_text("invasion of privacy is high")
    rev.get_by_label("Reject and return it to the analyst").check()
    rev.get_by_test_id("reasons").fill("Threshold too lax for health data.")
    rev.get_by_test_id("decide").click()
    expect(rev.get_by_test_id("decision")).to_contain_text("Rejected by reviewer")

    # The analyst sees why, revises as version 2, raises the threshold and redoes Steps 7-8.
    ana.goto(overview)
    expect(ana.get_by_test_id("status")).to_have_text("Rejected")
    expect(ana.get_by_test_id("overview-comment")).to_contain_text("invasion of privacy is high")
    ana.get_by_test_id("revise").click()
    expect(ana.get_by_role("heading", level=1)).to_have_text(v1.title)
    v2 = Assessment.objects.get(previous=v1)
    assert v2.version == 2
    ana.get_by_role("link", name="Risk threshold", exact=True).click()
    ana.get_by_role("group", name="How sensitive is the information?").get_by_label(
        "high", exact=True
    ).check()
    ana.get_by_role(
        "group", name="How serious would harm or injury be after a breach or misuse?"
    ).get_by_label("high", exact=True).check()
    ana.get_by_role(
        "group", name="How detailed is the information (scope, granularity)?"
    ).get_by_label("high", exact=True).check()
    ana.get_by_role("group", name="How many individuals does it concern?").get_by_label(
        "very many", exact=True
    ).check()
    ana.get_by_role(
        "group", name="Is the disclosure permitted by FIPPA/MFIPPA without consent?"
    ).get_by_label("no", exact=True).check()
    # 2 + 2 + 2 + 2 + 2 = 10 of 14 → high invasion of privacy → threshold 0.05.
    ana.get_by_test_id("save-step").click()
    expect(ana.get_by_test_id("invasion-level")).to_have_text("high")
    expect(ana.get_by_test_id("state-deidentify")).to_have_text("⚠ stale")
    ana.get_by_role("link", name="De-identify", exact=True).click()
    expect(ana.get_by_test_id("optimum")).to_have_count(0)  # the old search answered another target
    ana.get_by_test_id("run-search").click()
    expect(ana.get_by_test_id("optimum")).to_be_visible(timeout=TIMEOUT)
    ana.get_by_test_id("apply").click()
    # Version 2 still shows version 1's output until the new one is written.
    assert (
        wait_for_job(Assessment.objects.get(id=v2.id).apply_job_id, timeout=120).status
        == "succeeded"
    )
    reload_when_settled(ana)
    expect(ana.get_by_test_id("applied")).to_contain_text("meets the target", timeout=TIMEOUT)
    expect(ana.get_by_test_id("state-deidentify")).to_have_text("✓ done")
    ana.get_by_role("link", name=re.compile("Next: Step 8")).click()
    ana.get_by_label("Why the remaining utility is acceptable for the purpose").fill(
        "Coarser, still fit."
    )
    ana.get_by_test_id("accept-utility").click()
    ana.get_by_test_id("submit-note").fill("Threshold raised to high as asked.")
    ana.get_by_test_id("submit-intruder-waiver").fill(
        "Open-data release of counts already published; the custodian waived the test."
    )
    ana.get_by_test_id("submit").click()
    expect(ana.get_by_test_id("status")).to_have_text("Submitted for review")

    # The reviewer approves version 2; the worker renders and signs the report.
    rev.goto(f"{base}/o/{custodian.slug}/assessments/{v2.id}/review/")
    rev.get_by_label("Approve the release").check()
    rev.get_by_test_id("reasons").fill("Meets the high-invasion threshold of 0.05.")
    rev.get_by_test_id("decide").click()
    decision = v2.decisions.get()
    report_job = wait_for_job(
        __import__("apps.jobs.models", fromlist=["Job"])
        .Job.objects.get(kind="report", params__decision_id=str(decision.id))
        .id,
        timeout=120,
    )
    assert report_job.status == "succeeded", report_job.error

    for page in (ana, rev):
        page.goto(f"{base}/o/{custodian.slug}/assessments/{v2.id}/")
        signed_report(page, custodian, tmp_path)
        with page.expect_download() as data_download:
            page.get_by_test_id("download-csv").click()
        released = tmp_path / f"{page is ana}-released.csv"
        data_download.value.save_as(released)
        header = released.read_text().splitlines()[0].split(",")
        assert "age" in header and "email" not in header  # direct identifiers removed

    v1.refresh_from_db()
    assert v1.status == "rejected"  # the old version stays as it was decided
