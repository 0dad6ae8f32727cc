"""No internal key where a person reads: the step pages, the review page, the home page,
Step 2, the data set's page, help, and the signed report's text (issue #16). Keys look like
code: ``non_public``, ``need_to_know``, ``hmac`` as a choice, ``aecs``, job kinds, or the
seeds' file numbers ("Seed 000 step 5 attack 2") instead of the guideline's own name."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from apps.jobs.models import Job
from apps.jobs.services import job_execute
from apps.reviews import services
from tests.reviews.conftest import complete

pytestmark = pytest.mark.django_db

KEYS = re.compile(
    r"\b(non_public|semi_public|need_to_know|hmac|aecs|assessment-(?:risk|search|apply)"
    r"|(?:S|s)eed \d{3}|_result|_levels)\b|Rev Iewer"
)


def visible_text(html: str) -> str:
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_pages_and_the_report_show_the_methods_words(assessment, analyst, reviewer, client_for):
    decided = complete(assessment, analyst)
    services.assessment_submit(assessment=decided, user=analyst, note="Ready for review.")
    org = decided.organization.slug
    urls = [
        reverse("org-home", kwargs={"org": org}),
        reverse("assessment-detail", kwargs={"org": org, "assessment_id": decided.id}),
        reverse("assessment-review", kwargs={"org": org, "assessment_id": decided.id}),
        reverse("dataset-classify", kwargs={"org": org, "dataset_id": decided.dataset_id}),
        reverse("dataset-detail", kwargs={"org": org, "dataset_id": decided.dataset_id}),
        reverse("help-index"),
        reverse("release-registry", kwargs={"org": org}),
    ] + [
        reverse("assessment-step", kwargs={"org": org, "assessment_id": decided.id, "slug": s})
        for s in (
            "release",
            "classification",
            "threshold",
            "data-risk",
            "context-risk",
            "overall-risk",
            "deidentify",
            "utility",
        )
    ]
    found = []
    for user in (analyst, reviewer):
        client = client_for(user)
        for url in urls:
            response = client.get(url, follow=True)
            assert response.status_code == 200, url
            text = visible_text(response.content.decode())
            found += [(user.username, url, m.group(0)) for m in KEYS.finditer(text)]
    assert found == []

    decision = services.review_decide(
        assessment=decided, reviewer=reviewer, decision="approve", reasons="Meets the target."
    )
    registry = client_for(reviewer).get(reverse("release-registry", kwargs={"org": org}))
    assert [m.group(0) for m in KEYS.finditer(visible_text(registry.content.decode()))] == []
    (job,) = Job.objects.filter(kind="report", params__decision_id=str(decision.id))
    job_execute(job_id=str(job.id))
    from pypdf import PdfReader

    from apps.reports.models import Report
    from apps.reports.services import report_pdf

    pdf = report_pdf(Report.objects.get(decision=decision))
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    assert [text[max(0, m.start() - 80) : m.end() + 40] for m in KEYS.finditer(text)] == []
