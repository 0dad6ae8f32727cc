"""The comparison page of Step 7's alternatives: two of the search's alternatives side by
side (``?pick=i&pick=j``), what each releases per quasi-identifier as a bar chart, with its
risk and loss (the figures from ``apps.assessments.compare.alternatives_compare``). It
reads the stored search result and changes nothing; the Step 7 page that lists the
alternatives is ``views_deidentify``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import org_view
from apps.accounts.models import Organization
from apps.assessments.compare import alternatives_compare
from apps.assessments.presenters import chart_html
from apps.assessments.selectors import assessment_get
from apps.assessments.views_base import _context
from apps.core.charts import bar_chart
from apps.core.errors import ApplicationError


@org_view()
def alternatives_compare_view(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    """Two alternatives side by side (``?pick=i&pick=j``): what each releases per
    quasi-identifier, and its risk and loss."""
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    picks = request.GET.getlist("pick")
    comparison: dict[str, Any] = {}
    error = ""
    try:
        if len(picks) != 2:
            raise ApplicationError("Tick exactly two alternatives to compare them.", status=400)
        try:
            first, second = (int(p) for p in picks)
        except ValueError:
            raise ApplicationError("Pick alternatives by their number.", status=400) from None
        comparison = alternatives_compare(assessment=assessment, first=first, second=second)
    except ApplicationError as exc:
        error = exc.message
    letters = ("A", "B")
    for variable in comparison.get("variables", []):
        for letter, side in zip(letters, variable["sides"], strict=True):
            side["chart"] = _chart_html(
                bar_chart(
                    f"{variable['column']} in alternative {letter}: {side['words']}",
                    [label for label, _ in side["values"]],
                    [n for _, n in side["values"]],
                    x_label=f"{variable['column']} as released",
                    y_label=f"{side.get('unit', 'records')} released",
                )
            )
    return render(
        request,
        "assessments/compare.html",
        _context(
            request,
            assessment,
            "deidentify",
            comparison=comparison,
            letters=letters,
            error=error,
        ),
        status=400 if error else 200,
    )


def _chart_html(chart: Any) -> Any:
    return chart_html(chart)
