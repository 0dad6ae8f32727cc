"""Step 8's page: what the de-identification cost the analysis (the charts of each
variable's records per value, the loss, the attacks tried) and its acceptance."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import membership_of, user_of
from apps.accounts.models import Organization
from apps.assessments import services
from apps.assessments.attack_tests import attack_rows
from apps.assessments.forms import UtilityForm
from apps.assessments.hierarchies import class_threshold
from apps.assessments.models import Assessment
from apps.assessments.utility_charts import utility_charts
from apps.assessments.verdicts import loss_headline, missingness_figures
from apps.assessments.views_base import _context, _go, _post_or_error, _saved, step_view


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
