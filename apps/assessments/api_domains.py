"""API of named pseudonymisation domains (``apps.assessments.domains``).

``/api/v1/pseudonym-domains/``: the domains of the caller's organizations (any member
reads; an administrator defines one). ``/api/v1/assessments/<id>/pseudonym-domain/``:
Step 1's choice of a domain for one release (GET, PUT ``{"pseudonym_domain": id | null}``).
The key itself never leaves through the API.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.assessments.domains import assessment_set_pseudonym_domain, pseudonym_domain_create
from apps.assessments.models import Assessment, PseudonymDomain
from apps.core import fields as strict
from apps.core.schema import ORGANIZATION_FILTER


class PseudonymDomainSerializer(serializers.ModelSerializer[PseudonymDomain]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )

    class Meta:
        model = PseudonymDomain
        fields = ["id", "organization", "name", "description", "created_at"]
        read_only_fields = fields


class PseudonymDomainCreateSerializer(serializers.Serializer[PseudonymDomain]):
    organization = strict.SlugField(help_text="Short name (slug) of the organization.")
    name = strict.CharField(max_length=200)
    description = strict.CharField(required=False, allow_blank=True, default="", max_length=500)


class DomainChoiceSerializer(serializers.Serializer[Any]):
    pseudonym_domain = serializers.UUIDField(
        allow_null=True,
        help_text="A domain of the assessment's organization, or null: this release's own keys.",
    )


@extend_schema(parameters=[ORGANIZATION_FILTER])
class PseudonymDomainViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[PseudonymDomain]
):
    """Named pseudonymisation domains: releases in one share the key of their keyed
    pseudonyms (EDPB Guidelines 01/2025). Defined by an organization's administrator."""

    serializer_class = PseudonymDomainSerializer
    permission_classes = [OrganizationRole]
    queryset = PseudonymDomain.objects.none()

    def get_queryset(self) -> QuerySet[PseudonymDomain]:
        queryset = PseudonymDomain.objects.filter(
            organization__memberships__user=user_of(self.request)
        ).select_related("organization")
        org = self.request.query_params.get("organization")
        return queryset.filter(organization__slug=org) if org else queryset

    @extend_schema(
        request=PseudonymDomainCreateSerializer, responses={201: PseudonymDomainSerializer}
    )
    def create(self, request: Request) -> Response:
        payload = PseudonymDomainCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        organization = Organization.objects.filter(slug=data["organization"]).first()
        if organization is None:
            raise NotFound("No such organization.")
        domain = pseudonym_domain_create(
            organization=organization,
            user=user_of(request),
            name=data["name"],
            description=data["description"],
        )
        return Response(PseudonymDomainSerializer(domain).data, status=status.HTTP_201_CREATED)


def _choice(assessment: Assessment) -> dict[str, Any]:
    domain = assessment.pseudonym_domain
    return {
        "pseudonym_domain": None if domain is None else str(domain.id),
        "pseudonym_domain_name": None if domain is None else domain.name,
    }


class AssessmentDomainView(APIView):
    """Step 1: the release's pseudonymisation domain (null: keys of its own)."""

    def _assessment(self, request: Request, pk: str) -> Assessment:
        assessment = (
            Assessment.objects.filter(id=pk, organization__memberships__user=user_of(request))
            .select_related("organization", "pseudonym_domain")
            .first()
        )
        if assessment is None:
            raise NotFound("No such assessment.")
        return assessment

    @extend_schema(responses=DomainChoiceSerializer)
    def get(self, request: Request, pk: str) -> Response:
        return Response(_choice(self._assessment(request, pk)))

    @extend_schema(request=DomainChoiceSerializer, responses=DomainChoiceSerializer)
    def put(self, request: Request, pk: str) -> Response:
        assessment = self._assessment(request, pk)
        if not membership_get(user=request.user, organization=assessment.organization).can_edit:
            raise PermissionDenied("Only analysts and administrators can change this.")
        payload = DomainChoiceSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        stale = assessment_set_pseudonym_domain(
            assessment=assessment,
            user=user_of(request),
            domain_id=payload.validated_data["pseudonym_domain"],
        )
        return Response({**_choice(assessment), "stale": stale})
