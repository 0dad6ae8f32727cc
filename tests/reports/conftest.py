"""A fully computed, submitted and decided assessment to report on."""

from __future__ import annotations

import pytest

from apps.assessments import deidentify
from tests.assessments.conftest import (  # noqa: F401  # fixtures reused from the step tests
    assessment,
    classified,
    ready_dataset,
)
from tests.reports.helpers import compute, decide, run_report_job


@pytest.fixture
def decided(assessment, analyst, reviewer):  # noqa: F811
    compute(assessment, analyst)
    return decide(assessment, analyst, reviewer)


@pytest.fixture
def report(decided, monkeypatch):  # type: ignore[no-untyped-def]
    from apps.reports.models import Report

    job = run_report_job(monkeypatch, decided)
    return Report.objects.get(id=job.result["report_id"])


@pytest.fixture
def everything_written(assessment, analyst, reviewer, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    """Upload, an HMAC-pseudonymized e-mail column applied, approval and the signed report."""
    from apps.reports.models import Report

    organization = assessment.organization
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    compute(assessment, analyst)
    decision = decide(assessment, analyst, reviewer)
    job = run_report_job(monkeypatch, decision)
    assessment.refresh_from_db()
    organization.refresh_from_db()
    return {
        "assessment": assessment,
        "organization": organization,
        "report": Report.objects.get(id=job.result["report_id"]),
    }
