"""What the assessment's pages share: a step page's context (``_context``), the redirect
to a step or to the overview (``_go``), the message after a save (``_saved``), a service
run on a form (``_post_or_error``), and the registry of the step views by slug
(``step_view``, ``STEP_VIEWS``) that ``views.assessment_step`` dispatches to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from apps.accounts.decorators import membership_of
from apps.accounts.models import Organization
from apps.assessments import steps
from apps.assessments.models import Assessment
from apps.core.errors import ApplicationError


def _context(
    request: HttpRequest, assessment: Assessment, slug: str, **extra: Any
) -> dict[str, Any]:
    states = steps.step_states(assessment)
    current = steps.BY_SLUG.get(slug)
    return {
        "assessment": assessment,
        "states": states,
        "step": current,
        "step_state": next((s for s in states if s["step"].slug == slug), None),
        "editable": membership_of(request).can_edit and assessment.status == "draft",
        "help_topic": ("classification" if slug == "classification" else f"step-{slug}")
        if current
        else "assessments",
        **extra,
    }


def _go(
    organization: Organization, assessment: Assessment, slug: str | None = None
) -> HttpResponse:
    if slug is None:
        return redirect("assessment-detail", org=organization.slug, assessment_id=assessment.id)
    return redirect(
        "assessment-step", org=organization.slug, assessment_id=assessment.id, slug=slug
    )


def _saved(request: HttpRequest, stale: list[str]) -> None:
    if stale:
        titles = ", ".join(steps.BY_SLUG[s].title for s in stale)
        messages.warning(
            request, f"Saved. These results depend on it and must be recomputed: {titles}."
        )
    else:
        messages.success(request, "Saved.")


StepView = Callable[[HttpRequest, Organization, Assessment], HttpResponse]
STEP_VIEWS: dict[str, StepView] = {}


def step_view(slug: str) -> Callable[[StepView], StepView]:
    def register(view: StepView) -> StepView:
        STEP_VIEWS[slug] = view
        return view

    return register


def _post_or_error(
    request: HttpRequest, form: forms.BaseForm, action: Callable[[], list[str]]
) -> list[str] | None:
    """Run a service; a rule violation is shown on the form (on its field when it names one)."""
    try:
        return action()
    except ApplicationError as exc:
        field = exc.extra.get("field")
        form.add_error(field if field in form.fields else None, exc.message)
        return None
