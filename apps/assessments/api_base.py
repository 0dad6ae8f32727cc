"""The base of the assessment API's actions (``AssessmentActions``): scoping, the withholding
of raw values by role, and the helpers every step's action uses."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.decorators import user_of
from apps.accounts.models import Membership
from apps.accounts.selectors import membership_get
from apps.assessments.models import Assessment
from apps.assessments.withheld import protected_columns, rare_values, withhold_raw_values
from apps.core import fields as strict
from apps.core.api import query_values
from apps.jobs.api import JobSerializer


class AssessmentFilterSerializer(serializers.Serializer[Any]):
    organization = strict.SlugField(
        required=False, help_text="Short name (slug) of the organization."
    )
    dataset = strict.UUIDField(required=False)


RUN = {202: JobSerializer}
NO_BODY = None


class AssessmentActions(viewsets.GenericViewSet[Assessment]):
    """What every action on assessments shares: the assessments of the caller's
    organizations (any other is a 404), the raw values withheld from a role that may not
    read them, the caller and their membership, and a request body validated. The viewset
    (``api.AssessmentViewSet``) is assembled from the actions built on it."""

    def get_queryset(self) -> QuerySet[Assessment]:
        queryset = Assessment.objects.filter(
            organization__memberships__user=self._user()
        ).select_related(
            "organization", "dataset", "created_by", "risk_job", "search_job", "apply_job"
        )
        if self.action != "list":
            return queryset
        # A plain dict: DRF reads an empty form value as absent, "?dataset=" is bad input.
        filters = AssessmentFilterSerializer(data=query_values(self.request))
        filters.is_valid(raise_exception=True)
        if "organization" in filters.validated_data:
            queryset = queryset.filter(organization__slug=filters.validated_data["organization"])
        if "dataset" in filters.validated_data:
            queryset = queryset.filter(dataset_id=filters.validated_data["dataset"])
        return queryset

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        """Every answer of every action about one assessment, for a role that may not read
        raw values (reviewers): the values of its direct identifiers and free-text columns,
        and its quasi-identifiers' rare values, withheld (``apps.assessments.withheld``),
        whatever the action returned."""
        response = super().finalize_response(request, response, *args, **kwargs)
        data = getattr(response, "data", None)
        if data is None or not 200 <= response.status_code < 300 or "pk" not in self.kwargs:
            return response
        assessment = self.get_queryset().filter(pk=self.kwargs["pk"]).first()
        if assessment is None or self._membership(assessment).can_see_raw_values:
            return response
        record = data.get("variables") if isinstance(data, dict) else None
        protected = protected_columns(assessment, record if isinstance(record, list) else ())
        response.data = withhold_raw_values(data, protected, rare_values(assessment))
        return response

    def _user(self) -> User:
        return user_of(self.request)  # authenticated: OrganizationRole

    def _membership(self, assessment: Assessment) -> Membership:
        return membership_get(user=self.request.user, organization=assessment.organization)

    def _payload(self, serializer: type[serializers.Serializer[Any]], **context: Any) -> Any:
        payload = serializer(data=self.request.data, context=context)
        payload.is_valid(raise_exception=True)
        return payload
