"""Steps 1 to 3's pages: the release model (with its pseudonymisation domain), the
classification (the roles are the data set's; whether the data holds several rows per
person is the assessment's) and the risk threshold."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.assessments import persons, services
from apps.assessments.domains import pseudonym_domains, release_and_domain_save
from apps.assessments.forms import PersonsForm, ReleaseForm, ThresholdForm
from apps.assessments.models import RELEASE_FIELDS, Assessment
from apps.assessments.persons import assessment_set_persons, persons_state
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.threshold_profiles import not_offered, offered_profiles
from apps.assessments.views_base import _context, _go, _post_or_error, _saved, step_view
from apps.classification.selectors import classification_status
from apps.core.errors import ApplicationError
from apps.engine import threshold as engine_threshold


@step_view("release")
def release_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    initial = {f: getattr(assessment, f) for f in RELEASE_FIELDS}
    threat = assessment.threat_model or {}
    initial["recipients"] = "\n".join(threat.get("recipients") or [])
    domain = threat.get("pseudonymisation") or {}
    initial["pseudonym_linkers"] = domain.get("who_can_link", "")
    initial["pseudonym_key_kept"] = domain.get("key_kept", "")
    initial["pseudonym_domain"] = str(assessment.pseudonym_domain_id or "")
    form = ReleaseForm(
        request.POST or None, initial=initial, domains=pseudonym_domains(organization)
    )
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        chosen_domain = data.pop("pseudonym_domain") or None
        stale = _post_or_error(
            request,
            form,
            lambda: release_and_domain_save(
                assessment=assessment, user=user_of(request), domain_id=chosen_domain, **data
            ),
        )
        if stale is not None:
            _saved(request, stale)
            return _go(organization, assessment, "release")
    return render(
        request,
        "assessments/step_release.html",
        _context(request, assessment, "release", form=form),
        status=400 if form.errors else 200,
    )


@step_view("classification")
def classification_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    """Step 2: the columns' roles (kept with the data set, on its own page) and, for this
    assessment, whether the data holds several rows per person."""

    quasi = quasi_identifiers(assessment)
    state_for = request.GET.get("person_key") if request.method == "GET" else None
    status = 200
    form: PersonsForm | None = None
    if request.method == "POST":
        posted = PersonsForm(
            request.POST, candidates=persons.key_candidates(assessment), quasi=quasi
        )
        form = posted
        if posted.is_valid():
            chosen = posted.cleaned_data["person_key"]
            stale = _post_or_error(
                request,
                posted,
                lambda: assessment_set_persons(
                    assessment=assessment,
                    user=user_of(request),
                    person_key=chosen,
                    levels=posted.levels(),
                ),
            )
            if stale is not None:
                if chosen and chosen != posted.cleaned_data["levels_for"]:
                    messages.info(
                        request, "Levels suggested from the data for the new key: review them."
                    )
                _saved(request, stale)
                return _go(organization, assessment, "classification")
        status = 400
        state_for = str(posted.data.get("person_key", ""))
    try:
        state = persons_state(assessment, person_key=state_for)
    except ApplicationError as exc:  # a key without a value on every row, …
        messages.error(request, exc.message)
        state = persons_state(assessment, person_key=state_for, suggest=False)
    if form is None:
        form = PersonsForm(
            initial={
                "person_key": state["person_key"],
                "levels_for": state["person_key"],
                **{f"level_{c}": level for c, level in state["levels"].items()},
            },
            candidates=state["candidates"],
            quasi=quasi,
        )
    suggested = {s["column"]: s for s in state["suggestions"]}
    return render(
        request,
        "assessments/step_classification.html",
        _context(
            request,
            assessment,
            "classification",
            form=form,
            persons=state,
            level_rows=[(field, suggested.get(field.label)) for field in form.level_fields()],
            classification=classification_status(dataset=assessment.dataset),
        ),
        status=status,
    )


@step_view("threshold")
def threshold_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    initial: dict[str, Any] = {
        "profile": assessment.threshold_profile,
        "mode": assessment.threshold_mode,
        "preset": assessment.threshold_preset,
        "custom_value": assessment.threshold_custom_value,
        "justification": assessment.threshold_justification,
        **{f"q_{k}": v for k, v in assessment.threshold_answers.items()},
    }
    model = assessment.effective_release_model
    form = ThresholdForm(request.POST or None, initial=initial, release_model=model)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        stale = _post_or_error(
            request,
            form,
            lambda: services.assessment_set_threshold(
                assessment=assessment,
                user=user_of(request),
                profile=data["profile"],
                answers=form.answers(),
                mode=data["mode"],
                preset=data["preset"],
                custom_value=data["custom_value"],
                justification=data["justification"],
            ),
        )
        if stale is not None:
            _saved(request, stale)
            return _go(organization, assessment, "threshold")

    return render(
        request,
        "assessments/step_threshold.html",
        _context(
            request,
            assessment,
            "threshold",
            form=form,
            model=model,
            profiles=offered_profiles(model),
            not_offered=not_offered(model) if model else [],
            rule=engine_threshold.INVASION_RULE,
            presets=engine_threshold.PRESETS,
        ),
        status=400 if form.errors else 200,
    )
