"""The audit trail: hash chain, append-only guards, verification, page and API.

Tampering is simulated with raw SQL after ``ALTER TABLE … DISABLE TRIGGER`` inside the
test's own transaction (see ``tamper``); the rollback at the end of the test re-enables the
trigger. We chose that over ``SET session_replication_role = replica``, which would also
switch off the foreign-key triggers and needs a superuser.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import threading
import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import GENESIS_HASH, AppendOnlyError, AuditEvent
from apps.audit.selectors import audit_events
from apps.audit.services import audit_record, audit_verify

pytestmark = pytest.mark.django_db

TRIGGER = "audit_auditevent_append_only"


def tamper(sql: str, params: list[object]) -> None:
    """Change history behind the application's back, as someone with table rights could."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: check them now, since
            # ALTER TABLE refuses a table with pending (deferred) trigger events.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(sql, params)


def three(custodian, analyst, reviewer) -> list[AuditEvent]:
    return [
        audit_record(
            organization=custodian,
            actor=analyst,
            action="dataset.upload",
            object_type="datasets.dataset",
            object_id="d1",
            details={"rows": 120, "name": "a.csv"},
        ),
        audit_record(
            organization=custodian,
            actor=analyst,
            action="assessment.threshold",
            object_type="assessments.assessment",
            object_id="a1",
            details={"threshold": 0.09},
        ),
        audit_record(
            organization=custodian,
            actor=reviewer,
            action="review.decision",
            object_type="assessments.assessment",
            object_id="a1",
            details={"decision": "approve"},
        ),
    ]


# --- the chain ------------------------------------------------------------------------


def test_three_events_form_a_chain_that_verifies(custodian, analyst, reviewer):
    events = three(custodian, analyst, reviewer)
    assert [e.sequence for e in events] == [1, 2, 3]
    assert events[0].prev_hash == GENESIS_HASH == "0" * 64
    assert events[1].prev_hash == events[0].hash and events[2].prev_hash == events[1].hash
    assert len({e.hash for e in events}) == 3

    # Recompute the second event's hash by hand, from the row as stored.
    e = AuditEvent.objects.get(id=events[1].id)
    canonical = json.dumps(
        {
            "action": "assessment.threshold",
            "actor_name": "analyst",
            "created_at": e.created_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
            "details": {"threshold": 0.09},
            "id": str(e.id),
            "object_id": "a1",
            "object_repr": "",
            "object_type": "assessments.assessment",
            "organization": str(custodian.id),
            "prev_hash": events[0].hash,
            "sequence": 2,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert e.canonical_json() == canonical
    assert e.hash == hashlib.sha256(canonical.encode()).hexdigest()

    result = audit_verify(organization=custodian)
    assert (result.ok, result.checked, result.organizations, result.problems) == (True, 3, 1, [])


def test_canonical_json_is_exactly_as_documented():
    event = AuditEvent(
        id=uuid.UUID("00000000-0000-4000-8000-000000000001"),
        organization_id=uuid.UUID("00000000-0000-4000-8000-0000000000aa"),
        sequence=1,
        created_at=dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        actor_name="alice",
        action="dataset.upload",
        object_type="datasets.dataset",
        object_id="d1",
        object_repr="Clinic visits",
        details={"rows": 2, "b": "é"},
        prev_hash=GENESIS_HASH,
    )
    expected = (
        '{"action":"dataset.upload","actor_name":"alice",'
        '"created_at":"2025-01-02T03:04:05.000000+00:00","details":{"b":"é","rows":2},'
        '"id":"00000000-0000-4000-8000-000000000001","object_id":"d1",'
        '"object_repr":"Clinic visits","object_type":"datasets.dataset",'
        '"organization":"00000000-0000-4000-8000-0000000000aa",'
        f'"prev_hash":"{"0" * 64}","sequence":1}}'
    )
    assert event.canonical_json() == expected
    assert event.compute_hash() == hashlib.sha256(expected.encode("utf-8")).hexdigest()


def test_record_fills_object_and_actor_and_makes_details_json_safe(custodian, analyst):
    membership = analyst.memberships.get()
    event = audit_record(
        organization=custodian,
        actor=analyst,
        action="classification.change",
        obj=membership,
        details={
            "id": uuid.UUID(int=5),
            "amount": Decimal("1.50"),
            "day": dt.date(2025, 3, 1),
            "tags": {"b", "a"},
            "big": 1e20,
            "tiny": 1.5e-7,
            "zero": -0.0,
            "nan": float("nan"),
            "nested": ({"at": dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)},),
            7: "int key",
        },
    )
    assert event.object_type == "accounts.membership"
    assert event.object_id == str(membership.pk) and event.object_repr == str(membership)
    assert (event.actor, event.actor_name) == (analyst, "analyst")
    stored = AuditEvent.objects.get(id=event.id)  # read back from jsonb
    assert stored.details == {
        "id": str(uuid.UUID(int=5)),
        "amount": "1.50",
        "day": "2025-03-01",
        "tags": ["a", "b"],
        "big": "1e+20",
        "tiny": "1.5e-07",
        "zero": 0.0,
        "nan": "nan",
        "nested": [{"at": "2025-03-01T12:00:00+00:00"}],
        "7": "int key",
    }
    assert stored.compute_hash() == stored.hash
    assert audit_verify(organization=custodian).ok


def test_record_refuses_bad_actions_and_objects_of_another_organization(custodian, outsider):
    for bad in ["upload", "Dataset.Upload", "dataset.", "dataset upload", ""]:
        with pytest.raises(ValueError, match="dotted lowercase"):
            audit_record(organization=custodian, actor=None, action=bad)
    with pytest.raises(ValueError, match="another organization"):
        audit_record(
            organization=custodian,
            actor=outsider,
            action="download.release",
            obj=outsider.memberships.get(),
        )
    assert not AuditEvent.objects.exists()


def test_system_events_have_no_actor(custodian):
    event = audit_record(organization=custodian, actor=None, action="job.run", object_id="j1")
    assert (event.actor, event.actor_name, event.sequence) == (None, "", 1)


def test_twenty_appends_keep_sequences_contiguous_per_organization(custodian, outsider, analyst):
    elsewhere = outsider.memberships.get().organization
    for i in range(20):
        audit_record(organization=custodian, actor=analyst, action="job.run", details={"i": i})
        if i % 4 == 0:
            audit_record(organization=elsewhere, actor=outsider, action="job.run")
    assert list(
        AuditEvent.objects.filter(organization=custodian)
        .order_by("sequence")
        .values_list("sequence", flat=True)
    ) == list(range(1, 21))
    assert list(
        AuditEvent.objects.filter(organization=elsewhere)
        .order_by("sequence")
        .values_list("sequence", flat=True)
    ) == [1, 2, 3, 4, 5]
    result = audit_verify()
    assert (result.ok, result.checked, result.organizations) == (True, 25, 2)


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_from_threads_stay_contiguous(custodian, analyst):
    if connection.vendor != "postgresql":
        pytest.skip("needs a database that several connections share")
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            for i in range(5):
                audit_record(
                    organization=custodian, actor=analyst, action="job.run", details={"i": i}
                )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(
        AuditEvent.objects.filter(organization=custodian).values_list("sequence", flat=True)
    ) == list(range(1, 21))
    assert audit_verify(organization=custodian).ok


# --- tampering is detected ------------------------------------------------------------


def test_an_edited_event_is_reported_by_its_sequence(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    tamper(
        "UPDATE audit_auditevent SET details = %s::jsonb WHERE organization_id = %s AND sequence = 2",
        [json.dumps({"threshold": 0.5}), custodian.id],
    )
    result = audit_verify(organization=custodian)
    assert not result.ok and result.checked == 3
    assert result.problems == [
        f"{custodian.slug} #2: hash mismatch, the event was edited after recording"
    ]


def test_an_edited_event_whose_hash_was_recomputed_breaks_the_next_link(
    custodian, analyst, reviewer
):
    events = three(custodian, analyst, reviewer)
    forged = AuditEvent.objects.get(id=events[1].id)
    forged.details = {"threshold": 0.5}
    tamper(
        "UPDATE audit_auditevent SET details = %s::jsonb, hash = %s WHERE id = %s",
        [json.dumps(forged.details), forged.compute_hash(), forged.id],
    )
    problems = audit_verify(organization=custodian).problems
    assert problems[0].startswith(f"{custodian.slug} #2: seal mismatch")
    assert problems[1].startswith(f"{custodian.slug} #3: prev_hash mismatch")


def test_a_deleted_event_leaves_a_gap(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence = 2", [custodian.id]
    )
    result = audit_verify(organization=custodian)
    assert not result.ok and result.checked == 2
    assert result.problems[0] == f"{custodian.slug} #3: sequence gap, #2 missing (deleted)"
    assert result.problems[1].startswith(f"{custodian.slug} #3: prev_hash mismatch")
    assert len(result.problems) == 2


def test_reordered_events_are_reported(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    for old, new in [(1, 100), (2, 1), (100, 2)]:
        tamper(
            "UPDATE audit_auditevent SET sequence = %s WHERE organization_id = %s AND sequence = %s",
            [new, custodian.id, old],
        )
    problems = audit_verify(organization=custodian).problems
    assert f"{custodian.slug} #1: hash mismatch, the event was edited after recording" in problems
    assert any(p.startswith(f"{custodian.slug} #1: prev_hash mismatch") for p in problems)
    assert any(p.startswith(f"{custodian.slug} #3: prev_hash mismatch") for p in problems)


def test_verifying_all_organizations_names_the_broken_one(custodian, outsider, analyst, reviewer):
    three(custodian, analyst, reviewer)
    elsewhere = outsider.memberships.get().organization
    audit_record(organization=elsewhere, actor=outsider, action="dataset.upload")
    tamper(
        "UPDATE audit_auditevent SET actor_name = 'someone' WHERE organization_id = %s",
        [elsewhere.id],
    )
    result = audit_verify()
    assert (result.ok, result.checked, result.organizations) == (False, 4, 2)
    assert result.problems == [
        f"{elsewhere.slug} #1: hash mismatch, the event was edited after recording"
    ]


# --- history cannot be changed --------------------------------------------------------


def test_model_and_queryset_refuse_changes_and_deletion(custodian, analyst, reviewer):
    event = three(custodian, analyst, reviewer)[0]
    event.details = {"rows": 1}
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(id=event.id).update(action="dataset.delete")
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()
    with pytest.raises(AppendOnlyError, match="audit_record"):
        AuditEvent.objects.create(organization=custodian, sequence=9, action="job.run")
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.bulk_create([AuditEvent(organization=custodian, sequence=9)])
    assert AuditEvent.objects.count() == 3
    assert audit_verify(organization=custodian).ok


def test_the_trigger_blocks_raw_update_and_delete(custodian, analyst, reviewer):
    if connection.vendor != "postgresql":
        pytest.skip("the append-only trigger is PostgreSQL's")
    three(custodian, analyst, reviewer)
    for sql in [
        "UPDATE audit_auditevent SET details = '{}'::jsonb WHERE sequence = 2",
        "UPDATE audit_auditevent SET actor_id = NULL, actor_name = 'x' WHERE sequence = 2",
        "DELETE FROM audit_auditevent WHERE sequence = 2",
    ]:
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    assert audit_verify(organization=custodian).ok


def test_deleting_a_user_keeps_the_attribution_and_the_chain(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    get_user_model().objects.filter(id=analyst.id).delete()  # SET_NULL passes the trigger
    first = AuditEvent.objects.get(organization=custodian, sequence=1)
    assert (first.actor_id, first.actor_name) == (None, "analyst")
    assert audit_verify(organization=custodian).ok


# --- the command ----------------------------------------------------------------------


def run_command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("audit_verify", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_command_exits_0_when_intact_and_1_on_tampering(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    assert run_command() == (0, "OK: 3 events in 1 organizations, chain intact\n", "")
    code, out, _ = run_command("--organization", custodian.slug)
    assert (code, out) == (0, "OK: 3 events in 1 organizations, chain intact\n")

    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence = 1", [custodian.id]
    )
    code, out, err = run_command("--organization", custodian.slug)
    assert code == 1 and out == ""
    assert f"{custodian.slug} #2: sequence gap, #1 missing (deleted)" in err
    assert "FAILED" in err
    with pytest.raises(CommandError, match="No organization"):
        call_command("audit_verify", "--organization", "nope")


# --- the page -------------------------------------------------------------------------


def test_page_is_for_reviewers_and_admins(
    client_for, custodian, analyst, reviewer, admin_user, outsider
):
    three(custodian, analyst, reviewer)
    url = reverse("audit-list", kwargs={"org": custodian.slug})
    for user, status in [(reviewer, 200), (admin_user, 200), (analyst, 403), (outsider, 404)]:
        assert client_for(user).get(url).status_code == status, user
    response = client_for(reviewer).get(url)
    body = response.content.decode()
    assert "Chain verified: 3 events, intact." in body
    assert [e.sequence for e in response.context["page"].object_list] == [3, 2, 1]
    assert "review.decision" in body and '{"decision":"approve"}' in body.replace("&quot;", '"')


def test_page_filters_and_shows_a_broken_chain(client_for, custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    url = reverse("audit-list", kwargs={"org": custodian.slug})
    client = client_for(reviewer)

    def sequences(**params: str) -> list[int]:
        response = client.get(url, params)
        assert response.status_code == 200
        return [e.sequence for e in response.context["page"].object_list]

    assert sequences(action="dataset.upload") == [1]
    assert sequences(actor="ANALYST") == [2, 1]
    assert sequences(object_id="a1") == [3, 2]
    assert sequences(q="approve") == [3]
    today = timezone.localdate().isoformat()
    assert sequences(since=today, until=today) == [3, 2, 1]
    assert sequences(until="2000-01-01") == []
    assert sequences(since="not a date") == [3, 2, 1]  # the bad field is ignored, and said so

    tamper("UPDATE audit_auditevent SET action = 'job.run' WHERE sequence = 1", [])
    body = client.get(url).content.decode()
    assert "The chain is broken" in body and f"{custodian.slug} #1: hash mismatch" in body


def test_page_paginates_by_50(client_for, custodian, reviewer):
    for i in range(55):
        audit_record(
            organization=custodian, actor=reviewer, action="download.report", details={"i": i}
        )
    url = reverse("audit-list", kwargs={"org": custodian.slug})
    client = client_for(reviewer)
    first = client.get(url, {"action": "download.report"})
    assert len(first.context["page"].object_list) == 50
    assert "page=2" in first.content.decode() and "action=download.report" in first.content.decode()
    second = client.get(url, {"action": "download.report", "page": 2})
    assert [e.sequence for e in second.context["page"].object_list] == [5, 4, 3, 2, 1]


# --- the API --------------------------------------------------------------------------


def test_api_lists_and_filters_events(client_for, custodian, analyst, reviewer):
    events = three(custodian, analyst, reviewer)
    client = client_for(reviewer)
    data = client.get("/api/v1/audit/").json()
    assert data["count"] == 3
    first = data["results"][0]
    assert first["sequence"] == 3 and first["organization"] == custodian.slug
    assert first["hash"] == events[2].hash and first["prev_hash"] == events[1].hash
    assert "actor" not in first and first["actor_name"] == "reviewer"

    def sequences(**params: str) -> list[int]:
        response = client.get("/api/v1/audit/", params)
        assert response.status_code == 200, response.content
        return [e["sequence"] for e in response.json()["results"]]

    assert sequences(action="assessment.threshold") == [2]
    assert sequences(actor="reviewer") == [3]
    assert sequences(object_id="d1", organization=custodian.slug) == [1]
    assert sequences(q="a.csv") == [1]
    assert sequences(since=events[1].created_at.isoformat()) == [3, 2]
    assert client.get("/api/v1/audit/", {"since": "yesterday"}).status_code == 400

    detail = client.get(f"/api/v1/audit/{events[0].id}/")
    assert detail.status_code == 200 and detail.json()["details"] == {"rows": 120, "name": "a.csv"}
    verify = client.get("/api/v1/audit/verify/", {"organization": custodian.slug}).json()
    assert verify == {"ok": True, "checked": 3, "organizations": 1, "problems": []}

    tamper("DELETE FROM audit_auditevent WHERE sequence = 3", [])
    verify = client.get("/api/v1/audit/verify/").json()
    assert verify["ok"] is False  # the sealed head still names #3
    assert verify["problems"] == [
        f"{custodian.slug}: the trail ends at #2 but its head says #3: the newest events "
        "were deleted"
    ]
    tamper("DELETE FROM audit_auditevent WHERE sequence = 1", [])
    verify = client.get("/api/v1/audit/verify/").json()
    assert verify["ok"] is False and verify["checked"] == 1
    assert verify["problems"][0] == f"{custodian.slug} #2: sequence gap, #1 missing (deleted)"


def test_api_keeps_organizations_and_roles_apart(
    client_for, custodian, analyst, reviewer, outsider
):
    events = three(custodian, analyst, reviewer)
    elsewhere = outsider.memberships.get().organization
    theirs = audit_record(organization=elsewhere, actor=outsider, action="dataset.upload")

    outside = client_for(outsider)
    assert [e["id"] for e in outside.get("/api/v1/audit/").json()["results"]] == [str(theirs.id)]
    assert outside.get("/api/v1/audit/", {"organization": custodian.slug}).status_code == 404
    assert outside.get(f"/api/v1/audit/{events[0].id}/").status_code == 404
    assert outside.get("/api/v1/audit/verify/", {"organization": custodian.slug}).status_code == 404
    assert outside.get("/api/v1/audit/verify/").json()["checked"] == 1

    inside = client_for(reviewer)
    assert inside.get(f"/api/v1/audit/{theirs.id}/").status_code == 404
    assert inside.get("/api/v1/audit/", {"organization": elsewhere.slug}).status_code == 404

    # An analyst is a member but not a reader of the trail: 403 where the page says 403.
    member = client_for(analyst)
    assert member.get("/api/v1/audit/").json()["count"] == 0
    assert member.get("/api/v1/audit/", {"organization": custodian.slug}).status_code == 403
    assert member.get(f"/api/v1/audit/{events[0].id}/").status_code == 403
    assert member.get("/api/v1/audit/verify/", {"organization": custodian.slug}).status_code == 403
    assert client_for(reviewer).post("/api/v1/audit/", {}).status_code == 405


def test_selector_takes_a_user_or_a_username(custodian, analyst, reviewer):
    three(custodian, analyst, reviewer)
    assert [e.sequence for e in audit_events(organization=custodian, actor=reviewer)] == [3]
    assert [e.sequence for e in audit_events(organization=custodian, actor="Analyst")] == [2, 1]
