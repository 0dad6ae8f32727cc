"""``/api/v1/assessments/{id}/justifications/``: each altered variable with its ISO/IEC
20889 class and justification (GET), and the analyst's justifications (PUT). Mixed into the
assessments' viewset where the API is assembled (``deidweb/urls.py``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationMember
from apps.accounts.decorators import user_of
from apps.accounts.selectors import membership_get
from apps.assessments.justifications import (
    justification_rows,
    missing_justifications,
    release_transformations,
    variable_justifications_set,
)
from apps.core.errors import ApplicationError


class JustificationsSerializer(serializers.Serializer[Any]):
    variables = serializers.ListField(
        child=serializers.DictField(),
        help_text="Each altered variable: column, transformations (key, detail, iso_class, "
        "iso_category) and justification.",
    )
    release = serializers.ListField(child=serializers.DictField())
    missing = serializers.ListField(child=serializers.CharField())


class JustificationsRequestSerializer(serializers.Serializer[Any]):
    justifications = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        help_text="column → justification; an empty text removes one.",
    )


class JustificationActions:
    get_object: Any

    @extend_schema(methods=["GET"], responses={200: JustificationsSerializer})
    @extend_schema(
        methods=["PUT"],
        request=JustificationsRequestSerializer,
        responses={200: JustificationsSerializer},
    )
    @action(detail=True, methods=["get", "put"], permission_classes=[OrganizationMember])
    def justifications(self, request: Request, pk: str | None = None) -> Response:
        """Why each altered variable was altered (EMA Policy 0070), with its ISO/IEC 20889
        class; every one needs a justification before submission."""
        assessment = self.get_object()
        if request.method == "PUT":
            user = user_of(request)
            if not membership_get(user=user, organization=assessment.organization).can_edit:
                raise ApplicationError(
                    "Only analysts and administrators justify a release.", status=403
                )
            payload = JustificationsRequestSerializer(data=request.data)
            payload.is_valid(raise_exception=True)
            variable_justifications_set(
                assessment=assessment,
                user=user,
                justifications=payload.validated_data["justifications"],
            )
            assessment.refresh_from_db()
        data = {
            "variables": justification_rows(
                assessment.apply_result, assessment.variable_justifications
            ),
            "release": release_transformations(assessment.apply_result),
            "missing": missing_justifications(assessment),
        }
        return Response(JustificationsSerializer(data).data)
