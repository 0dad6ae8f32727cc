"""Issue 23, item 13: a trail cut back to an older copy of the database is detected.

The sealed head row catches deleted newest events — unless the head row itself is restored
from an older copy of the database (its seal is genuine). Then the trail and its head agree,
and so do the decisions' anchors, which live in the same database. So the chain's head is
also recorded outside the database:

- in the file storage (``apps.audit.anchors``): after each review decision and report, and
  at each ``audit_verify --record-anchors`` run (a daily cron); a restore of the database
  does not bring those back, and ``audit_verify`` compares the trail with every one of them;
- on paper: each signed report prints the head at its decision, and ``audit_verify --expect
  SLUG:SEQUENCE:HASH`` checks the trail against such a printed head.

And a server whose audit key is the published development one says so: a system check at
start-up, the audit page and every report's footer."""

from __future__ import annotations

import io
import secrets

import pytest
from django.core.management import call_command

from apps.audit import anchors
from apps.audit.models import AuditEvent, AuditHead
from apps.audit.services import audit_key_is_public, audit_record, audit_verify
from tests.audit.test_audit import tamper, three

pytestmark = pytest.mark.django_db


def _events(custodian, analyst, n):  # type: ignore[no-untyped-def]
    return [
        audit_record(
            organization=custodian,
            actor=analyst,
            action="classification.change",
            object_type="classification.variable",
            object_id=f"v{i}",
            details={"to": "quasi"},
        )
        for i in range(n)
    ]


def _restore_older_copy(custodian, head_row: dict[str, object], sequence: int) -> None:  # type: ignore[no-untyped-def]
    """What restoring an older copy of the database does to the trail: the events after it
    are gone and the head row is the old one, with its genuine seal."""
    tamper(
        "DELETE FROM audit_auditevent WHERE organization_id = %s AND sequence > %s",
        [custodian.id, sequence],
    )
    AuditHead.objects.filter(chain=str(custodian.id)).update(**head_row)


def _head(custodian) -> dict[str, object]:  # type: ignore[no-untyped-def]
    head = AuditHead.objects.get(chain=str(custodian.id))
    return {"sequence": head.sequence, "hash": head.hash, "seal": head.seal}


@pytest.fixture
def storage_anchors():  # type: ignore[no-untyped-def]
    yield
    anchors.anchors_forget_all()


def test_a_restored_older_head_is_caught_by_the_anchors_outside_the_database(
    custodian, analyst, reviewer, storage_anchors
):
    three(custodian, analyst, reviewer)
    old_copy = _head(custodian)  # the database as a backup holds it: 3 events
    later = _events(custodian, analyst, 4)  # events 4-7
    out = io.StringIO()
    call_command("audit_verify", "--record-anchors", stdout=out)
    assert "anchored outside the database" in out.getvalue()
    _restore_older_copy(custodian, old_copy, 3)

    result = audit_verify(organization=custodian)
    assert result.checked == 3
    (problem,) = result.problems
    assert problem == (
        f"{custodian.slug}: the check of the audit trail run at "
        f"{anchors.anchors_stored(str(custodian.id))[0]['recorded_at']} recorded the chain at "
        f"#7 ({later[-1].hash[:12]}…); that event is missing now: the trail was cut or "
        "re-written"
    )
    with pytest.raises(SystemExit):
        call_command("audit_verify", stdout=io.StringIO(), stderr=io.StringIO())


def test_without_anchors_outside_the_restore_is_invisible(custodian, analyst, reviewer):
    """Why the anchors are needed: the database alone agrees with itself after a restore."""
    three(custodian, analyst, reviewer)
    old_copy = _head(custodian)
    _events(custodian, analyst, 4)
    _restore_older_copy(custodian, old_copy, 3)
    assert audit_verify(organization=custodian).ok


def test_a_decision_is_anchored_outside_the_database_when_it_commits(
    custodian, analyst, reviewer, storage_anchors, django_capture_on_commit_callbacks
):
    three(custodian, analyst, reviewer)
    old_copy = _head(custodian)
    with django_capture_on_commit_callbacks(execute=True):
        decision = audit_record(
            organization=custodian, actor=reviewer, action="review.decision", details={}
        )
    (stored,) = anchors.anchors_stored(str(custodian.id))
    assert (stored["sequence"], stored["hash"]) == (4, decision.hash)
    assert stored["organization"] == custodian.slug and stored["action"] == "review.decision"
    _restore_older_copy(custodian, old_copy, 3)
    (problem,) = audit_verify(organization=custodian).problems
    assert "the review decision (event #4) recorded the chain at #4" in problem
    assert "that event is missing now" in problem


def test_a_printed_head_is_checked_with_expect(custodian, analyst, reviewer):
    """The head a signed report printed, given to audit_verify by hand."""
    three(custodian, analyst, reviewer)
    old_copy = _head(custodian)
    later = _events(custodian, analyst, 2)
    printed = f"{custodian.slug}:5:{later[-1].hash[:12]}"
    out = io.StringIO()
    call_command("audit_verify", "--expect", printed, stdout=out)
    assert "OK" in out.getvalue()
    _restore_older_copy(custodian, old_copy, 3)
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("audit_verify", "--expect", printed, stdout=io.StringIO(), stderr=err)
    assert exit_.value.code == 1
    assert (
        f"{custodian.slug}: the head given with --expect recorded the chain at #5 "
        f"({later[-1].hash[:12]}…); that event is missing now" in err.getvalue()
    )
    # A printed digest that does not match the event is named too.
    wrong = f"{custodian.slug}:2:{'0' * 12}"
    with pytest.raises(SystemExit):
        call_command("audit_verify", "--expect", wrong, stdout=io.StringIO(), stderr=err)
    assert "recorded the chain at #2 (000000000000…); that event differs now" in err.getvalue()
    with pytest.raises(Exception, match="SLUG:SEQUENCE:HASH"):
        call_command("audit_verify", "--expect", "nonsense", stdout=io.StringIO())


def test_the_development_audit_key_is_announced(
    custodian, analyst, reviewer, settings, client_for, admin_user
):
    from django.core import checks

    # The suite's SECRET_KEY is a published one, and the audit key is derived from it.
    assert audit_key_is_public()
    warnings = [m for m in checks.run_checks() if m.id == "deidweb.W001"]
    assert len(warnings) == 1
    assert "anyone can re-seal an edited audit trail" in warnings[0].msg
    page = client_for(admin_user).get(f"/o/{custodian.slug}/audit/")
    assert 'data-testid="audit-key-warning"' in page.content.decode()

    settings.DEIDWEB_AUDIT_KEY = secrets.token_urlsafe(48)
    assert not audit_key_is_public()
    assert not [m for m in checks.run_checks() if m.id == "deidweb.W001"]
    page = client_for(admin_user).get(f"/o/{custodian.slug}/audit/")
    assert 'data-testid="audit-key-warning"' not in page.content.decode()


def test_the_report_footer_says_when_the_key_is_the_development_one(
    complete_assessment, analyst, reviewer, settings
):
    from apps.reports.content import report_html
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit

    assessment_submit(assessment=complete_assessment, user=analyst, note="Ready")
    decision = review_decide(
        assessment=complete_assessment, reviewer=reviewer, decision="approve", reasons="Fine."
    )
    html = report_html(assessment=complete_assessment, decision=decision)
    assert 'data-testid="audit-key-warning"' in html
    assert "development audit key" in html  # the page footer of every printed page too
    settings.DEIDWEB_AUDIT_KEY = secrets.token_urlsafe(48)
    html = report_html(assessment=complete_assessment, decision=decision)
    assert 'data-testid="audit-key-warning"' not in html
    assert AuditEvent.objects.filter(action="review.decision").exists()
