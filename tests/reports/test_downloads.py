"""Every response that carries data, keys, reports or releases out of deidweb tells caches
to keep no copy (#15): the browser's disk cache of a shared workstation must not hold a
de-identified file, a linking table or a page of raw rows after the user leaves."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

API = "/api/v1"


def _endpoints(written):  # type: ignore[no-untyped-def]
    assessment = written["assessment"]
    report = written["report"]
    org = assessment.organization.slug
    a = {"org": org, "assessment_id": assessment.id}
    return {
        # name: (who asks, path, query)
        "page: data set preview": (
            "analyst",
            reverse("dataset-preview", kwargs={"org": org, "dataset_id": assessment.dataset_id}),
            {},
        ),
        "page: release preview": ("analyst", reverse("assessment-release-preview", kwargs=a), {}),
        "page: release CSV": (
            "reviewer",
            reverse("assessment-release-download", kwargs={**a, "fmt": "csv"}),
            {},
        ),
        "page: release Parquet": (
            "reviewer",
            reverse("assessment-release-download", kwargs={**a, "fmt": "parquet"}),
            {},
        ),
        "page: keys and linking tables": (
            "admin_user",
            reverse("assessment-secrets", kwargs=a),
            {},
        ),
        "page: report": (
            "reviewer",
            reverse("report-download", kwargs={"org": org, "report_id": report.id}),
            {},
        ),
        "API: data set preview": (
            "analyst",
            f"{API}/datasets/{assessment.dataset_id}/preview/",
            {},
        ),
        "API: release preview": (
            "analyst",
            f"{API}/assessments/{assessment.id}/release/preview/",
            {},
        ),
        "API: release CSV": (
            "reviewer",
            f"{API}/assessments/{assessment.id}/release/download/",
            {"format": "csv"},
        ),
        "API: release Parquet": (
            "reviewer",
            f"{API}/assessments/{assessment.id}/release/download/",
            {"format": "parquet"},
        ),
        "API: keys and linking tables": (
            "admin_user",
            f"{API}/assessments/{assessment.id}/release/secrets/",
            {},
        ),
        "API: report": ("reviewer", f"{API}/reports/{report.id}/download/", {}),
    }


ENDPOINTS = [
    "page: data set preview",
    "page: release preview",
    "page: release CSV",
    "page: release Parquet",
    "page: keys and linking tables",
    "page: report",
    "API: data set preview",
    "API: release preview",
    "API: release CSV",
    "API: release Parquet",
    "API: keys and linking tables",
    "API: report",
]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_download_is_never_cached(endpoint, everything_written, request):  # type: ignore[no-untyped-def]
    persona, path, query = _endpoints(everything_written)[endpoint]
    client = Client()
    client.force_login(request.getfixturevalue(persona))
    response = client.get(path, query)
    assert response.status_code == 200, (endpoint, response.status_code)
    directives = {d.strip() for d in response["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives, response["Cache-Control"]
    assert "public" not in directives
