"""PostgreSQL triggers that make the audit table append-only for every client, raw SQL too.

UPDATE and DELETE raise, with one exception: setting ``actor_id`` to NULL and changing
nothing else, which is what Django's ``on_delete=SET_NULL`` does when a user is deleted
(``actor_name``, which the hash covers, keeps the attribution).

Not blocked: TRUNCATE (Django's test flush uses it) and anyone allowed to disable triggers
(the table's owner, superusers). In production, run the application as a role that owns
neither the table nor the TRUNCATE privilege; the hash chain shows whatever gets past.

Tests that simulate tampering disable the trigger inside their own transaction::

    SET CONSTRAINTS ALL IMMEDIATE;  -- ALTER TABLE refuses pending deferred FK checks
    ALTER TABLE audit_auditevent DISABLE TRIGGER audit_auditevent_append_only;

which the end-of-test rollback undoes (ALTER TABLE is transactional in PostgreSQL).
"""

from django.db import migrations

CREATE = (
    """
CREATE OR REPLACE FUNCTION audit_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % of % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql
""",
    """
CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_auditevent_append_only()
""",
)

DROP = (
    "DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent",
    "DROP FUNCTION IF EXISTS audit_auditevent_append_only()",
)


def create_triggers(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement, params=None)  # no params: '%' is literal


def drop_triggers(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
