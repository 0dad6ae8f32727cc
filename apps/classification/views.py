from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.classification.models import VariableRole
from apps.classification.selectors import (
    classification_changes_of,
    classification_status,
    suggestion_evidence_shown,
    variables_of,
    variables_to_decide,
)
from apps.classification.services import (
    RoleDecision,
    dataset_set_release_model,
    identifier_values_shown,
    variables_accept_suggestions,
    variables_classify,
)
from apps.core.errors import ApplicationError
from apps.datasets.models import Dataset, ReleaseModel
from apps.datasets.selectors import dataset_get


def _page(
    request: HttpRequest,
    dataset: Dataset,
    *,
    status: int = 200,
    errors: dict[str, str] | None = None,
    posted: dict[str, dict[str, str]] | None = None,
) -> HttpResponse:
    variables = list(variables_of(dataset=dataset))
    raw_values = membership_of(request).can_see_raw_values
    for variable in variables:
        variable.evidence_shown = suggestion_evidence_shown(  # type: ignore[attr-defined]
            variable=variable, raw_values=raw_values
        )
        entry = (posted or {}).get(str(variable.id))
        # A row a person must decide is not preselected, so saving the form leaves it
        # undecided; the reason box never holds text the person did not type.
        preselected = variable.role or (
            variable.suggested_role if variable.confident_suggestion else ""
        )
        variable.form_role = entry["role"] if entry else preselected  # type: ignore[attr-defined]
        variable.form_reason = entry["reason"] if entry else ""  # type: ignore[attr-defined]
        variable.form_keep = entry["keep"] == "on" if entry else variable.keep_for_analysis  # type: ignore[attr-defined]
        variable.form_error = (errors or {}).get(variable.name, "")  # type: ignore[attr-defined]
    if raw_values:
        identifier_values_shown(dataset=dataset, user=user_of(request), via="classification page")
    return render(
        request,
        "classification/classify.html",
        {
            "dataset": dataset,
            "variables": variables,
            "roles": VariableRole.choices,
            "release_models": ReleaseModel.choices,
            "status": classification_status(dataset=dataset),
            "changes": classification_changes_of(dataset=dataset)[:50],
            "help_topic": "classification",
        },
        status=status,
    )


@org_view()
def classify(request: HttpRequest, organization: Organization, dataset_id: UUID) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    if request.method != "POST":
        return _page(request, dataset)
    if not membership_of(request).can_edit:
        return _page(request, dataset, status=403)
    posted = {
        str(v.id): {
            "role": request.POST.get(f"role-{v.id}", ""),
            "reason": request.POST.get(f"reason-{v.id}", ""),
            "keep": request.POST.get(f"keep-{v.id}", ""),
        }
        for v in variables_of(dataset=dataset)
    }
    release_model = request.POST.get("intended_release_model", "")
    if release_model in ReleaseModel.values or release_model == "":
        dataset_set_release_model(
            dataset=dataset, user=user_of(request), release_model=release_model
        )
    decisions = [
        RoleDecision(
            variable_id=variable_id,
            role=entry["role"],
            reason=entry["reason"],
            keep_for_analysis=entry["keep"] == "on",
        )
        for variable_id, entry in posted.items()
        if entry["role"]
    ]
    try:
        changes = variables_classify(dataset=dataset, user=user_of(request), decisions=decisions)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        found = exc.extra.get("errors")
        errors = (
            {str(c): str(m) for c, m in found.items()}
            if isinstance(found, dict)
            else {str(exc.extra.get("column", "")): exc.message}
        )
        return _page(request, dataset, status=400, errors=errors, posted=posted)
    messages.success(request, f"Classification saved ({len(changes)} change(s) recorded).")
    return redirect("dataset-classify", org=organization.slug, dataset_id=dataset.id)


@require_POST
@org_view(edit=True)
def accept_suggestions(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    changes = variables_accept_suggestions(dataset=dataset, user=user_of(request))
    left = variables_to_decide(dataset=dataset)
    message = f"{len(changes)} suggestion(s) confirmed as suggested; review every row."
    if left:
        message += (
            f" {len(left)} left for you to decide, row by row with a reason (low confidence "
            f"or free text to read): {', '.join(left)}."
        )
    messages.success(request, message)
    return redirect("dataset-classify", org=organization.slug, dataset_id=dataset.id)
