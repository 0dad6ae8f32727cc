"""A fully computed, submitted and decided assessment to report on."""

from __future__ import annotations

import pytest

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
