"""The assessment API's release files (``ReleaseFileActions``): the preview of the
de-identified file, its download once approved, and the keys and linking tables."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import polars as pl
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from apps.assessments import hooks, release_secrets
from apps.assessments.api_base import AssessmentActions
from apps.assessments.models import Assessment
from apps.assessments.serializers_deidentify import PreviewSerializer
from apps.audit.services import audit_record
from apps.core.downloads import file_download, no_store
from apps.datasets.storage import local_path


class DownloadSerializer(serializers.Serializer[Any]):
    format = serializers.ChoiceField(
        choices=["csv", "parquet", "zip"],
        default="csv",
        help_text="csv or parquet: the released table; zip: every file of the release, each "
        "checked against the approved digest, with their SHA-256 (SHA256SUMS).",
    )
    file = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="A file of the release by name, as the decision lists it (a release of "
        "linked tables: each table in Parquet and CSV, e.g. visits.csv); format is then "
        "ignored.",
    )


class FileFormatNegotiation(DefaultContentNegotiation):
    """``?format=`` names the release file here, not a renderer: answer errors in JSON."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class ReleaseFileActions(AssessmentActions):
    """The de-identified file: its preview (analysts and administrators), its download once
    a reviewer approved the release, and the keys and linking tables (administrators)."""

    def _audit_download(self, assessment: Assessment, action: str, **details: str) -> None:
        audit_record(
            organization=assessment.organization,
            actor=self._user(),
            action=action,
            obj=assessment,
            details={**details, "version": assessment.version},
        )

    @extend_schema(responses=PreviewSerializer)
    @action(detail=True, methods=["get"], url_path="release/preview", url_name="release-preview")
    def release_preview(self, request: Request, pk: str | None = None) -> Response:
        """The first 100 rows of the de-identified file (analysts and administrators)."""
        assessment = self.get_object()
        if not self._membership(assessment).can_edit:
            raise PermissionDenied(
                "Only analysts and administrators may preview the de-identified file."
            )
        if not assessment.output_parquet_path:
            raise NotFound("Nothing has been applied yet.")
        with local_path(assessment.output_parquet_path) as path:
            frame = pl.scan_parquet(path).head(100).collect()
        return no_store(
            Response(
                {
                    "columns": frame.columns,
                    "rows": [[_jsonable(v) for v in row] for row in frame.rows()],
                }
            )
        )

    @extend_schema(
        parameters=[DownloadSerializer],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The de-identified file."
            ),
            (200, "application/vnd.apache.parquet"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The de-identified file."
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="Every file of the release, with SHA256SUMS."
            ),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="release/download",
        url_name="release-download",
        content_negotiation_class=FileFormatNegotiation,
    )
    def release_download(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """The de-identified file, once a reviewer approved the release (403 before): the
        table, a file of the release by name, or all of them (zip); 409 when its bytes are
        not the approved ones."""
        assessment = self.get_object()
        query = DownloadSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        released = hooks.release_file_open(
            assessment=assessment,
            fmt=query.validated_data["format"],
            user=request.user,
            file=query.validated_data["file"],
        )
        response = file_download(released.handle, filename=released.filename)
        response["X-Content-SHA256"] = released.sha256
        return response

    @extend_schema(
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.BINARY, description="Keys and linking tables (JSON file)."
            )
        },
    )
    @action(detail=True, methods=["get"], url_path="release/secrets", url_name="release-secrets")
    def release_secrets(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """Keys and linking tables, kept apart from the data: administrators only."""
        assessment = self.get_object()
        if not self._membership(assessment).is_admin:
            raise PermissionDenied(
                "Only the organization's administrators may see keys and linking tables."
            )
        content = release_secrets.release_secrets_read(assessment=assessment)
        response = file_download(
            io.BytesIO(content),
            filename=f"deidweb-{assessment.id}-keys-and-linking-tables.json",
            content_type="application/json",
        )
        self._audit_download(assessment, "download.secrets")
        return response
