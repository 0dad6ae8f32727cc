"""``/api/v1/releases/``: the release registry with each release's due state (``?show=due``),
the triggers recorded against a release and its re-assessment interval (issue 28)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.core import fields as strict
from apps.reviews.models import ReassessmentTrigger, ReleaseRecord
from apps.reviews.reassessment import (
    FILTERS,
    registry_rows,
    release_interval_set,
    trigger_record,
    trigger_resolve,
)


class TriggerSerializer(serializers.ModelSerializer[ReassessmentTrigger]):
    class Meta:
        model = ReassessmentTrigger
        fields = ["id", "kind", "occurred_on", "note", "resolved_at", "resolution", "created_at"]
        read_only_fields = fields


class ReleaseRowSerializer(serializers.Serializer[Any]):
    id = strict.UUIDField(source="record.id")
    assessment = strict.UUIDField(source="record.assessment_id")
    dataset_name = strict.CharField(source="record.dataset_name")
    recipient = strict.CharField(source="record.recipient")
    release_model = strict.CharField(source="record.release_model")
    decided_at = serializers.DateTimeField(source="record.decided_at")
    reassess_months = strict.IntegerField(source="record.reassess_months")
    reassess_on = serializers.DateField(source="record.reassess_on")
    due = strict.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField())
    triggers = TriggerSerializer(many=True)


class TriggerRequestSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ReassessmentTrigger.Kind.choices)
    occurred_on = serializers.DateField()
    note = strict.CharField()


class ResolveRequestSerializer(serializers.Serializer[Any]):
    trigger = strict.UUIDField()
    note = strict.CharField()


class IntervalRequestSerializer(serializers.Serializer[Any]):
    months = strict.IntegerField(help_text="Months between approval and re-assessment, 1-60.")


@extend_schema(parameters=[OpenApiParameter("id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
class ReleaseViewSet(viewsets.ViewSet):
    """The release registry of an organization (``?organization=<slug>``, required)."""

    permission_classes = [OrganizationRole]

    def _organization(self, request: Request) -> Organization:
        slug = request.query_params.get("organization", "")
        organization = Organization.objects.filter(slug=slug).first()
        if organization is None:
            raise NotFound("Give ?organization=<slug> of one of your organizations.")
        membership_get(user=request.user, organization=organization)  # 404 for outsiders
        return organization

    def _record(self, request: Request, pk: str | None) -> ReleaseRecord:
        record = (
            ReleaseRecord.objects.filter(
                id=str(pk), organization__memberships__user=user_of(request)
            )
            .select_related("organization", "assessment")
            .first()
        )
        if record is None:
            raise NotFound("No such release.")
        return record

    @extend_schema(
        parameters=[
            OpenApiParameter("organization", str, required=True),
            OpenApiParameter("show", str, enum=list(FILTERS)),
        ],
        responses={200: ReleaseRowSerializer(many=True)},
    )
    def list(self, request: Request) -> Response:
        rows = registry_rows(
            organization=self._organization(request),
            show=request.query_params.get("show", "all"),
        )
        return Response(ReleaseRowSerializer(rows, many=True).data)

    @extend_schema(request=TriggerRequestSerializer, responses={201: TriggerSerializer})
    @action(detail=True, methods=["post"])
    def triggers(self, request: Request, pk: str | None = None) -> Response:
        """Record a trigger (new public data, new recipient, incident, scheduled review)."""
        payload = TriggerRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        trigger = trigger_record(
            record=self._record(request, pk), user=user_of(request), **payload.validated_data
        )
        return Response(TriggerSerializer(trigger).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ResolveRequestSerializer, responses={200: TriggerSerializer})
    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, pk: str | None = None) -> Response:
        """Close a trigger with what was done about it."""
        payload = ResolveRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        trigger = ReassessmentTrigger.objects.filter(
            release=self._record(request, pk), id=payload.validated_data["trigger"]
        ).first()
        if trigger is None:
            raise NotFound("No such trigger on this release.")
        resolved = trigger_resolve(
            trigger=trigger, user=user_of(request), note=payload.validated_data["note"]
        )
        return Response(TriggerSerializer(resolved).data)

    @extend_schema(request=IntervalRequestSerializer, responses={200: ReleaseRowSerializer})
    @action(detail=True, methods=["put"])
    def interval(self, request: Request, pk: str | None = None) -> Response:
        """Change the release's re-assessment interval (its due date follows)."""
        payload = IntervalRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        record = release_interval_set(
            record=self._record(request, pk),
            user=user_of(request),
            months=payload.validated_data["months"],
        )
        (row,) = [
            r
            for r in registry_rows(organization=record.organization)
            if r["record"].id == record.id
        ]
        return Response(ReleaseRowSerializer(row).data)
