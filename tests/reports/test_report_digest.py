"""Issue 23, item 11: a signed report changed in storage is not served. Release files were
checked against the approved digest on every download; the report PDF was served as found.

Now the page and the API both read the stored report through one check: its SHA-256 must be
the one recorded when it was signed (and printed nowhere else but the decision); otherwise the
download is refused (409), the refusal recorded in the audit trail with both digests, and
nothing of the changed file leaves."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from apps.audit.models import AuditEvent

pytestmark = pytest.mark.django_db
TAMPERED = b"%PDF-1.7\n% a report edited after signing\n"


def _paths(report):  # type: ignore[no-untyped-def]
    org = report.organization.slug
    return {
        "page": reverse("report-download", kwargs={"org": org, "report_id": report.id}),
        "API": f"/api/v1/reports/{report.id}/download/",
    }


def _body(response) -> bytes:  # type: ignore[no-untyped-def]
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def test_an_intact_report_is_served_and_its_download_recorded(report, reviewer, client_for):
    client = client_for(reviewer)
    for where, path in _paths(report).items():
        response = client.get(path)
        assert response.status_code == 200, where
        assert hashlib.sha256(_body(response)).hexdigest() == report.sha256
    assert AuditEvent.objects.filter(action="download.report").count() == 2
    assert not AuditEvent.objects.filter(action="download.report_refused").exists()


def test_a_report_changed_in_storage_is_refused_and_audited(report, reviewer, client_for):
    # Someone with access to the storage replaces the signed PDF.
    default_storage.delete(report.pdf_path)
    default_storage.save(report.pdf_path, ContentFile(TAMPERED))
    stored = hashlib.sha256(TAMPERED).hexdigest()
    client = client_for(reviewer)
    paths = _paths(report)

    api = client.get(paths["API"])
    assert api.status_code == 409
    body = api.json()
    assert report.sha256 in body["message"]
    assert "refusal is recorded in the audit trail" in body["message"]
    assert body["extra"] == {"signed_sha256": report.sha256, "stored_sha256": stored}

    page = client.get(paths["page"])
    assert page.status_code == 409
    assert TAMPERED not in _body(page)
    assert report.sha256 in page.content.decode()

    refusals = list(
        AuditEvent.objects.filter(action="download.report_refused").order_by("sequence")
    )
    assert len(refusals) == 2
    for event in refusals:
        assert event.object_id == str(report.id)
        assert event.details["signed_sha256"] == report.sha256
        assert event.details["stored_sha256"] == stored
        assert event.details["reason"] == "the stored file differs from the signed one"
    assert not AuditEvent.objects.filter(action="download.report").exists()


def test_a_missing_report_file_is_refused_and_audited(report, reviewer, client_for):
    default_storage.delete(report.pdf_path)
    response = client_for(reviewer).get(_paths(report)["API"])
    assert response.status_code == 409
    (event,) = AuditEvent.objects.filter(action="download.report_refused")
    assert event.details["reason"] == "the signed file is missing from storage"
    assert event.details["stored_sha256"] == ""
