from __future__ import annotations

import datetime as dt
from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.assessments import steps
from apps.assessments.attack_tests import attack_rows
from apps.assessments.freetext import identifier_findings
from apps.assessments.hierarchies import class_threshold, value_lists
from apps.assessments.models import Assessment, AssessmentStatus
from apps.assessments.presenters import class_size_before_after, pareto_chart, risk_charts
from apps.assessments.release_columns import column_findings, masked_columns
from apps.assessments.selectors import assessment_get
from apps.assessments.solution_words import applied_solution
from apps.assessments.utility_charts import distribution_charts
from apps.core.errors import ApplicationError
from apps.reviews import decisions as review_decisions  # `decisions` is the page's list
from apps.reviews import hooks, intruder_tests, submissions
from apps.reviews.selectors import comments_of_versions, intruder_test_status, review_queue_for
from apps.reviews.snapshot import assessment_record


@org_view(review=True)
def review_queue(request: HttpRequest, organization: Organization) -> HttpResponse:
    decided = Assessment.objects.filter(
        organization=organization, status__in=[AssessmentStatus.APPROVED, AssessmentStatus.REJECTED]
    ).order_by("-decided_at")[:20]
    return render(
        request,
        "reviews/queue.html",
        {
            "queue": review_queue_for(organization=organization, user=request.user),
            "decided": decided,
            "help_topic": "reviews",
        },
    )


@org_view()
def assessment_review(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    membership = membership_of(request)
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "comment":
                review_decisions.step_comment_add(
                    assessment=assessment,
                    author=user_of(request),
                    step=request.POST.get("step", "general"),
                    text=request.POST.get("text", ""),
                )
                messages.success(request, "Comment added.")
            elif action == "report":
                hooks.report_prepare_again(assessment=assessment, user=user_of(request))
                messages.success(request, "The signed report is being prepared.")
            elif action == "decide":
                decision = review_decisions.review_decide(
                    assessment=assessment,
                    reviewer=user_of(request),
                    decision=request.POST.get("decision", ""),
                    reasons=request.POST.get("reasons", ""),
                )
                messages.success(
                    request,
                    "Decision recorded."
                    if decision.final
                    else "Approval recorded; a second reviewer must approve too.",
                )
            else:
                messages.error(request, "Unknown action.")
        except ApplicationError as exc:
            messages.error(request, exc.message)
        return redirect("assessment-review", org=organization.slug, assessment_id=assessment.id)
    submission = assessment.submissions.order_by("-created_at").first()
    try:
        record = assessment_record(assessment)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("assessment-detail", org=organization.slug, assessment_id=assessment.id)
    frozen = record.assessment
    overall = record.overall
    applied = frozen.apply_result or {}
    search = frozen.search_result
    decisions = list(assessment.decisions.select_related("reviewer", "report"))
    return render(
        request,
        "reviews/review.html",
        {
            "assessment": frozen,
            "record": record,
            "states": steps.step_states(frozen),
            "submission": submission,
            "overall": overall,
            "variables": record.variables,
            "solution": applied_solution(record),
            "value_lists": value_lists(frozen, record.hierarchies),
            "findings": identifier_findings(applied, record.deid_config),
            "column_findings": column_findings(applied, record.deid_config),
            "masked_columns": masked_columns(applied),
            # (risk counted in persons has no record-level class profile to chart)
            "risk_before_charts": risk_charts(frozen.risk_result, overall)
            if frozen.risk_result and frozen.risk_result.get("profile")
            else None,
            "class_sizes": class_size_before_after(
                applied.get("risk_before"), applied.get("risk_after")
            ),
            "pareto": pareto_chart(search, applied.get("levels")) if search else None,
            "distributions": distribution_charts(
                applied.get("distributions", []), hide_below=class_threshold(frozen)
            ),
            "attack_rows": attack_rows(applied.get("attacks")),
            "intruder": intruder_test_status(assessment),
            "comments": comments_of_versions(assessment),
            "decisions": decisions,
            "missing_reports": [d for d in decisions if d.final and not hasattr(d, "report")],
            "can_decide": (
                membership.can_review
                and assessment.status == AssessmentStatus.SUBMITTED
                and submission is not None
                and submission.submitted_by_id != request.user.pk
                and not assessment.decisions.filter(
                    submission=submission, reviewer=user_of(request)
                ).exists()
            ),
            "is_submitter": submission is not None
            and submission.submitted_by_id == request.user.pk,
            "step_choices": [(s.slug, f"Step {s.number}: {s.title}") for s in steps.STEPS],
            "help_topic": "reviews",
        },
    )


@require_POST
@org_view(edit=True)
def assessment_submit(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        submissions.assessment_submit(
            assessment=assessment,
            user=user_of(request),
            note=request.POST.get("note", ""),
            intruder_waiver=request.POST.get("intruder_waiver", ""),
        )
        messages.success(request, "Submitted for review; the reviewers were notified.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("assessment-detail", org=organization.slug, assessment_id=assessment.id)


@require_POST
@org_view(edit=True)
def assessment_revise(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        new = review_decisions.assessment_revise(assessment=assessment, user=user_of(request))
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("assessment-detail", org=organization.slug, assessment_id=assessment.id)
    messages.success(
        request, f"Version {new.version} created; version {assessment.version} stays as it was."
    )
    return redirect("assessment-detail", org=organization.slug, assessment_id=new.id)


@require_POST
@org_view(edit=True)
def intruder_test(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        tested_on = dt.date.fromisoformat(request.POST.get("tested_on", ""))
        intruder_tests.intruder_test_record(
            assessment=assessment,
            user=user_of(request),
            tester=request.POST.get("tester", ""),
            tested_on=tested_on,
            sources=request.POST.get("sources", ""),
            method=request.POST.get("method", ""),
            outcome=request.POST.get("outcome", ""),
            re_identified=int(request.POST.get("re_identified") or 0),
        )
        messages.success(request, "Motivated-intruder test recorded.")
    except ValueError:
        messages.error(
            request, "Give the test date as YYYY-MM-DD and the re-identified count as a number."
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("assessment-detail", org=organization.slug, assessment_id=assessment.id)
