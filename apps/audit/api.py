from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.decorators import user_of
from apps.accounts.models import Organization, Role
from apps.accounts.selectors import membership_get
from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_events
from apps.audit.services import audit_verify
from apps.core.api import query_values


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "organization",
            "sequence",
            "created_at",
            "actor_name",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "details",
            "prev_hash",
            "hash",
        ]
        read_only_fields = fields


class AuditVerifySerializer(serializers.Serializer[Any]):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField(help_text="Events checked.")
    organizations = serializers.IntegerField(help_text="Organizations checked.")
    problems = serializers.ListField(child=serializers.CharField())


class CanReadAudit(BasePermission):
    """Reviewers and administrators of the event's organization; other members get 403."""

    message = "Only reviewers and administrators can read the audit trail."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return membership_get(user=request.user, organization=obj.organization).can_review


def _when(value: str | None, name: str) -> dt.date | dt.datetime | None:
    # Absent is no bound; present, even empty ("?since="), it must be a date or a time, as
    # the schema says.
    if value is None:
        return None
    try:
        parsed: dt.date | dt.datetime | None = parse_datetime(value) or parse_date(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise serializers.ValidationError({name: "Use a date (YYYY-MM-DD) or an ISO 8601 time."})
    return parsed


DATE_OR_TIME: dict[str, Any] = {
    "oneOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]
}
ORGANIZATION_PARAM = OpenApiParameter(
    "organization", OpenApiTypes.STR, description="Only this organization (its slug)."
)
FILTER_PARAMS = [
    ORGANIZATION_PARAM,
    OpenApiParameter("action", OpenApiTypes.STR, description="Action code, e.g. dataset.upload."),
    OpenApiParameter("actor", OpenApiTypes.STR, description="Username (case-insensitive)."),
    OpenApiParameter("object_id", OpenApiTypes.STR, description="Id of the object acted on."),
    # A date or an ISO 8601 time, as the schema says it (issue 23: documented as any text,
    # other text was refused).
    OpenApiParameter(
        "since", DATE_OR_TIME, description="From this date (YYYY-MM-DD) or time, inclusive."
    ),
    OpenApiParameter(
        "until", DATE_OR_TIME, description="Up to this date (YYYY-MM-DD) or time, inclusive."
    ),
    OpenApiParameter(
        "q", OpenApiTypes.STR, description="Free text: action, actor, object, details."
    ),
]


# ?organization= names one organization: 404 when the caller is not a member of it.
NOT_A_MEMBER = {404: OpenApiResponse(description="You are not a member of that organization.")}


@extend_schema_view(
    list=extend_schema(
        parameters=FILTER_PARAMS, responses={200: AuditEventSerializer(many=True), **NOT_A_MEMBER}
    )
)
class AuditEventViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[AuditEvent]
):
    """The audit trail of the organizations where the caller is a reviewer or administrator,
    newest first. Read-only: events are recorded by the actions themselves."""

    serializer_class = AuditEventSerializer
    permission_classes = [CanReadAudit]
    queryset = AuditEvent.objects.none()  # for the schema; get_queryset scopes every request

    def _organizations(self) -> QuerySet[Organization]:
        """The organizations whose trail the caller may read, or the one asked for: 404 for
        a non-member, 403 for a member who is not a reviewer or administrator."""
        user = user_of(self.request)
        slug = query_values(self.request).get("organization")
        if slug:
            membership = membership_get(user=user, slug=slug)
            if not membership.can_review:
                raise PermissionDenied(CanReadAudit.message)
            return Organization.objects.filter(pk=membership.organization_id)
        return Organization.objects.filter(
            memberships__user=user, memberships__role__in=[Role.REVIEWER, Role.ADMIN]
        )

    def get_queryset(self) -> QuerySet[AuditEvent]:
        if self.action == "retrieve":
            # Any member's organization, so that has_object_permission answers 403 (not 404)
            # to a member without the role, as the page does.
            return AuditEvent.objects.filter(
                organization__memberships__user=user_of(self.request)
            ).select_related("organization")
        params = query_values(self.request)
        return audit_events(
            organization=self._organizations(),
            action=params.get("action") or None,
            actor=params.get("actor") or None,
            object_id=params.get("object_id") or None,
            since=_when(params.get("since"), "since"),
            until=_when(params.get("until"), "until"),
            q=params.get("q") or None,
        )

    @extend_schema(
        parameters=[ORGANIZATION_PARAM], responses={200: AuditVerifySerializer, **NOT_A_MEMBER}
    )
    @action(detail=False, methods=["get"])
    def verify(self, request: Request) -> Response:
        """Check the hash chains of one organization (or all the caller may read).

        Reads every event of those organizations: the cost grows with the trail."""
        checked = organizations = 0
        problems: list[str] = []
        for organization in self._organizations().order_by("slug"):
            result = audit_verify(organization=organization)
            organizations += result.organizations
            checked += result.checked
            problems.extend(result.problems)
        data = {
            "ok": not problems,
            "checked": checked,
            "organizations": organizations,
            "problems": problems,
        }
        return Response(AuditVerifySerializer(data).data)
