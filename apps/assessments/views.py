"""One view per step; every POST saves to the database and redirects (no session wizard:
jobs and reviewers sit between the steps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.assessments import hooks, persons, population, services, steps
from apps.assessments.attack_tests import attack_rows
from apps.assessments.configuration import DeidConfig
from apps.assessments.domains import pseudonym_domains, release_and_domain_save
from apps.assessments.forms import (
    AssessmentCreateForm,
    ContextForm,
    PersonDatesForm,
    PersonsForm,
    PopulationForm,
    PowerForm,
    ReleaseForm,
    ThresholdForm,
    UtilityForm,
)
from apps.assessments.hierarchies import class_threshold
from apps.assessments.models import RELEASE_FIELDS, Assessment
from apps.assessments.person_dates import assessment_set_dates, dates_state
from apps.assessments.persons import assessment_set_persons, persons_state
from apps.assessments.presenters import person_risk_chart, population_chart, risk_charts
from apps.assessments.selectors import assessment_get, assessments_listed, overall_risk
from apps.assessments.threat_model_live import current_threat_model
from apps.assessments.threshold_profiles import not_offered, offered_profiles
from apps.assessments.utility_charts import utility_charts
from apps.assessments.verdicts import loss_headline, missingness_figures
from apps.classification.models import Variable
from apps.classification.selectors import classification_status
from apps.core.errors import ApplicationError
from apps.core.pagination import list_page
from apps.datasets.selectors import dataset_get
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.selectors import job_refresh


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


@org_view()
def assessment_list(request: HttpRequest, organization: Organization) -> HttpResponse:
    return render(
        request,
        "assessments/list.html",
        {
            "page": list_page(request, assessments_listed(organization=organization)),
            "help_topic": "assessments",
        },
    )


@org_view(edit=True)
def assessment_create(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    form = AssessmentCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            assessment = services.assessment_create(
                organization=organization,
                dataset=dataset,
                user=user_of(request),
                title=form.cleaned_data["title"],
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            return _go(organization, assessment, "release")
    return render(
        request,
        "assessments/create.html",
        {"form": form, "dataset": dataset, "help_topic": "assessments"},
    )


@org_view()
def assessment_detail(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    blockers = hooks.submission_blockers(assessment) if assessment.status == "draft" else []
    return render(
        request,
        "assessments/overview.html",
        _context(
            request,
            assessment,
            "overview",
            blockers=blockers,
            editable_versions=membership_of(request).can_edit,
        ),
    )


StepView = Callable[[HttpRequest, Organization, Assessment], HttpResponse]
STEP_VIEWS: dict[str, StepView] = {}


def step_view(slug: str) -> Callable[[StepView], StepView]:
    def register(view: StepView) -> StepView:
        STEP_VIEWS[slug] = view
        return view

    return register


@org_view()
def assessment_step(
    request: HttpRequest, organization: Organization, assessment_id: UUID, slug: str
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    view = STEP_VIEWS.get(slug)
    if view is None:
        raise Http404("No such step.")
    if request.method == "POST" and not membership_of(request).can_edit:
        messages.error(request, "Only analysts and administrators can change an assessment.")
        return _go(organization, assessment, slug)
    return view(request, organization, assessment)


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

    quasi = services.quasi_identifiers(assessment)
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


@step_view("data-risk")
def risk_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    population_form = PopulationForm(
        request.POST if "population_kind" in request.POST else None,
        initial=PopulationForm.initial_from(assessment.population or {}),
    )
    power_form = PowerForm(
        request.POST if "power" in request.POST else None,
        initial={"power": assessment.adversary_power},
    )
    dates_form = PersonDatesForm(
        request.POST if "dates_form" in request.POST else None,
        columns=services.quasi_identifiers(assessment) if assessment.person_key else [],
        initial=PersonDatesForm.initial_from(
            dates_state(DeidConfig.from_json(assessment.deid_config))
        ),
    )
    forms_ = (population_form, power_form, dates_form)
    valid = all(f.is_valid() or not f.is_bound for f in forms_)
    if request.method == "POST" and valid:
        try:
            if population_form.is_bound:
                population.assessment_set_population(
                    assessment=assessment, user=user_of(request), **population_form.choice()
                )
            if power_form.is_bound:
                persons.assessment_set_power(
                    assessment=assessment,
                    user=user_of(request),
                    power=power_form.cleaned_data["power"],
                )
            if dates_form.is_bound:
                assessment_set_dates(
                    assessment=assessment, user=user_of(request), settings=dates_form.settings()
                )
            services.assessment_start_risk(assessment=assessment, user=user_of(request))
            messages.success(request, "The risk measurement has started.")
        except ApplicationError as exc:
            messages.error(request, exc.message)
        return _go(organization, assessment, "data-risk")
    job = job_refresh(assessment.risk_job) if assessment.risk_job else None
    assessment.refresh_from_db()  # after the job: a finished job's result is already committed
    return render(
        request,
        "assessments/step_risk.html",
        _context(
            request,
            assessment,
            "data-risk",
            job=job,
            result=assessment.risk_result,
            charts=risk_charts(assessment.risk_result, overall_risk(assessment))
            if assessment.risk_result and "profile" in assessment.risk_result
            else None,
            overall=overall_risk(assessment),
            population_form=population_form,
            population_chart=population_chart((assessment.risk_result or {}).get("population")),
            no_population=population.NO_POPULATION,
            power_form=power_form,
            dates_form=dates_form,
            power_chart=person_risk_chart(assessment.risk_result),
        ),
        status=400 if any(f.errors for f in forms_) else 200,
    )


@step_view("context-risk")
def context_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:

    model = assessment.effective_release_model
    threat = current_threat_model(assessment)
    columns = list(
        Variable.objects.filter(dataset=assessment.dataset)
        .order_by("position")
        .values_list("name", flat=True)
    )
    form = ContextForm(
        request.POST or None,
        non_public=model == "non_public",
        columns=columns,
        initial={
            **ContextForm.initial_from(assessment.context_answers),
            "known_columns": threat["known_columns"],
            "target_in_sample": threat["target_in_sample"],
        },
    )
    if request.method == "POST" and form.is_valid():
        stale = _post_or_error(
            request,
            form,
            lambda: services.assessment_set_context(
                assessment=assessment,
                answers=form.answers(),
                user=user_of(request),
                known_columns=list(form.cleaned_data["known_columns"]),
                target_in_sample=form.cleaned_data["target_in_sample"],
            ),
        )
        if stale is not None:
            _saved(request, stale)
            return _go(organization, assessment, "context-risk")
    profile = engine_threshold.get_profile(assessment.threshold_profile)
    return render(
        request,
        "assessments/step_context.html",
        _context(
            request,
            assessment,
            "context-risk",
            form=form,
            model=model,
            profile=profile,
            result=assessment.context_result,
            threat=threat,
            controls_rule=engine_context.CONTROLS_RULE,
            motives_rule=engine_context.MOTIVES_RULE,
            breach_source=engine_context.DEFAULT_BREACH_SOURCE,
            acquaintance_source=engine_context.ACQUAINTANCE_SOURCE,
        ),
        status=400 if form.errors else 200,
    )


@step_view("overall-risk")
def overall_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    return render(
        request,
        "assessments/step_overall.html",
        _context(request, assessment, "overall-risk", overall=overall_risk(assessment)),
    )


@step_view("utility")
def utility_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:

    form = UtilityForm(request.POST or None, initial={"note": assessment.utility_note})
    if request.method == "POST" and form.is_valid():
        stale = _post_or_error(
            request,
            form,
            lambda: services.assessment_accept_utility(
                assessment=assessment, note=form.cleaned_data["note"], user=user_of(request)
            ),
        )
        if stale is not None:
            _saved(request, stale)
            return _go(organization, assessment)
    result = assessment.apply_result
    # A synthetic-data or table release (issue 28) has figures of its own, not the records'.
    records = result if result and not result.get("form") else None
    return render(
        request,
        "assessments/step_utility.html",
        _context(
            request,
            assessment,
            "utility",
            form=form,
            result=result,
            charts=utility_charts(
                records,
                hide_below=None
                if membership_of(request).can_see_raw_values
                else class_threshold(assessment),
            )
            if records
            else None,
            search=assessment.search_result,
            headline=loss_headline(records, assessment.search_result) if records else None,
            missingness=missingness_figures(records) if records else [],
            attack_rows=attack_rows((result or {}).get("attacks")),
        ),
        status=400 if form.errors else 200,
    )
