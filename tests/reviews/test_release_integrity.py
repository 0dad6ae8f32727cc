"""What was approved is exactly what leaves, and the report never changes after the decision.

Each attack of issue #12 replayed: a cancelled job retried after approval, a job re-queued
behind the API's back, a handler run directly, a report job cancelled and retried after a
role change, a release file swapped in storage.
"""

from __future__ import annotations

import hashlib
import io

import polars as pl
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.urls import reverse

from apps.assessments.models import Assessment
from apps.assessments.release_apply import assessment_apply_handler
from apps.audit.models import AuditEvent
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.core.errors import ApplicationError
from apps.jobs.claiming import job_execute
from apps.jobs.context import JobContext
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.reports.content import report_html
from apps.reports.jobs import report_again
from apps.reports.models import Report
from apps.reviews.decisions import assessment_revise, review_decide, step_comment_add
from apps.reviews.models import ReviewDecision
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import WAIVER
from tests.reviews.conftest import run

pytestmark = pytest.mark.django_db

API = "/api/v1"


def approve(assessment, analyst, reviewer) -> ReviewDecision:  # type: ignore[no-untyped-def]
    assessment_submit(
        assessment=assessment, user=analyst, note="Ready for review.", intruder_waiver=WAIVER
    )
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets the target."
    )
    assessment.refresh_from_db()
    assert assessment.status == "approved"
    return decision


def stored_files(assessment) -> set[str]:  # type: ignore[no-untyped-def]
    prefix = f"organizations/{assessment.organization_id}/assessments/{assessment.id}"
    found: set[str] = set()

    def walk(folder: str) -> None:
        folders, files = default_storage.listdir(folder)
        found.update(f"{folder}/{name}" for name in files)
        for sub in folders:
            walk(f"{folder}/{sub}")

    walk(prefix)
    return found


def download(client, assessment, fmt: str):  # type: ignore[no-untyped-def]
    return client.get(f"{API}/assessments/{assessment.id}/release/download/", {"format": fmt})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def apply_job(assessment, user, levels):  # type: ignore[no-untyped-def]
    return job_create(
        organization=assessment.organization,
        kind="assessment-apply",
        subject=f"assessments.assessment:{assessment.id}",
        params={"assessment_id": str(assessment.id), "levels": levels},
        created_by=user,
        enqueue=False,
    )


def test_a_cancelled_apply_retried_after_approval_is_refused_and_changes_nothing(
    traded, analyst, reviewer, admin_user, client_for
):
    # The attack: an apply job of the optimum (12 records suppressed) queued and cancelled
    # while the assessment is a draft ...
    pending = apply_job(traded, analyst, {"age": 1, "sex": 0})
    response = client_for(analyst).post(f"{API}/jobs/{pending.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    decision = approve(traded, analyst, reviewer)
    approved_csv = decision.digests["release_csv"]
    files = stored_files(traded)

    # ... then retried after approval, by its creator or by an administrator: refused.
    for user in (analyst, admin_user):
        response = client_for(user).post(f"{API}/jobs/{pending.id}/retry/")
        assert response.status_code == 409, response.json()
        assert "approved" in response.json()["message"] and "frozen" in response.json()["message"]
    assert Job.objects.filter(kind="assessment-apply", status=JobStatus.QUEUED).count() == 0

    # A job for it created behind the API's back is refused by the worker before it runs.
    sneaked = apply_job(traded, analyst, {"age": 1, "sex": 0})
    job_execute(job_id=str(sneaked.id))
    sneaked.refresh_from_db()
    assert sneaked.status == "failed" and "frozen" in sneaked.error

    # And the handler itself, called directly, refuses under the row lock before it writes
    # (the files it had already stored are removed again).
    Job.objects.filter(id=sneaked.id).update(status=JobStatus.RUNNING)
    with pytest.raises(ApplicationError, match="frozen"):
        assessment_apply_handler(sneaked, JobContext(sneaked))
    assert stored_files(traded) == files

    # What leaves is what was approved: 400 records, the alternative's levels.
    traded.refresh_from_db()
    assert traded.apply_result["levels"] == {"age": 4, "sex": 0}
    body = b"".join(download(client_for(reviewer), traded, "csv").streaming_content)
    assert sha256(body) == approved_csv
    released = pl.read_csv(io.BytesIO(body))
    assert released.height == 400 and set(released["age"].cast(str)) == {"*"}


def test_risk_and_search_jobs_of_a_decided_version_are_refused(traded, analyst, reviewer):
    approve(traded, analyst, reviewer)
    before = Assessment.objects.get(id=traded.id)
    for kind in ("assessment-risk", "assessment-search"):
        job = job_create(
            organization=traded.organization,
            kind=kind,
            subject=f"assessments.assessment:{traded.id}",
            params={"assessment_id": str(traded.id)},
            created_by=analyst,
            enqueue=False,
        )
        job_execute(job_id=str(job.id))
        job.refresh_from_db()
        assert job.status == "failed" and "approved" in job.error, kind
    after = Assessment.objects.get(id=traded.id)
    assert (after.risk_result, after.search_result) == (before.risk_result, before.search_result)


def test_the_database_refuses_to_change_a_decided_version(traded, analyst, reviewer):
    """The last guard, for a path that skips the services: a trigger on the table."""
    from django.db import DatabaseError

    from apps.assessments.models import HierarchySpec

    approve(traded, analyst, reviewer)
    for change in (
        lambda: Assessment.objects.filter(id=traded.id).update(apply_result={"passes": True}),
        lambda: Assessment.objects.filter(id=traded.id).update(status="draft"),
        lambda: HierarchySpec.objects.filter(assessment=traded).update(arx_csv="x;*"),
        lambda: HierarchySpec.objects.filter(assessment=traded).delete(),
    ):
        with pytest.raises(DatabaseError, match="frozen"), transaction.atomic():
            change()


def test_only_the_creator_or_an_administrator_cancels_or_retries_a_job(
    traded, analyst, reviewer, admin_user, user_factory, client_for
):
    colleague = user_factory("colleague", traded.organization, "analyst")
    job = apply_job(traded, analyst, {"age": 4, "sex": 0})
    response = client_for(colleague).post(f"{API}/jobs/{job.id}/cancel/")
    assert response.status_code == 403
    assert "started this job or an administrator" in response.json()["message"]
    assert client_for(admin_user).post(f"{API}/jobs/{job.id}/cancel/").status_code == 200
    assert client_for(colleague).post(f"{API}/jobs/{job.id}/retry/").status_code == 403
    assert client_for(analyst).post(f"{API}/jobs/{job.id}/retry/").status_code == 201


def test_the_report_ignores_role_changes_made_after_the_decision(
    traded, analyst, reviewer, admin_user, client_for
):
    decision = approve(traded, analyst, reviewer)
    (report_job,) = Job.objects.filter(kind="report", params__decision_id=str(decision.id))
    # Nobody cancels the report job by hand: not an analyst (not theirs), not an admin.
    assert client_for(analyst).post(f"{API}/jobs/{report_job.id}/cancel/").status_code == 403
    response = client_for(admin_user).post(f"{API}/jobs/{report_job.id}/cancel/")
    assert response.status_code == 409 and "prepared by deidweb" in response.json()["message"]
    run(report_job)
    before = report_html(assessment=traded, decision=decision)
    # The signed report carries the audit chain's head at the decision and the frozen record.
    decision.refresh_from_db()
    from pypdf import PdfReader

    from apps.reports.verification import report_pdf

    text = " ".join(
        page.extract_text()
        for page in PdfReader(io.BytesIO(report_pdf(Report.objects.get(decision=decision)))).pages
    )
    assert f"event #{decision.audit_sequence}, SHA-256" in text
    assert decision.audit_hash[:16] in text.replace("\n", "")
    assert traded.snapshot.sha256[:16] in text.replace("\n", "")
    step_state = Assessment.objects.get(id=traded.id).step_state

    # The data set's roles change afterwards (for a new version) ...
    sex = Variable.objects.get(dataset=traded.dataset, name="sex")
    variables_classify(
        dataset=traded.dataset,
        user=analyst,
        decisions=[RoleDecision(variable_id=str(sex.id), role="other", reason="Not knowable.")],
    )
    # ... the decided version does not notice, and its report is rendered the same.
    assert Assessment.objects.get(id=traded.id).step_state == step_state
    after = report_html(assessment=traded, decision=decision)
    assert after == before
    assert "Quasi-identifier" in after and "Not knowable." not in after
    page = client_for(reviewer).get(
        reverse(
            "assessment-review",
            kwargs={"org": traded.organization.slug, "assessment_id": traded.id},
        )
    )
    rows = page.content.decode().split('data-testid="review-variables"')[1].split("</table>")[0]
    assert "<td>sex</td><td>Quasi-identifier" in rows and "Not knowable." not in rows

    # A lost report is prepared again from the frozen record, with the same content.
    report = Report.objects.get(decision=decision)
    with pytest.raises(ApplicationError, match="has its signed report"):
        report_again(assessment=traded, user=reviewer)
    default_storage.delete(report.pdf_path)
    (again,) = report_again(assessment=traded, user=reviewer)
    run(again)
    assert report_html(assessment=traded, decision=decision) == before


def test_a_release_file_swapped_in_storage_is_refused_and_audited(
    traded, analyst, reviewer, client_for
):
    decision = approve(traded, analyst, reviewer)
    client = client_for(reviewer)
    assert (
        sha256(b"".join(download(client, traded, "parquet").streaming_content))
        == (decision.digests["release_parquet"])
    )
    # Someone with access to the storage replaces the approved CSV.
    name = traded.output_csv_path
    default_storage.delete(name)
    default_storage.save(name, ContentFile(b"email,age,sex\nleaked@example.org,47,F\n"))
    response = download(client, traded, "csv")
    assert response.status_code == 409
    assert decision.digests["release_csv"] in response.json()["message"]
    (refused,) = AuditEvent.objects.filter(action="download.refused")
    assert refused.details["approved_sha256"] == decision.digests["release_csv"]
    assert refused.details["stored_sha256"] == sha256(b"email,age,sex\nleaked@example.org,47,F\n")
    page = client.get(
        reverse(
            "assessment-release-download",
            kwargs={"org": traded.organization.slug, "assessment_id": traded.id, "fmt": "csv"},
        )
    )
    assert (
        page.status_code == 409
        and AuditEvent.objects.filter(action="download.refused").count() == 2
    )


def test_the_reviewer_reads_the_applied_alternative_and_labelled_charts(
    traded, analyst, reviewer, client_for
):
    assessment_submit(
        assessment=traded, user=analyst, note="Ready for review.", intruder_waiver=WAIVER
    )
    page = client_for(reviewer).get(
        reverse(
            "assessment-review",
            kwargs={"org": traded.organization.slug, "assessment_id": traded.id},
        )
    )
    body = page.content.decode()
    applied = body.split('data-testid="applied-solution"')[1].split("</section>")[0]
    assert "<strong>an alternative</strong>" in applied
    assert "<strong>age</strong>: suppressed (*)" in applied
    assert "<strong>sex</strong>: kept as is" in applied
    assert "would have been: age: intervals of 5 · sex: kept as is" in applied
    assert "Records suppressed: 0 of 400" in applied
    assert "original data (Step 4)" in applied and "released file (Step 7)" in applied
    assert "Before de-identification: the original data (Step 4)" in body
    assert 'data-testid="frozen-record"' in body


def test_comments_on_version_1_are_shown_on_version_2(traded, analyst, reviewer, client_for):
    assessment_submit(
        assessment=traded, user=analyst, note="Ready for review.", intruder_waiver=WAIVER
    )
    step_comment_add(
        assessment=traded, author=reviewer, step="deidentify", text="Keep five-year bands."
    )
    review_decide(assessment=traded, reviewer=reviewer, decision="reject", reasons="Too much loss.")
    with pytest.raises(ApplicationError, match="Comments are made while a version is under review"):
        step_comment_add(assessment=traded, author=reviewer, step="general", text="Late")
    v2 = assessment_revise(assessment=traded, user=analyst)
    body = (
        client_for(analyst)
        .get(
            reverse(
                "assessment-review", kwargs={"org": v2.organization.slug, "assessment_id": v2.id}
            )
        )
        .content.decode()
    )
    assert "Keep five-year bands." in body and "of version 1 (an earlier version)" in body
    response = client_for(analyst).get(f"{API}/assessments/{v2.id}/comments/")
    assert [(c["version"], c["text"]) for c in response.json()] == [(1, "Keep five-year bands.")]


def test_a_new_version_picks_up_roles_changed_after_the_decision(traded, analyst, reviewer):
    approve(traded, analyst, reviewer)
    sex = Variable.objects.get(dataset=traded.dataset, name="sex")
    variables_classify(
        dataset=traded.dataset,
        user=analyst,
        decisions=[RoleDecision(variable_id=str(sex.id), role="other", reason="Not knowable.")],
    )
    v2 = assessment_revise(assessment=traded, user=analyst)
    assert v2.step_state["data-risk"]["stale"] is True and v2.search_result is None
    assert traded.snapshot.content["variables"][2]["role"] == "quasi"
