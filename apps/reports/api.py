"""``/api/v1/reports/``: the signed Step 9 reports of the caller's organizations, their PDF,
and the check of a presented copy (``POST /api/v1/reports/verify/``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationMember, OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.core import fields as strict
from apps.core.downloads import file_download
from apps.core.schema import ORGANIZATION_FILTER
from apps.jobs.api import JobSerializer
from apps.reports.forms import MAX_REPORT_BYTES
from apps.reports.jobs import report_again
from apps.reports.models import RecipientSummary, Report
from apps.reports.selectors import report_filename
from apps.reports.summary_jobs import summary_row
from apps.reports.summary_verification import copy_verify
from apps.reports.verification import report_file_open
from apps.reviews.api import ERRORS


class ReportSerializer(serializers.ModelSerializer[Report]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    assessment_title = strict.CharField(source="assessment.title", read_only=True)
    version = strict.IntegerField(source="decision.version", read_only=True)
    decision_outcome = strict.CharField(source="decision.decision", read_only=True)

    class Meta:
        model = Report
        fields = [
            "id",
            "organization",
            "assessment",
            "assessment_title",
            "version",
            "decision",
            "decision_outcome",
            "sha256",
            "size_bytes",
            "signer",
            "job",
            "created_at",
        ]
        read_only_fields = fields


class ReportVerifyRequestSerializer(serializers.Serializer[dict[str, object]]):
    organization = strict.SlugField(help_text="Short name (slug) of the organization.")
    file = serializers.FileField(help_text="The signed report or recipient summary (PDF).")
    json = serializers.FileField(
        required=False,
        help_text="A recipient summary's JSON twin, checked against the digest the PDF carries.",
    )

    def validate_file(self, value):  # type: ignore[no-untyped-def]
        if value.size > MAX_REPORT_BYTES:
            raise serializers.ValidationError("That file is far larger than any report.")
        return value

    def validate_json(self, value):  # type: ignore[no-untyped-def]
        if value.size > MAX_REPORT_BYTES:
            raise serializers.ValidationError("That file is far larger than any JSON twin.")
        return value


class MatchedDecisionSerializer(serializers.Serializer[dict[str, object]]):
    decision_id = strict.UUIDField()
    assessment_id = strict.UUIDField()
    assessment_title = strict.CharField()
    version = strict.IntegerField()
    decision = strict.CharField()
    decision_label = strict.CharField()
    final = strict.BooleanField()
    reviewer = strict.CharField()
    decided_at = serializers.DateTimeField()
    report_id = strict.UUIDField(allow_null=True)


class ReportVerifyResultSerializer(serializers.Serializer[dict[str, object]]):
    valid = strict.BooleanField(
        help_text="Intact, covering the whole file, and signed with the organization's certificate."
    )
    signed = strict.BooleanField()
    intact = strict.BooleanField(help_text="Not one byte changed since signing.")
    trusted = strict.BooleanField(help_text="Signed with the organization's certificate.")
    signer = strict.CharField()
    signed_at = serializers.DateTimeField(allow_null=True)
    problem = strict.CharField(help_text="Why the report is not valid; empty when it is.")
    sha256 = strict.CharField()
    size_bytes = strict.IntegerField()
    decision = MatchedDecisionSerializer(
        allow_null=True,
        help_text="The organization's release decision whose report has exactly this content.",
    )
    summary = strict.CharField()
    recipient_summary = serializers.DictField(
        allow_null=True,
        help_text="For a recipient summary: the JSON twin's digest as carried and as "
        "uploaded, whether they match, and the stored summary with this PDF.",
    )


class AnyAcceptNegotiation(DefaultContentNegotiation):
    """The download answers a PDF whatever the Accept header; errors come back as JSON."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


@extend_schema_view(list=extend_schema(parameters=[ORGANIZATION_FILTER]))
class ReportViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Report]
):
    """Signed Step 9 reports of the caller's organizations (IPC 2016, step 9)."""

    serializer_class = ReportSerializer
    permission_classes = [OrganizationRole]
    queryset = Report.objects.none()  # for the schema; get_queryset scopes every request

    def get_queryset(self) -> QuerySet[Report]:
        queryset = Report.objects.filter(
            organization__memberships__user=user_of(self.request)
        ).select_related("organization", "assessment", "decision")
        org = self.request.query_params.get("organization")
        return queryset.filter(organization__slug=org) if org else queryset

    @extend_schema(
        responses={
            (200, "application/pdf"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The signed report."
            )
        },
    )
    @action(detail=True, methods=["get"], content_negotiation_class=AnyAcceptNegotiation)
    def download(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """The signed PDF, for any member of the report's organization; refused (409, and
        recorded in the audit trail) if the stored file is no longer the one signed."""
        report = self.get_object()
        return file_download(
            report_file_open(report=report, user=request.user),
            filename=report_filename(report),
            content_type="application/pdf",
        )

    @extend_schema(
        request={"multipart/form-data": ReportVerifyRequestSerializer},
        responses={200: ReportVerifyResultSerializer},
    )
    @action(detail=False, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def verify(self, request: Request) -> Response:
        """Check a presented copy: signature intact and made with the organization's
        certificate, and the release decision whose report has exactly this content."""
        payload = ReportVerifyRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        organization = Organization.objects.filter(
            slug=payload.validated_data["organization"]
        ).first()
        if organization is None:
            raise NotFound("No such organization.")
        membership_get(user=request.user, organization=organization)  # 404 for outsiders
        twin = payload.validated_data.get("json")
        result = copy_verify(
            organization=organization,
            pdf=payload.validated_data["file"].read(),
            twin=twin.read() if twin is not None else None,
        )
        return Response(ReportVerifyResultSerializer(result).data)


class ReportStateSerializer(serializers.Serializer[Any]):
    reports = serializers.ListField(child=serializers.DictField())
    summaries = serializers.ListField(
        child=serializers.DictField(),
        help_text="The recipient summaries of approved decisions, with their PDF and JSON.",
    )
    jobs = JobSerializer(many=True)


class ReportActions:
    """The report action of the assessments' viewset, ``/api/v1/assessments/{id}/report/``
    (mixed in where the API is assembled, ``deidweb/urls.py``; ``get_object`` comes from it)."""

    get_object: Any

    @extend_schema(methods=["GET"], responses={200: ReportStateSerializer, 404: ERRORS[404]})
    @extend_schema(methods=["POST"], request=None, responses={202: ReportStateSerializer, **ERRORS})
    @action(detail=True, methods=["get", "post"], permission_classes=[OrganizationMember])
    def report(self, request: Request, pk: str | None = None) -> Response:
        """The signed Step 9 reports of this version's final decisions (download them from
        ``/api/v1/reports/{id}/download/``). POST prepares a missing one again, from the frozen
        record (reviewers and administrators)."""
        assessment = self.get_object()
        jobs: list[Any] = []
        if request.method == "POST":
            jobs = report_again(assessment=assessment, user=user_of(request))
        reports = Report.objects.filter(assessment=assessment).select_related("decision")
        if request.method == "GET" and not assessment.decisions.filter(final=True).exists():
            raise NotFound("No final decision on this version yet.")
        data = {
            "reports": [
                {
                    "id": str(r.id),
                    "decision": str(r.decision_id),
                    "sha256": r.sha256,
                    "size_bytes": r.size_bytes,
                    "created_at": r.created_at.isoformat(),
                }
                for r in reports
            ],
            "summaries": [
                summary_row(s)
                for s in RecipientSummary.objects.filter(assessment=assessment).order_by(
                    "created_at"
                )
            ],
            "jobs": jobs,
        }
        code = status.HTTP_202_ACCEPTED if request.method == "POST" else status.HTTP_200_OK
        return Response(ReportStateSerializer(data).data, status=code)
