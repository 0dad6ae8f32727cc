"""Reads of reports: only within the caller's organization (404 otherwise)."""

from __future__ import annotations

from uuid import UUID

from django.db.models import QuerySet
from django.http import Http404

from apps.accounts.models import Organization
from apps.reports.models import Report


def reports_of(*, organization: Organization) -> QuerySet[Report]:
    return Report.objects.filter(organization=organization).select_related(
        "assessment", "decision", "decision__reviewer", "organization"
    )


def report_get(*, organization: Organization, report_id: UUID | str) -> Report:
    report = reports_of(organization=organization).filter(id=report_id).first()
    if report is None:
        raise Http404("No such report.")
    return report


def report_filename(report: Report) -> str:
    """A name that says what the file is: organization, assessment, version, decision."""
    from django.utils.text import slugify

    decision = report.decision
    title = slugify(report.assessment.title)[:60] or "assessment"
    org = slugify(report.organization.slug)[:40] or "organization"
    outcome = {"approve": "approved", "reject": "rejected"}.get(
        decision.decision, decision.decision
    )
    return (
        f"{org}-{title}-v{decision.version}-{outcome}-{decision.created_at:%Y%m%d}-step9-report.pdf"
    )
