"""No internal key where a person reads (issues #16, #22): every page a member can open, the
signed report, the e-mails and the API's display fields of a full walk use the method's
words. The keys looked for are read from the code (tests/core/internal_keys.py), never
listed here, so a key added to a choice list or a registry is looked for at once; and every
such key must have its label in the one table, apps.core.labels."""

from __future__ import annotations

import io
import json
from unittest import mock

import pytest
from django.core import mail
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from pypdf import PdfReader

from apps.assessments import configuration, deidentify, release_apply
from apps.assessments import services as assessment_services
from apps.assessments.techniques import techniques_set
from apps.classification.services import variables_accept_suggestions
from apps.core.help import HELP_TOPICS
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job
from apps.reports.models import Report
from apps.reports.verification import report_pdf
from apps.reviews.decisions import review_decide, step_comment_add
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import (
    CONTROLS_ALL_YES,
    LOW_ANSWERS,
    MOTIVES_LOW,
    _run,
    trade_off_people,
    uploaded_register,
)
from tests.core import internal_keys
from tests.core.internal_keys import display_strings, found, key_finder, read_text
from tests.justify import justify_all

pytestmark = pytest.mark.django_db

# Routes that answer with a file or act on the request; every other page is read.
NOT_PAGES = (
    "download",
    "secrets",
    "logout",
    "cancel",
    "retry",
    "delete",
    "accept",
    "submit",
    "revoke",
    "reassessment",  # a form's action (triggers, interval): POST, back to the registry
)


def _walk(analyst, reviewer, custodian):  # type: ignore[no-untyped-def]
    """Upload → classify → Steps 1-8 of a non-public release with a keyed pseudonym, an
    l-diversity model and a technique → submission → comment → approval → signed report."""
    analyst.email, reviewer.email = "analyst@example.org", "reviewer@example.org"
    analyst.save()
    reviewer.save()
    dataset = uploaded_register(custodian, analyst, trade_off_people())
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = assessment_services.assessment_create(
        organization=custodian, dataset=dataset, user=analyst
    )
    assessment_services.assessment_set_release(
        assessment=assessment,
        release_model="non_public",
        recipient_organization="University Hospital Research Unit",
        agreement_kind="dsa",
        agreement_reference="DSA-2026-014",
        pseudonym_linkers="The custodian's data office only",
        pseudonym_key_kept="The custodian's key vault, apart from the release",
    )
    assessment_services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    assessment_services.assessment_set_context(
        assessment=assessment,
        answers={
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 0.001,
            "prevalence_source": "Registry",
        },
    )
    _run(assessment_services.assessment_start_risk(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
        privacy_models=[{"column": "diagnosis", "spec": "distinct-l=2"}],
    )
    techniques_set(
        assessment=assessment,
        user=analyst,
        entries=[{"technique": "pram", "column": "diagnosis", "retain": 0.9}],
    )
    # PRAM draws a fresh seed per run; a fixed one keeps this walk from depending on luck
    # (some draws leave a class homogeneous on the diagnosis, which the l = 2 model refuses).
    with mock.patch("secrets.randbits", return_value=20261126):
        for start in (deidentify.assessment_start_search, release_apply.assessment_start_apply):
            _run(start(assessment=assessment, user=analyst))
            assessment.refresh_from_db()
    assessment_services.assessment_accept_utility(assessment=assessment, note="Fit for use.")
    justify_all(assessment)
    assessment.refresh_from_db()
    assessment_submit(assessment=assessment, user=analyst, note="Ready.")
    step_comment_add(
        assessment=assessment, author=reviewer, step="data-risk", text="Checked the classes."
    )
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets the target."
    )
    (job,) = Job.objects.filter(kind="report", params__decision_id=str(decision.id))
    job_execute(job_id=str(job.id))
    assessment.refresh_from_db()
    return assessment, Report.objects.get(decision=decision)


def _routes() -> list[tuple[str, list[str]]]:
    """(name, its URL's keyword names) of every page outside the API and the admin site."""
    out = []

    def walk(resolver, prefix, names):  # type: ignore[no-untyped-def]
        for p in resolver.url_patterns:
            converters = [*names, *getattr(p.pattern, "converters", {})]
            if isinstance(p, URLResolver):
                walk(p, prefix + str(p.pattern), converters)
            elif isinstance(p, URLPattern) and p.name:
                path = prefix + str(p.pattern)
                if not path.startswith(("api/", "admin/")):
                    out.append((p.name, converters))

    walk(get_resolver(), "", [])
    return out


def _page_urls(assessment, report) -> list[str]:  # type: ignore[no-untyped-def]
    from apps.assessments.steps import STEPS

    values = {
        "org": [assessment.organization.slug],
        "dataset_id": [assessment.dataset_id],
        "assessment_id": [assessment.id],
        "report_id": [report.id],
        "job_id": [j.id for j in Job.objects.filter(organization=assessment.organization)],
        "slug": [s.slug for s in STEPS],
        "topic": list(HELP_TOPICS),
    }
    urls = []
    for name, kwargs in _routes():
        if any(word in name for word in NOT_PAGES):
            continue
        if any(k not in values for k in kwargs):
            raise AssertionError(f"the page {name} takes {kwargs}: give the walk a value")
        combos: list[dict[str, object]] = [{}]
        for k in kwargs:
            combos = [{**c, k: v} for c in combos for v in values[k]]
        urls += [reverse(name, kwargs=c) for c in combos]
    return urls


def _api_urls(assessment, report) -> list[str]:  # type: ignore[no-untyped-def]
    a, d = assessment.id, assessment.dataset_id
    urls = [f"/api/v1/assessments/{a}/", f"/api/v1/datasets/{d}/", f"/api/v1/reports/{report.id}/"]
    urls += [
        f"/api/v1/assessments/{a}/{part}/"
        for part in (
            "release",
            "threshold",
            "context",
            "risk",
            "overall",
            "deidentify/config",
            "hierarchies",
            "search",
            "apply",
            "utility",
            "record",
            "comments",
            "decisions",
            "report",
        )
    ]
    urls += [f"/api/v1/classification/{d}/{part}/" for part in ("status", "history")]
    urls += [f"/api/v1/variables/?dataset={d}", "/api/v1/jobs/", "/api/v1/assessments/"]
    urls += [
        f"/api/v1/jobs/{j.id}/" for j in Job.objects.filter(organization=assessment.organization)
    ]
    return urls


def _everything_read(assessment, report, users, client_for):  # type: ignore[no-untyped-def]
    """(where, text) of every page, API display field, e-mail and the signed report."""
    texts = []
    pages, apis = _page_urls(assessment, report), _api_urls(assessment, report)
    for user in users:
        client = client_for(user)
        for url in pages:
            response = client.get(url)
            if response.status_code in (302, 403, 404, 405):
                continue  # a page this role may not open, or a form that only takes POST
            # 400: a page asked without its parameters says what it needs, in words too
            assert response.status_code in (200, 400), (user.username, url, response.status_code)
            if response["Content-Type"].startswith("text/html"):
                texts.append((f"{user.username} {url}", read_text(response.content.decode())))
        for url in apis:
            response = client.get(url)
            assert response.status_code in (200, 403, 404), (url, response.status_code)
            data = json.loads(response.content or b"null")
            texts.append((f"{user.username} {url}", "\n".join(display_strings(data))))
    texts += [(f"e-mail {m.subject!r}", f"{m.subject}\n{m.body}") for m in mail.outbox]
    pdf = PdfReader(io.BytesIO(report_pdf(report)))
    texts.append(("the signed report", " ".join(page.extract_text() for page in pdf.pages)))
    return texts


def test_every_key_of_the_code_has_its_label_in_the_one_table():
    assert internal_keys.unlabelled() == []


def test_a_key_added_to_a_registry_or_to_a_choice_list_without_a_label_fails(monkeypatch):
    from apps.classification.models import Variable

    monkeypatch.setattr(configuration, "MASKING_METHODS", (*configuration.MASKING_METHODS, "blur"))
    field = Variable._meta.get_field("role")
    monkeypatch.setattr(field, "choices", [*field.choices, ("proxy", "Proxy")])
    problems = internal_keys.unlabelled()
    assert "masking_method: 'blur' has no label" in problems
    assert any(p.startswith("classification.Variable.role:") for p in problems)
    assert internal_keys.key_finder(internal_keys.internal_keys()).search("method: blur")


def test_a_new_job_kind_shown_raw_is_found(monkeypatch, analyst, custodian, client_for):
    """The finder is not a list: a kind that exists only in this test, shown by the job's
    page without a label, is found."""
    from apps.jobs import kinds as job_kinds

    monkeypatch.setitem(job_kinds.JOB_HANDLERS, "assessment-export", "tests.nowhere")
    job = Job.objects.create(organization=custodian, kind="assessment-export", params={})
    page = client_for(analyst).get(
        reverse("job-detail", kwargs={"org": custodian.slug, "job_id": job.id})
    )
    finder = key_finder(internal_keys.internal_keys())
    hits = found(read_text(page.content.decode()), finder, "job page")
    assert hits, hits
    assert {h.split("'")[1] for h in hits} == {"assessment-export"}, hits


def test_pages_report_emails_and_api_of_a_full_walk_use_words(
    analyst, reviewer, custodian, client_for, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assessment, report = _walk(analyst, reviewer, custodian)
    assert len(mail.outbox) >= 2  # the submission to the reviewer, the decision to the analyst
    columns = list(assessment.dataset.variables.values_list("name", flat=True))
    finder = key_finder(internal_keys.internal_keys(data_words=columns))
    problems = []
    for where, text in _everything_read(assessment, report, (analyst, reviewer), client_for):
        problems += found(text, finder, where)
    assert problems == [], "\n".join(problems)
