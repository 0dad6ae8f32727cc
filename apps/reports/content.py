"""What the Step 9 report (IPC 2016, step 9) says: the version's frozen record and the review
rows up to the decision gathered into the template's context, rendered to HTML and, by
WeasyPrint, to an unsigned PDF.

Nothing here recomputes a figure: every number comes from the JSON results the steps stored,
so the report says exactly what the pages and the API said when the reviewer decided.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.template.loader import render_to_string

from apps.assessments.attack_tests import attack_rows
from apps.assessments.freetext import identifier_findings
from apps.assessments.hierarchies import value_lists
from apps.assessments.justifications import justification_rows, release_transformations
from apps.assessments.models import Assessment
from apps.assessments.presenters import record_risk_rows
from apps.assessments.release_columns import column_findings, masked_columns
from apps.assessments.solution_words import alternatives_rows
from apps.assessments.steps import BY_SLUG, STEPS
from apps.assessments.verdicts import loss_headline, missingness_figures, search_verdict
from apps.audit.services import audit_key_is_public
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.engine import context as engine_context
from apps.engine.threshold import get_profile
from apps.reports import signing
from apps.reports.content_assumptions import justification_items, standing_assumptions
from apps.reports.content_charts import report_charts, with_ordered_buckets
from apps.reports.content_deidentification import hierarchy_rows, masking_rows
from apps.reports.identity import organization_certificate, timestamp_url
from apps.reviews.models import (
    MotivatedIntruderTest,
    ReleaseRecord,
    ReviewDecision,
    StepComment,
    Submission,
)
from apps.reviews.selectors import intruder_test_status, version_chain
from apps.reviews.snapshot import assessment_record

STEP_TITLES = {step.slug: f"Step {step.number}: {step.title}" for step in STEPS}
STEP_TITLES["general"] = "General"


def person_name(user: User | None) -> str:
    if user is None:
        return "(a deleted user)"
    return user.get_full_name() or user.get_username()


def _insider_table(context_result: dict[str, Any] | None, profile: str) -> dict[str, Any] | None:
    if not context_result or not context_result.get("insider"):
        return None
    try:
        data = get_profile(profile)
    except Exception:
        return None
    insider = context_result["insider"]
    motives = list(next(iter(data.insider_attack.values())).keys()) if data.insider_attack else []
    return {
        "name": data.name,
        "source": data.insider_attack_source,
        "motives": motives,
        "rows": [
            {
                "controls": controls,
                "cells": [
                    {
                        "value": row.get(m),
                        "used": controls == insider.get("controls") and m == insider.get("motives"),
                    }
                    for m in motives
                ],
            }
            for controls, row in data.insider_attack.items()
        ],
    }


def _decision_row(decision: ReviewDecision, current: ReviewDecision) -> dict[str, Any]:
    return {
        "id": decision.id,
        "reviewer": person_name(decision.reviewer),
        "decision": decision.decision,
        "decision_label": label_for("decision_outcome", decision.decision),
        "reasons": decision.reasons,
        "version": decision.version,
        "final": decision.final,
        "at": decision.created_at,
        "this": decision.id == current.id,
    }


def report_context(*, assessment: Assessment, decision: ReviewDecision) -> dict[str, Any]:
    """Everything the Step 9 template shows, read from the version's frozen record and the
    review rows up to the decision: rendering it again later gives the same report."""
    if decision.assessment_id != assessment.id:
        raise ApplicationError("The decision is about another assessment.")
    organization = assessment.organization
    dataset = assessment.dataset
    record = assessment_record(assessment)
    assessment = record.assessment
    decided_at = decision.created_at
    threshold = assessment.threshold_result or {}
    risk = assessment.risk_result or {}
    context = assessment.context_result or {}
    search = assessment.search_result or {}
    applied = assessment.apply_result or {}
    utility = applied.get("utility") or {}
    overall = record.overall
    variables, change_count = record.variables, record.classification_changes

    risk_after = applied.get("risk_after") or {}
    context_value = context.get("value")
    threshold_value = threshold.get("value")
    overall_after = (
        float(risk_after["data_risk"]) * float(context_value)
        if risk_after.get("data_risk") is not None and context_value is not None
        else None
    )
    passes_after = (
        overall_after <= float(threshold_value) + 1e-12
        if overall_after is not None and threshold_value is not None
        else None
    )
    if applied.get("passes") is not None and passes_after is not None:
        passes_after = bool(passes_after and applied["passes"])

    # JSONB stores object keys sorted by length, so "20+" comes back before "3-4": put the
    # class-size buckets back in order of size before drawing or tabulating them.
    risk = with_ordered_buckets(risk)
    risk_after = with_ordered_buckets({"profile": risk_after})["profile"] if risk_after else {}
    charts = report_charts(
        assessment=assessment, risk=risk, overall=overall, search=search, applied=applied
    )

    # Only what existed when the decision was taken, so the report never changes after it.
    decisions = list(
        ReviewDecision.objects.filter(assessment_id=assessment.id, created_at__lte=decided_at)
        .select_related("reviewer")
        .order_by("created_at")
    )
    submissions = list(
        Submission.objects.filter(assessment_id=assessment.id, created_at__lte=decided_at)
        .select_related("submitted_by")
        .order_by("created_at")
    )
    comments = [
        {
            "step": STEP_TITLES.get(c.step, c.step),
            "author": person_name(c.author),
            "at": c.created_at,
            "text": c.text,
            "version": c.assessment.version,
        }
        for c in StepComment.objects.filter(
            assessment_id__in=version_chain(assessment), created_at__lte=decided_at
        )
        .select_related("author", "assessment")
        .order_by("created_at")
    ]
    release_record = ReleaseRecord.objects.filter(assessment_id=assessment.id).first()
    intruder_tests = list(
        MotivatedIntruderTest.objects.filter(
            assessment_id=assessment.id, created_at__lte=decided_at
        ).order_by("tested_on")
    )
    pem = organization_certificate(organization)

    small = risk.get("small_cells") or {}
    small_by_column: dict[str, int] = {}
    for cell in small.get("univariate") or []:
        for column in cell.get("columns") or []:
            small_by_column[column] = small_by_column.get(column, 0) + 1

    model = assessment.effective_release_model
    return {
        "organization": organization,
        "assessment": assessment,
        "dataset": dataset,
        "decision": decision,
        "decision_row": _decision_row(decision, decision),
        "generated_at": decided_at,
        "audit_anchor": {"sequence": decision.audit_sequence, "hash": decision.audit_hash},
        "audit_key_public": audit_key_is_public(),
        "snapshot": record.snapshot,
        "steps": STEPS,
        "step_refs": {s.slug: s.guideline for s in STEPS},
        "release_model": model,
        "release_model_label": label_for("release_model", model),
        "declared_release_model_label": label_for("release_model", assessment.release_model),
        "handled_as_semi_public": model != assessment.release_model,
        "threshold": threshold,
        "threshold_value": threshold_value,
        "risk": risk,
        "risk_before": applied.get("risk_before") or {},
        "risk_after": risk_after,
        "context": context,
        "context_value": context_value,
        "insider_table": _insider_table(context, assessment.threshold_profile),
        "threat_model": record.threat_model,
        "attack_rows": attack_rows(applied.get("attacks")),
        "overall": overall,
        "overall_after": overall_after,
        "passes_after": passes_after,
        "search": search,
        "alternatives": alternatives_rows(search or None, applied.get("levels")),
        "search_metric_label": label_for("metric", search.get("metric", ""), empty=""),
        # what the search may claim (its caps and lattice), the loss headline, and what
        # the missingness counts: the same words as Step 7, Step 8 and the review page
        "search_verdict": search_verdict(search),
        "loss_headline": loss_headline(applied, search),
        "missingness": missingness_figures(applied),
        "applied": applied,
        "utility": utility,
        "masking": masking_rows(
            applied.get("masking") or {},
            {m["column"]: m for m in masked_columns(applied)},
        ),
        "text_findings": identifier_findings(applied, record.deid_config),
        "column_findings": column_findings(applied, record.deid_config),
        "hierarchies": hierarchy_rows(record),
        "altered_variables": justification_rows(applied, assessment.variable_justifications),
        "release_transformations": release_transformations(applied),
        "value_lists": value_lists(record.assessment, record.hierarchies),
        "control_questions": dict(engine_context.CONTROLS),
        "motive_questions": {key: question for key, question, _ in engine_context.MOTIVES},
        "record_risks": record_risk_rows(applied.get("risk_before"), applied.get("risk_after")),
        "variables": variables,
        "variable_counts": {
            role: sum(1 for v in variables if v["role"] == role)
            for role in ("direct", "quasi", "sensitive", "other", "")
        },
        "classification_changes": change_count,
        "small_cells": small,
        "small_cells_by_column": sorted(small_by_column.items()),
        "attribute_disclosure": risk.get("attribute_disclosure") or [],
        "charts": charts,
        "assumptions": standing_assumptions(assessment, overall),
        "justifications": justification_items(assessment, variables),
        "decisions": [_decision_row(d, decision) for d in decisions],
        "submissions": [
            {"by": person_name(s.submitted_by), "at": s.created_at, "note": s.note}
            for s in submissions
        ],
        "comments": comments,
        "release_record": release_record,
        "intruder_tests": intruder_tests,
        "intruder": intruder_test_status(assessment, until=decided_at),
        "digests": {**record.digests(), **(decision.digests or {})},
        "release_tables": record.release_tables(),
        "certificate": signing.describe_certificate(pem),
        "timestamp_url": timestamp_url(organization),
        "people": {
            "created_by": person_name(assessment.created_by) if assessment.created_by_id else "—",
            "submitted_by": ", ".join(
                sorted({person_name(s.submitted_by) for s in submissions if s.submitted_by_id})
            )
            or "—",
            "reviewers": ", ".join(dict.fromkeys(person_name(d.reviewer) for d in decisions))
            or "—",
        },
        "step_title": STEP_TITLES,
        "by_slug": BY_SLUG,
    }


# --------------------------------------------------------------------------- render and sign


def _url_fetcher() -> Any:
    """WeasyPrint may read nothing from outside: only inline data: URIs are allowed."""
    from weasyprint.urls import URLFetcher

    return URLFetcher(allowed_protocols={"data"}, timeout=1)


def report_html(
    *, assessment: Assessment, decision: ReviewDecision, viewer: dict[str, str] | None = None
) -> str:
    """The report's HTML: what the PDF is made of. ``viewer`` (links to the signed PDF and
    the verify page) adds a banner for reading it in the browser; the PDF never has one."""
    context = report_context(assessment=assessment, decision=decision)
    return render_to_string("reports/step9.html", {**context, "viewer": viewer})


def report_render(*, assessment: Assessment, decision: ReviewDecision) -> bytes:
    """The report as PDF bytes (unsigned)."""
    from weasyprint import HTML

    html = report_html(assessment=assessment, decision=decision)
    base_url = str(settings.BASE_DIR / "templates" / "reports") + "/"
    document = HTML(string=html, base_url=base_url, url_fetcher=_url_fetcher())
    pdf = document.write_pdf()
    assert pdf is not None
    return bytes(pdf)
