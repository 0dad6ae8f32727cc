"""Database triggers that keep decided things decided, whatever client writes.

The services refuse to change a submitted or decided version (``assessments.drafts.
assessment_editable``) and the job handlers check again under a row lock; these triggers are the last
guard, for every path — a handler bug, a shell, raw SQL:

* ``assessments_assessment``: once a version is no longer a draft, nothing but its status
  (submitted → approved / rejected, once) and its dates changes, and it is not deleted. The
  one other change allowed is a link set to NULL by ``on_delete=SET_NULL`` (a deleted user
  or job).
* ``assessments_hierarchyspec``: a version's hierarchies change only while it is a draft.
* ``reviews_assessmentsnapshot``: the frozen record is never changed or deleted (except the
  SET_NULL of the user who took it).
* ``audit_auditevent`` on SQLite: append-only, as migration ``audit.0002`` makes it on
  PostgreSQL (the actor link may be set to NULL when a user is deleted).

They are (re)installed after every ``migrate`` (``post_migrate``), from the models as they
are then, so a column added later is covered without a new migration. TRUNCATE (Django's
test flush) is not a row operation and is not blocked.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as django_apps
from django.db.backends.base.base import BaseDatabaseWrapper

STATUS_CHANGES = "('submitted', 'approved'), ('submitted', 'rejected')"
# Columns a decided version may still change: its status and dates.
ASSESSMENT_FREE = ("status", "decided_at", "submitted_at", "updated_at")
# Links that on_delete=SET_NULL may clear.
ASSESSMENT_NULLABLE_LINKS = ("created_by_id", "risk_job_id", "search_job_id", "apply_job_id")


def _columns(app_label: str, model: str) -> list[str]:
    return [f.column for f in django_apps.get_model(app_label, model)._meta.concrete_fields]


# --------------------------------------------------------------------------- PostgreSQL

_SKIPPED = ", ".join(f"'{c}'" for c in ASSESSMENT_FREE + ASSESSMENT_NULLABLE_LINKS)
_LINKS_CLEARED = "".join(
    f" AND (NEW.{c} IS NOT DISTINCT FROM OLD.{c} OR NEW.{c} IS NULL)"
    for c in ASSESSMENT_NULLABLE_LINKS
)
PG_ASSESSMENT = f"""
CREATE OR REPLACE FUNCTION deidweb_assessment_frozen() RETURNS trigger AS $$
BEGIN
    IF OLD.status = 'draft' THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE'
       AND (to_jsonb(NEW) - ARRAY[{_SKIPPED}]) = (to_jsonb(OLD) - ARRAY[{_SKIPPED}])
       {_LINKS_CLEARED}
       AND (NEW.status = OLD.status OR (OLD.status, NEW.status) IN ({STATUS_CHANGES})) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'assessment % is % and frozen: % refused', OLD.id, OLD.status, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql
"""

PG_HIERARCHY = """
CREATE OR REPLACE FUNCTION deidweb_hierarchy_frozen() RETURNS trigger AS $$
DECLARE
    owner_status text;
BEGIN
    SELECT status INTO owner_status FROM assessments_assessment
        WHERE id = (CASE WHEN TG_OP = 'DELETE' THEN OLD.assessment_id ELSE NEW.assessment_id END);
    IF owner_status IS NULL OR owner_status = 'draft' THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the hierarchies of a % assessment are frozen: % refused', owner_status, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql
"""

PG_SNAPSHOT = """
CREATE OR REPLACE FUNCTION deidweb_snapshot_frozen() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.taken_by_id IS NOT NULL AND NEW.taken_by_id IS NULL
       AND (to_jsonb(NEW) - 'taken_by_id') = (to_jsonb(OLD) - 'taken_by_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the frozen record of an assessment is never changed: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql
"""


def _install_postgresql(connection: BaseDatabaseWrapper) -> None:
    statements = [
        PG_ASSESSMENT,
        "DROP TRIGGER IF EXISTS deidweb_assessment_frozen ON assessments_assessment",
        "CREATE TRIGGER deidweb_assessment_frozen BEFORE UPDATE OR DELETE ON "
        "assessments_assessment FOR EACH ROW EXECUTE FUNCTION deidweb_assessment_frozen()",
        PG_HIERARCHY,
        "DROP TRIGGER IF EXISTS deidweb_hierarchy_frozen ON assessments_hierarchyspec",
        "CREATE TRIGGER deidweb_hierarchy_frozen BEFORE INSERT OR UPDATE OR DELETE ON "
        "assessments_hierarchyspec FOR EACH ROW EXECUTE FUNCTION deidweb_hierarchy_frozen()",
        PG_SNAPSHOT,
        "DROP TRIGGER IF EXISTS deidweb_snapshot_frozen ON reviews_assessmentsnapshot",
        "CREATE TRIGGER deidweb_snapshot_frozen BEFORE UPDATE OR DELETE ON "
        "reviews_assessmentsnapshot FOR EACH ROW EXECUTE FUNCTION deidweb_snapshot_frozen()",
    ]
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


# --------------------------------------------------------------------------- SQLite


def _changed(columns: list[str]) -> str:
    return " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in columns) or "0"


def _sqlite_statements() -> list[str]:
    assessment = _columns("assessments", "Assessment")
    fixed = [c for c in assessment if c not in ASSESSMENT_FREE + ASSESSMENT_NULLABLE_LINKS]
    links = " OR ".join(
        f"(NEW.{c} IS NOT OLD.{c} AND NEW.{c} IS NOT NULL)" for c in ASSESSMENT_NULLABLE_LINKS
    )
    snapshot = [c for c in _columns("reviews", "AssessmentSnapshot") if c != "taken_by_id"]
    audit = [c for c in _columns("audit", "AuditEvent") if c != "actor_id"]
    owner = "(SELECT status FROM assessments_assessment WHERE id = {}.assessment_id)"
    return [
        "DROP TRIGGER IF EXISTS deidweb_assessment_frozen",
        "CREATE TRIGGER deidweb_assessment_frozen BEFORE UPDATE ON assessments_assessment "
        f"FOR EACH ROW WHEN OLD.status <> 'draft' AND ({_changed(fixed)} OR {links} OR "
        f"(NEW.status <> OLD.status AND (OLD.status, NEW.status) NOT IN (VALUES {STATUS_CHANGES}))) "
        "BEGIN SELECT RAISE(ABORT, 'the assessment is frozen: update refused'); END",
        "DROP TRIGGER IF EXISTS deidweb_assessment_frozen_delete",
        "CREATE TRIGGER deidweb_assessment_frozen_delete BEFORE DELETE ON assessments_assessment "
        "FOR EACH ROW WHEN OLD.status <> 'draft' "
        "BEGIN SELECT RAISE(ABORT, 'the assessment is frozen: delete refused'); END",
        *[
            stmt
            for op, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
            for stmt in (
                f"DROP TRIGGER IF EXISTS deidweb_hierarchy_frozen_{op.lower()}",
                f"CREATE TRIGGER deidweb_hierarchy_frozen_{op.lower()} BEFORE {op} ON "
                f"assessments_hierarchyspec FOR EACH ROW WHEN {owner.format(row)} <> 'draft' "
                f"BEGIN SELECT RAISE(ABORT, 'the hierarchies are frozen: {op.lower()} refused'); END",
            )
        ],
        "DROP TRIGGER IF EXISTS deidweb_snapshot_frozen",
        "CREATE TRIGGER deidweb_snapshot_frozen BEFORE UPDATE ON reviews_assessmentsnapshot "
        f"FOR EACH ROW WHEN {_changed(snapshot)} OR NEW.taken_by_id IS NOT NULL "
        "BEGIN SELECT RAISE(ABORT, 'the frozen record is never changed'); END",
        "DROP TRIGGER IF EXISTS deidweb_snapshot_frozen_delete",
        "CREATE TRIGGER deidweb_snapshot_frozen_delete BEFORE DELETE ON reviews_assessmentsnapshot "
        "BEGIN SELECT RAISE(ABORT, 'the frozen record is never deleted'); END",
        "DROP TRIGGER IF EXISTS audit_auditevent_append_only",
        "CREATE TRIGGER audit_auditevent_append_only BEFORE UPDATE ON audit_auditevent "
        f"FOR EACH ROW WHEN {_changed(audit)} OR NEW.actor_id IS NOT NULL "
        "BEGIN SELECT RAISE(ABORT, 'audit events are append-only: update refused'); END",
        "DROP TRIGGER IF EXISTS audit_auditevent_append_only_delete",
        "CREATE TRIGGER audit_auditevent_append_only_delete BEFORE DELETE ON audit_auditevent "
        "BEGIN SELECT RAISE(ABORT, 'audit events are append-only: delete refused'); END",
    ]


def _install_sqlite(connection: BaseDatabaseWrapper) -> None:
    with connection.cursor() as cursor:
        for statement in _sqlite_statements():
            cursor.execute(statement)


def install_guards(using: str = "default", **kwargs: Any) -> None:
    """Create or replace every trigger on the database ``using`` (a ``post_migrate``
    receiver, also callable directly)."""
    from django.db import connections

    connection = connections[using]
    if connection.vendor == "postgresql":
        _install_postgresql(connection)
    elif connection.vendor == "sqlite":
        _install_sqlite(connection)
