"""``/api/v1/summaries/``: the signed recipient summaries of the caller's organizations, and
each one's PDF and JSON twin (any member of the organization; every download audited)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.core import fields as strict
from apps.core.downloads import file_download
from apps.core.schema import ORGANIZATION_FILTER
from apps.reports.api import AnyAcceptNegotiation
from apps.reports.models import RecipientSummary
from apps.reports.summary_jobs import summary_file_open, summary_filename


class RecipientSummarySerializer(serializers.ModelSerializer[RecipientSummary]):
    organization = serializers.SlugRelatedField(slug_field="slug", read_only=True)  # type: ignore[var-annotated]
    version = strict.IntegerField(source="decision.version", read_only=True)

    class Meta:
        model = RecipientSummary
        fields = [
            "id",
            "organization",
            "assessment",
            "version",
            "decision",
            "sha256",
            "size_bytes",
            "json_sha256",
            "json_size_bytes",
            "signer",
            "created_at",
        ]
        read_only_fields = fields


@extend_schema_view(list=extend_schema(parameters=[ORGANIZATION_FILTER]))
class RecipientSummaryViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[RecipientSummary]
):
    """Recipient summaries of approved releases (IHE handbook's release package)."""

    serializer_class = RecipientSummarySerializer
    permission_classes = [OrganizationRole]
    queryset = RecipientSummary.objects.none()  # for the schema

    def get_queryset(self) -> QuerySet[RecipientSummary]:
        queryset = RecipientSummary.objects.filter(
            organization__memberships__user=user_of(self.request)
        ).select_related("organization", "assessment", "decision")
        org = self.request.query_params.get("organization")
        return queryset.filter(organization__slug=org) if org else queryset

    def _download(self, kind: str) -> HttpResponseBase:
        summary = self.get_object()
        return file_download(
            summary_file_open(summary=summary, user=self.request.user, kind=kind),
            filename=summary_filename(summary, kind),
            content_type="application/pdf" if kind == "pdf" else "application/json",
        )

    @extend_schema(
        responses={(200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    @action(detail=True, methods=["get"], content_negotiation_class=AnyAcceptNegotiation)
    def pdf(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """The signed summary; refused (409, audited) if the stored file changed."""
        return self._download("pdf")

    @extend_schema(
        responses={(200, "application/json"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    @action(detail=True, methods=["get"], content_negotiation_class=AnyAcceptNegotiation)
    def json(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """The JSON twin, byte for byte as its digest in the signed summary."""
        return self._download("json")
