"""Steps 4 to 6's pages: the data risk (with the population, the adversary's power and the
dates of a person's events), the context risk and the overall risk."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.assessments import persons, population, services
from apps.assessments.configuration import DeidConfig
from apps.assessments.forms import ContextForm, PersonDatesForm, PopulationForm, PowerForm
from apps.assessments.models import Assessment
from apps.assessments.person_dates import assessment_set_dates, dates_state
from apps.assessments.presenters import person_risk_chart, population_chart, risk_charts
from apps.assessments.selectors import overall_risk, quasi_identifiers
from apps.assessments.threat_model_live import current_threat_model
from apps.assessments.views_base import _context, _go, _post_or_error, _saved, step_view
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.selectors import job_refresh


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
        columns=quasi_identifiers(assessment) if assessment.person_key else [],
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
