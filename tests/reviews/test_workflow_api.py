"""The review workflow through the API, with the pages' rules; and versions decided before
snapshots existed get one from what they hold (the data migration)."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as django_apps

from apps.assessments.models import Assessment
from apps.reviews.models import AssessmentSnapshot, ReviewDecision, Submission

pytestmark = pytest.mark.django_db
API = "/api/v1/assessments"


def post(client, path, body=None):  # type: ignore[no-untyped-def]
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def test_submit_comment_decide_revise_through_the_api(
    complete_assessment, analyst, reviewer, admin_user, client_for
):
    aid = complete_assessment.id
    as_analyst, as_reviewer = client_for(analyst), client_for(reviewer)
    assert post(as_reviewer, f"{API}/{aid}/submit/", {"note": "x"}).status_code == 403
    assert post(as_analyst, f"{API}/{aid}/submit/", {}).status_code == 400  # no note
    response = post(as_analyst, f"{API}/{aid}/submit/", {"note": "Ready."})
    assert response.status_code == 200 and response.json()["status"] == "submitted"
    assert post(as_analyst, f"{API}/{aid}/submit/", {"note": "Again"}).status_code == 409

    record = as_reviewer.get(f"{API}/{aid}/record/").json()
    snapshot = AssessmentSnapshot.objects.get(assessment_id=aid)
    from apps.reviews.snapshot import content_sha256

    assert content_sha256(snapshot.content) == snapshot.sha256  # as read back from the table
    assert record["frozen"] is True and record["sha256"] == snapshot.sha256
    assert {v["name"]: v["role"] for v in record["variables"]}["age"] == "quasi"
    assert set(record["files"]) == {"release_parquet", "release_csv"}

    comment = {"step": "threshold", "text": "Consent covers it."}
    assert post(as_analyst, f"{API}/{aid}/comments/", comment).status_code == 403
    response = post(as_reviewer, f"{API}/{aid}/comments/", comment)
    assert response.status_code == 201 and response.json()["version"] == 1
    assert (
        post(as_reviewer, f"{API}/{aid}/comments/", {"step": "nope", "text": "x"}).status_code
        == 400
    )

    verdict = {"decision": "reject", "reasons": "Threshold too lax."}
    assert post(as_analyst, f"{API}/{aid}/decide/", verdict).status_code == 403
    assert (
        post(as_reviewer, f"{API}/{aid}/decide/", {"decision": "maybe", "reasons": "x"}).status_code
        == 400
    )
    response = post(as_reviewer, f"{API}/{aid}/decide/", verdict)
    assert response.status_code == 201, response.json()
    decided = response.json()
    assert decided["final"] is True and decided["snapshot"] == str(snapshot.id)
    assert decided["audit_sequence"] and len(decided["audit_hash"]) == 64
    assert post(client_for(admin_user), f"{API}/{aid}/decide/", verdict).status_code == 409
    assert [d["id"] for d in as_analyst.get(f"{API}/{aid}/decisions/").json()] == [decided["id"]]
    assert as_analyst.get(f"{API}/{aid}/report/").status_code == 200

    assert post(as_reviewer, f"{API}/{aid}/revise/").status_code == 403
    response = post(as_analyst, f"{API}/{aid}/revise/")
    assert response.status_code == 201 and response.json()["version"] == 2
    v2 = response.json()["id"]
    assert post(as_analyst, f"{API}/{aid}/revise/").status_code == 409  # already revised
    comments = as_analyst.get(f"{API}/{v2}/comments/").json()
    assert [(c["version"], c["text"]) for c in comments] == [(1, "Consent covers it.")]
    assert as_analyst.get(f"{API}/{v2}/record/").json()["frozen"] is False
    assert as_analyst.get(f"{API}/{v2}/report/").status_code == 404


def test_outsiders_get_404_on_every_review_action(complete_assessment, outsider, client_for):
    client = client_for(outsider)
    aid = complete_assessment.id
    for path in ("submit", "comments", "decide", "revise", "report"):
        assert post(client, f"{API}/{aid}/{path}/", {"note": "x"}).status_code == 404, path
    for path in ("comments", "decisions", "record", "report"):
        assert client.get(f"{API}/{aid}/{path}/").status_code == 404, path


def test_migration_snapshots_versions_decided_before_snapshots_existed(
    complete_assessment, analyst, reviewer
):
    """A version approved under the previous release (no snapshot, decision without one)
    gets a snapshot built from what it holds, and its decision points to it."""
    submission = Submission.objects.create(
        organization=complete_assessment.organization,
        assessment=complete_assessment,
        submitted_by=analyst,
        note="Ready.",
    )
    decision = ReviewDecision.objects.create(
        organization=complete_assessment.organization,
        assessment=complete_assessment,
        submission=submission,
        reviewer=reviewer,
        decision="approve",
        reasons="Fine.",
        version=1,
        final=True,
    )
    Assessment.objects.filter(id=complete_assessment.id).update(status="approved")
    migration = importlib.import_module("apps.reviews.migrations.0002_assessment_snapshot")
    migration.snapshot_decided_versions(django_apps, None)
    migration.snapshot_decided_versions(django_apps, None)  # idempotent

    (snapshot,) = AssessmentSnapshot.objects.filter(assessment=complete_assessment)
    assert snapshot.origin == "migration" and snapshot.taken_by == analyst
    content = snapshot.content
    assert content["assessment"]["apply_result"] == complete_assessment.apply_result
    assert {v["name"]: v["role"] for v in content["variables"]} == {
        "email": "direct",
        "age": "quasi",
        "sex": "quasi",
        "diagnosis": "sensitive",
    }
    assert [h["column"] for h in content["hierarchies"]] == ["age", "sex"]
    assert (
        content["files"]["release_csv"]["sha256"]
        == complete_assessment.apply_result["sha256"]["csv"]
    )
    decision.refresh_from_db()
    assert decision.snapshot_id == snapshot.id
