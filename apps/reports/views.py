"""Report pages: check a presented copy, download a stored one (any member)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.audit.services import audit_record
from apps.core.downloads import file_download
from apps.core.errors import ApplicationError
from apps.reports import signing
from apps.reports.content import report_html
from apps.reports.forms import ReportVerifyForm
from apps.reports.identity import (
    organization_signing_ensure,
    organization_signing_import,
    organization_timestamp_url_set,
    timestamp_url,
)
from apps.reports.selectors import report_filename, report_get, reports_of
from apps.reports.summary_verification import copy_verify
from apps.reports.verification import report_file_open


@org_view()
def report_verify_view(request: HttpRequest, organization: Organization) -> HttpResponse:
    """GET: the upload form. POST: is this PDF our signed, unchanged report, and of which
    release decision? The file is read in memory and not kept."""
    result = None
    signed_at = None
    status = 200
    if request.method == "POST":
        form = ReportVerifyForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            twin = form.cleaned_data.get("twin")
            try:
                result = copy_verify(
                    organization=organization,
                    pdf=upload.read(),
                    twin=twin.read() if twin is not None else None,
                )
            except ApplicationError as exc:
                form.add_error(None, exc.message)
                status = 503
            else:
                result["filename"] = upload.name
                if result["signed_at"]:
                    signed_at = datetime.fromisoformat(result["signed_at"])
        else:
            status = 400
    else:
        form = ReportVerifyForm()
    return render(
        request,
        "reports/verify.html",
        {
            "form": form,
            "result": result,
            "signed_at": signed_at,
            "reports": reports_of(organization=organization)[:20],
            "help_topic": "assessments",
        },
        status=status,
    )


@org_view()
def report_download(
    request: HttpRequest, organization: Organization, report_id: UUID
) -> HttpResponseBase:
    """The signed PDF, if the stored file is still the one signed (``report_file_open``);
    otherwise a 409 saying so, the refusal in the audit trail."""
    report = report_get(organization=organization, report_id=report_id)
    try:
        handle = report_file_open(report=report, user=request.user)
    except ApplicationError as exc:
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    return file_download(handle, filename=report_filename(report), content_type="application/pdf")


@org_view()
def report_view(request: HttpRequest, organization: Organization, report_id: UUID) -> HttpResponse:
    """The report read in the browser: the same HTML the signed PDF was made of, from the
    frozen record of the decision, with a banner pointing to the signed PDF (the record)."""
    from django.urls import reverse

    report = report_get(organization=organization, report_id=report_id)
    html = report_html(
        assessment=report.assessment,
        decision=report.decision,
        viewer={
            "pdf": reverse(
                "report-download", kwargs={"org": organization.slug, "report_id": report.id}
            ),
            "verify": reverse("report-verify", kwargs={"org": organization.slug}),
            "sha256": report.sha256,
        },
    )
    audit_record(
        organization=organization,
        actor=request.user,
        action="report.viewed",
        obj=report,
        details={"assessment": str(report.assessment_id), "sha256": report.sha256},
    )
    response = HttpResponse(html)
    response["Cache-Control"] = "no-store"
    return response


@org_view()
def signing_view(request: HttpRequest, organization: Organization) -> HttpResponse:
    """The organization's signing certificate: what reports are signed with (fingerprint to
    compare), those signed with before, the timestamp authority; administrators import a
    certificate issued by a certification authority (PKCS#12) and set the authority."""
    from django.contrib import messages
    from django.shortcuts import redirect

    membership = membership_of(request)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "import":
                upload = request.FILES.get("bundle")
                if upload is None:
                    raise ApplicationError("Choose the PKCS#12 file (.p12 or .pfx) to import.")
                if (upload.size or 0) > 1024 * 1024:
                    raise ApplicationError(
                        "A PKCS#12 bundle is a few kilobytes; this file is too large."
                    )
                described = organization_signing_import(
                    organization=organization,
                    user=user_of(request),
                    bundle=upload.read(),
                    passphrase=request.POST.get("passphrase", ""),
                )
                messages.success(
                    request,
                    f"Reports are now signed with {described['subject']} "
                    f"(SHA-256 {described['sha256'][:23]}…).",
                )
            elif request.POST.get("action") == "timestamp":
                organization_timestamp_url_set(
                    organization=organization,
                    user=user_of(request),
                    url=request.POST.get("timestamp_url", ""),
                )
                messages.success(request, "Timestamp authority saved.")
            else:
                raise ApplicationError("Unknown action.")
        except ApplicationError as exc:
            if exc.status == 403:
                from django.core.exceptions import PermissionDenied

                raise PermissionDenied(exc.message) from None
            messages.error(request, exc.message)
        return redirect("organization-signing", org=organization.slug)
    current = signing.describe_certificate(organization_signing_ensure(organization=organization))
    previous = [
        signing.describe_certificate(pem.encode())
        for pem in organization.signing_previous_certificates or []
    ]
    return render(
        request,
        "reports/signing.html",
        {
            "current": current,
            "previous": previous,
            "timestamp_url": timestamp_url(organization),
            "own_timestamp_url": organization.signing_timestamp_url,
            "can_change": membership.is_admin,
            "help_topic": "assessments",
        },
    )
