"""An organization's Spark Connect connection (issue #27, docs/spark.md).

The connection's address carries the cluster's credentials (``sc://HOST:PORT/;token=…``):
it is sealed like every other secret (apps.core.crypto, docs/secrets-at-rest.md), set and
cleared by an organization's administrator only, opened only to hand it to the engine
inside a job (:func:`cluster_engine`), and never shown back — not on a page, not in the
API, not in the audit trail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.audit.services import audit_record
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets.cluster_models import SparkConnection, spark_remote_purpose
from apps.datasets.cluster_paths import release_prefix_check
from apps.engine.errors import EngineError
from apps.engine.rows import RowEngine, open_engine
from apps.engine.rows.spark.session import check_remote
from apps.jobs.context import external_work


def _require_admin(user: User, organization: Organization) -> None:
    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError(
            "Only the organization's administrators manage its Spark connection.", status=403
        )


def spark_connection_set(
    *,
    organization: Organization,
    user: User,
    remote: str,
    release_prefix: str,
    probe: bool = True,
) -> SparkConnection:
    """Store (sealed) the organization's Spark Connect address and its release prefix. With
    ``probe`` the server is asked for a session first: a wrong address or token is refused
    now, not in the first job. An empty ``remote`` keeps the stored address."""
    _require_admin(user, organization)
    prefix = release_prefix_check(release_prefix)
    existing = SparkConnection.objects.filter(organization=organization).first()
    remote = remote.strip()
    if not remote and existing is None:
        raise ApplicationError("Give the Spark Connect address (sc://HOST:PORT).")
    if remote:
        try:
            check_remote(remote)
            if probe:
                open_engine("spark", remote=remote).close()
        except EngineError as exc:
            raise ApplicationError(str(exc), {"field": "remote"}) from None
    with transaction.atomic():
        connection = existing or SparkConnection(organization=organization)
        if remote:
            connection.remote_sealed = crypto.seal_text(
                remote, purpose=spark_remote_purpose(organization.id)
            )
        connection.release_prefix = prefix
        connection.updated_by = user
        connection.save()
        audit_record(
            organization=organization,
            actor=user,
            action="cluster.connection_set",
            obj=connection,
            # the address and its token stay out of the trail: whether it changed is enough
            details={"release_prefix": prefix, "address_changed": bool(remote)},
        )
    return connection


def spark_connection_clear(*, organization: Organization, user: User) -> None:
    _require_admin(user, organization)
    with transaction.atomic():
        deleted, _ = SparkConnection.objects.filter(organization=organization).delete()
        if deleted:
            audit_record(
                organization=organization,
                actor=user,
                action="cluster.connection_clear",
                object_type="datasets.sparkconnection",
                object_id=str(organization.id),
            )


def spark_connection_status(organization: Organization) -> dict[str, Any]:
    """What may be shown of the connection: whether there is one, its release prefix."""
    connection = SparkConnection.objects.filter(organization=organization).first()
    if connection is None:
        return {"configured": False, "release_prefix": "", "updated_at": None}
    return {
        "configured": True,
        "release_prefix": connection.release_prefix,
        "updated_at": connection.updated_at.isoformat(),
    }


def _connection(organization_id: Any) -> SparkConnection:
    connection = SparkConnection.objects.filter(organization_id=organization_id).first()
    if connection is None:
        raise ApplicationError(
            "This organization has no Spark connection: an administrator sets it first."
        )
    return connection


def release_prefix_of(organization_id: Any) -> str:
    return _connection(organization_id).release_prefix


@contextlib.contextmanager
def cluster_engine(organization_id: Any) -> Iterator[RowEngine]:
    """The organization's cluster as a `RowEngine` (the address opened for this only).

    Every cluster job (profile, Step 4, Step 7's search and apply) and the release check
    run their Spark work through here, registered as the job's external work: a cancelled
    job's process interrupts its Spark jobs on the server (their job tags) before it ends
    (`apps.jobs.context.external_work`; outside a job's process, the registration does
    nothing)."""
    connection = _connection(organization_id)
    remote = crypto.open_text(
        connection.remote_sealed, purpose=spark_remote_purpose(organization_id)
    )
    try:
        engine = open_engine("spark", remote=remote)
    except EngineError as exc:
        raise ApplicationError(f"The cluster cannot be reached: {exc}") from None
    with (
        engine,
        external_work(engine.cancel, "the Spark jobs it started on the cluster were interrupted"),
    ):
        yield engine
