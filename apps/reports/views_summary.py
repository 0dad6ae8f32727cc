"""The recipient summary's two files on the pages (any member; audited)."""

from __future__ import annotations

from uuid import UUID

from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from apps.accounts.decorators import org_view
from apps.accounts.models import Organization
from apps.core.downloads import file_download
from apps.core.errors import ApplicationError
from apps.reports.models import RecipientSummary
from apps.reports.summary_jobs import summary_file_open, summary_filename


@org_view()
def summary_download(
    request: HttpRequest, organization: Organization, summary_id: UUID, kind: str
) -> HttpResponseBase:
    summary = (
        RecipientSummary.objects.filter(organization=organization, id=summary_id)
        .select_related("assessment", "decision", "organization")
        .first()
    )
    if summary is None or kind not in ("pdf", "json"):
        raise Http404("No such recipient summary.")
    try:
        handle = summary_file_open(summary=summary, user=request.user, kind=kind)
    except ApplicationError as exc:
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    return file_download(
        handle,
        filename=summary_filename(summary, kind),
        content_type="application/pdf" if kind == "pdf" else "application/json",
    )
