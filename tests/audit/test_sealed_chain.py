"""Tampering a regulator would care about, each detected: an edit, a deleted middle event,
deleted newest events, a re-computed (re-chained) trail, and a trail cut back below the head
a signed report printed. Plus: append-only on SQLite too, and the platform's own chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from apps.audit.models import GENESIS_HASH, AuditEvent, AuditHead
from apps.audit.services import audit_record, audit_verify
from tests.audit.test_audit import tamper, three

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def rechain(organization, first: int) -> None:  # type: ignore[no-untyped-def]
    """Recompute the unkeyed SHA-256 chain from event ``first`` on, as anyone with table
    rights can: each event's hash and the next one's prev_hash, and the head."""
    events = list(AuditEvent.objects.filter(organization=organization).order_by("sequence"))
    prev = events[first - 2].hash if first > 1 else GENESIS_HASH
    for event in events[first - 1 :]:
        event.prev_hash = prev
        new_hash = event.compute_hash()
        tamper(
            "UPDATE audit_auditevent SET prev_hash = %s, hash = %s WHERE id = %s",
            [prev, new_hash, event.id],
        )
        prev = new_hash
    AuditHead.objects.filter(chain=str(organization.id)).update(hash=prev)


def test_an_edit_with_the_chain_recomputed_fails_the_seals(custodian, analyst, reviewer):
    events = three(custodian, analyst, reviewer)
    tamper(
        "UPDATE audit_auditevent SET details = %s::jsonb WHERE id = %s",
        [json.dumps({"threshold": 0.5}), events[1].id],
    )
    rechain(custodian, 2)
    problems = audit_verify(organization=custodian).problems
    assert problems == [
        f"{custodian.slug} #2: seal mismatch, the event was re-written and its hash re-computed "
        "(or the server key changed)",
        f"{custodian.slug} #3: seal mismatch, the event was re-written and its hash re-computed "
        "(or the server key changed)",
        f"{custodian.slug}: the chain's head record was altered (seal mismatch)",
    ]


def test_deleting_the_newest_events_is_seen_by_the_sealed_head(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence >= 2", [custodian.id]
    )
    result = audit_verify(organization=custodian)
    assert result.checked == 1
    assert result.problems == [
        f"{custodian.slug}: the trail ends at #1 but its head says #3: the newest events were "
        "deleted"
    ]
    # Moving the head back too needs its seal, which needs the server key.
    first = AuditEvent.objects.get(organization=custodian, sequence=1)
    AuditHead.objects.filter(chain=str(custodian.id)).update(sequence=1, hash=first.hash)
    assert audit_verify(organization=custodian).problems == [
        f"{custodian.slug}: the chain's head record was altered (seal mismatch)"
    ]
    # And deleting the head row as well is seen.
    AuditHead.objects.filter(chain=str(custodian.id)).delete()
    assert audit_verify(organization=custodian).problems == [
        f"{custodian.slug}: the chain's head record is missing (deleted)"
    ]


def test_an_append_after_a_truncation_leaves_a_gap_not_a_clean_tail(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence = 3", [custodian.id]
    )
    event = audit_record(organization=custodian, actor=analyst, action="dataset.upload")
    assert event.sequence == 4  # chained onto the head, not onto what the table ends with
    assert audit_verify(organization=custodian).problems[0] == (
        f"{custodian.slug} #4: sequence gap, #3 missing (deleted)"
    )


def test_anchor_from_the_review_flow(complete_assessment, analyst, reviewer, custodian):
    from apps.audit.services import head_seal
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit

    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    decision = review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="Fine."
    )
    decision.refresh_from_db()
    anchored = AuditEvent.objects.get(organization=custodian, sequence=decision.audit_sequence)
    assert anchored.action == "review.decision" and anchored.hash == decision.audit_hash
    assert audit_verify(organization=custodian).ok
    # Cut the trail back to just before the decision and give it a head with a valid seal
    # (the worst case: the key leaked). The anchor in the report still catches it.
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence >= %s",
        [custodian.id, decision.audit_sequence],
    )
    last = AuditEvent.objects.filter(organization=custodian).order_by("-sequence").first()
    chain = str(custodian.id)
    AuditHead.objects.filter(chain=chain).update(
        sequence=last.sequence, hash=last.hash, seal=head_seal(chain, last.sequence, last.hash)
    )
    (problem,) = audit_verify(organization=custodian).problems
    assert problem == (
        f"{custodian.slug}: the decision {decision.id} on version 1 recorded the chain at "
        f"#{decision.audit_sequence} ({decision.audit_hash[:12]}…); that event is missing now: "
        "the trail was cut or re-written"
    )


def test_the_audit_verify_command_and_api_report_a_cut(custodian, analyst, reviewer, client_for):
    from django.core.management import call_command

    three(custodian, analyst, reviewer)
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence = 3", [custodian.id]
    )
    with pytest.raises(SystemExit) as exit_:
        call_command("audit_verify", "--organization", custodian.slug)
    assert exit_.value.code == 1
    verify = client_for(reviewer).get("/api/v1/audit/verify/").json()
    assert verify["ok"] is False and "newest events were deleted" in verify["problems"][0]


def test_platform_chain_for_unknown_sign_ins_verifies(db):
    first = audit_record(organization=None, actor=None, action="auth.login_failed")
    second = audit_record(organization=None, actor=None, action="auth.login_failed")
    assert (first.sequence, second.sequence, second.prev_hash) == (1, 2, first.hash)
    result = audit_verify()
    assert result.ok and result.checked >= 2


# --- append-only on SQLite too ----------------------------------------------------------


SQLITE_PROBE = """
import json, django
django.setup()
from django.db import connection, transaction
from apps.accounts.services import organization_create
from apps.assessments.models import Assessment, HierarchySpec
from apps.audit.services import audit_record
from apps.datasets.models import Dataset

org = organization_create(name="Probe")
dataset = Dataset.objects.create(
    organization=org, name="d", original_filename="d.csv", source_format="csv", size_bytes=1,
    sha256="0" * 64, parquet_sha256="0" * 64, parquet_path="x", rows=1, column_count=1,
)
assessment = Assessment.objects.create(organization=org, dataset=dataset, title="t")
HierarchySpec.objects.create(
    organization=org, assessment=assessment, column="age", kind="suppress", arx_csv="1;*",
    height=1,
)
audit_record(organization=org, actor=None, action="dataset.upload")
Assessment.objects.filter(id=assessment.id).update(status="approved")
refused = {}
for name, sql in {
    "audit update": "UPDATE audit_auditevent SET action = 'job.run'",
    "audit delete": "DELETE FROM audit_auditevent",
    "decided update": "UPDATE assessments_assessment SET apply_result = '{}'",
    "decided reopened": "UPDATE assessments_assessment SET status = 'draft'",
    "decided delete": "DELETE FROM assessments_assessment",
    "hierarchy update": "UPDATE assessments_hierarchyspec SET arx_csv = '1;2'",
    "hierarchy delete": "DELETE FROM assessments_hierarchyspec",
}.items():
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
        refused[name] = ""
    except Exception as exc:
        refused[name] = str(exc)
print(json.dumps(refused))
"""


@pytest.mark.skipif(connection.vendor != "postgresql", reason="runs a separate SQLite database")
def test_sqlite_guards_the_trail_and_decided_versions_as_postgresql_does(tmp_path):
    """The embedded database of ``make run`` refuses the same changes."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        "DEIDWEB_VAR_DIR": str(tmp_path),
        "MEDIA_ROOT": str(tmp_path / "media"),
    }
    for argv in (["manage.py", "migrate", "--noinput"], ["-c", SQLITE_PROBE]):
        done = subprocess.run(
            [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
    refused = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(refused.values()), refused
    assert "append-only" in refused["audit update"] and "append-only" in refused["audit delete"]
    assert "frozen" in refused["decided update"] and "frozen" in refused["hierarchy delete"]
