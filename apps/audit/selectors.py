"""Reading the audit trail: one organization's events (or several), newest first."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from apps.accounts.models import Organization
from apps.audit.models import AuditEvent


def audit_events(
    *,
    organization: Organization | QuerySet[Organization],
    action: str | None = None,
    actor: User | str | None = None,
    object_id: str | None = None,
    since: dt.date | dt.datetime | None = None,
    until: dt.date | dt.datetime | None = None,
    q: str | None = None,
) -> QuerySet[AuditEvent]:
    """Events of ``organization`` (or of a queryset of organizations, for the API).

    ``actor`` is a user or a username (matched case-insensitively against ``actor_name``,
    which survives the user's deletion). ``since``/``until`` are inclusive: a date covers
    the whole day in the current time zone. ``q`` searches action, actor, object and the
    details' JSON text.
    """
    if isinstance(organization, Organization):
        events = AuditEvent.objects.filter(organization=organization)
    else:
        events = AuditEvent.objects.filter(organization__in=organization)
    if action:
        events = events.filter(action=action)
    if isinstance(actor, str):
        if actor.strip():
            events = events.filter(actor_name__iexact=actor.strip())
    elif actor is not None:
        events = events.filter(actor=actor)
    if object_id:
        events = events.filter(object_id=object_id.strip())
    if since is not None:
        if isinstance(since, dt.datetime):
            events = events.filter(created_at__gte=since)
        else:
            events = events.filter(created_at__date__gte=since)
    if until is not None:
        if isinstance(until, dt.datetime):
            events = events.filter(created_at__lte=until)
        else:
            events = events.filter(created_at__date__lte=until)
    if q and q.strip():
        text = q.strip()
        events = events.filter(
            Q(action__icontains=text)
            | Q(actor_name__icontains=text)
            | Q(object_type__icontains=text)
            | Q(object_id__icontains=text)
            | Q(object_repr__icontains=text)
            | Q(details__icontains=text)
        )
    return events.select_related("organization").order_by("-created_at", "-sequence")


def audit_actions(*, organization: Organization) -> list[str]:
    """The actions recorded for the organization, for the filter's choices."""
    return sorted(
        AuditEvent.objects.filter(organization=organization)
        .values_list("action", flat=True)
        .distinct()
        .order_by()
    )
