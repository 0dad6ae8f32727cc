"""The release form's API (issue 28): ``GET/PUT /assessments/{id}/release-form/`` reads and
sets it through the page's parser (``apps.assessments.release_forms.config.parse``, in
``release_form_save``); ``POST /assessments/{id}/release-form/write/`` queues the job that
writes the synthetic data or the table.  The written release and its figures are
``GET /assessments/{id}/apply/``'s, as for de-identified records."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.assessments.release_forms.services import (
    release_form_of,
    release_form_save,
    release_form_start,
)
from apps.core.errors import ApplicationError
from apps.jobs.api import JobSerializer

ERRORS = {
    400: OpenApiResponse(description="Bad input: the message names the field."),
    403: OpenApiResponse(description="Your role does not allow it."),
    404: OpenApiResponse(description="No such assessment in your organizations."),
    409: OpenApiResponse(description="The version's state does not allow it (e.g. frozen)."),
}


class ReleaseFormActions:
    """The release-form actions of ``AssessmentViewSet`` (``get_object`` comes from it)."""

    get_object: Any

    @extend_schema(methods=["GET"], responses={200: OpenApiTypes.OBJECT, 404: ERRORS[404]})
    @extend_schema(
        methods=["PUT"],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            '{"form": "microdata" | "synthetic" | "table", "synthetic": {"columns": [...], '
            '"secret": "...", "rows": n, "control_share": 0.05-0.5, "bins": 2-200}, '
            '"table": {"rows": "...", "columns": "...", "value": "...", "threshold": n}}; '
            "each part left out is kept."
        ),
    )
    @action(
        detail=True,
        methods=["get", "put"],
        url_path="release-form",
        permission_classes=[OrganizationRole],
    )
    def release_form(self, request: Request, pk: str | None = None) -> Response:
        """Step 7's release form: de-identified records, synthetic data, or a table with
        complementary suppression (PDPC 2018, §3.8 and §3.10)."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(release_form_of(assessment).to_json())
        if not isinstance(request.data, dict):
            raise ApplicationError("The release form is a JSON object.", {"field": "release_form"})
        config = release_form_save(assessment=assessment, user=user_of(request), data=request.data)
        return Response(config.to_json())

    @extend_schema(request=None, responses={202: JobSerializer, **ERRORS})
    @action(
        detail=True,
        methods=["post"],
        url_path="release-form/write",
        permission_classes=[OrganizationRole],
    )
    def release_form_write(self, request: Request, pk: str | None = None) -> Response:
        """Write the synthetic data or the table (a job); its result is ``apply``'s."""
        assessment = self.get_object()
        job = release_form_start(assessment=assessment, user=user_of(request))
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
