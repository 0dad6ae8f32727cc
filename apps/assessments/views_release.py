"""The de-identified file and its secrets as they leave deidweb: the analysts' preview of
the first rows before approval, the download of the approved release (only the exact
bytes a reviewer approved, opened through the ``release_file_open`` hook that
``reviews.release`` provides), and the administrators' download of keys and linking
tables, recorded in the audit log. Writing the file is Step 7's ``apply`` action
(``release_apply``)."""

from __future__ import annotations

from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from apps.accounts.decorators import membership_of, org_view
from apps.accounts.models import Organization
from apps.assessments import hooks, release_secrets
from apps.assessments.selectors import assessment_get
from apps.assessments.views_base import _context
from apps.audit.services import audit_record
from apps.core.downloads import file_download, no_store
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path


@org_view(edit=True)
def release_preview(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    """The first 100 rows of the de-identified file, for analysts before approval."""
    import polars as pl

    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    if not assessment.output_parquet_path:
        raise Http404("Nothing has been applied yet.")
    with local_path(assessment.output_parquet_path) as path:
        frame = pl.scan_parquet(path).head(100).collect()
    return no_store(
        render(
            request,
            "assessments/release_preview.html",
            _context(request, assessment, "deidentify", columns=frame.columns, rows=frame.rows()),
        )
    )


@org_view()
def release_download(
    request: HttpRequest, organization: Organization, assessment_id: UUID, fmt: str
) -> HttpResponseBase:
    """The de-identified file leaves deidweb only once a reviewer approved the release, and
    only as the exact bytes approved (``reviews.release``)."""
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        released = hooks.release_file_open(
            assessment=assessment, fmt=fmt, user=request.user, file=request.GET.get("file", "")
        )
    except ApplicationError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        if exc.status == 403:
            raise PermissionDenied(exc.message) from None
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    response = file_download(released.handle, filename=released.filename)
    response["X-Content-SHA256"] = released.sha256
    return response


@org_view()
def secrets_download(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponseBase:
    """Keys and linking tables: administrators only (IPC step 7; PDPC double coding),
    opened from their sealed file for this download only."""
    import io

    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    if not membership_of(request).is_admin:
        raise PermissionDenied(
            "Only the organization's administrators may see keys and linking tables."
        )
    try:
        content = release_secrets.release_secrets_read(assessment=assessment)
    except ApplicationError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")

    audit_record(
        organization=organization,
        actor=request.user,
        action="download.secrets",
        obj=assessment,
        details={"version": assessment.version},
    )
    return file_download(
        io.BytesIO(content),
        filename=f"deidweb-{assessment.id}-keys-and-linking-tables.json",
        content_type="application/json",
    )
