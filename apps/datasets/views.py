from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.core.downloads import no_store
from apps.core.errors import ApplicationError
from apps.core.pagination import list_page
from apps.datasets import hooks
from apps.datasets.forms import DatasetTablesUploadForm, DatasetUploadForm
from apps.datasets.models import DatasetStatus
from apps.datasets.selectors import dataset_get, datasets_listed
from apps.datasets.services import dataset_delete, dataset_preview, dataset_upload, upload_limit_for
from apps.datasets.table_upload import dataset_upload_tables
from apps.jobs.selectors import job_refresh


@org_view()
def dataset_list(request: HttpRequest, organization: Organization) -> HttpResponse:
    return render(
        request,
        "datasets/list.html",
        {
            "page": list_page(request, datasets_listed(organization=organization)),
            "help_topic": "datasets",
        },
    )


def _refused_message(refused: dict[str, int]) -> str:
    from django.template.defaultfilters import filesizeformat

    return (
        f"The file is larger than this organization's upload limit of "
        f"{filesizeformat(refused['limit'])}; nothing was saved."
    )


@org_view(edit=True)
def dataset_upload_view(request: HttpRequest, organization: Organization) -> HttpResponse:
    limit = upload_limit_for(organization)
    if request.method == "POST":
        form = DatasetUploadForm(request.POST, request.FILES)
        refused = getattr(request, "upload_refused", None)  # set while parsing the body
        if refused:
            form = DatasetUploadForm(initial=request.POST.dict())
            refused_message = _refused_message(refused)
        elif form.is_valid():
            try:
                dataset = dataset_upload(
                    organization=organization,
                    user=user_of(request),
                    upload=form.cleaned_data["file"],
                    name=form.cleaned_data["name"],
                    description=form.cleaned_data["description"],
                    delimiter=form.cleaned_data["delimiter"],
                    encoding=form.cleaned_data["encoding"],
                    sheet=form.cleaned_data["sheet"],
                )
            except ApplicationError as exc:
                form.add_error("file", exc.message)
            else:
                messages.success(
                    request, f"'{dataset.name}' was uploaded; reading and profiling have started."
                )
                return redirect("dataset-detail", org=organization.slug, dataset_id=dataset.id)
        return render(
            request,
            "datasets/upload.html",
            {
                "form": form,
                "limit": limit,
                "help_topic": "upload",
                "refused_message": refused_message if refused else "",
            },
            status=413 if refused else 400,
        )
    return render(
        request,
        "datasets/upload.html",
        {"form": DatasetUploadForm(), "limit": limit, "help_topic": "upload"},
    )


@org_view(edit=True)
def dataset_upload_tables_view(request: HttpRequest, organization: Organization) -> HttpResponse:
    """A person table and one or more event tables, linked by a person key."""
    limit = upload_limit_for(organization)
    context: dict[str, object] = {"limit": limit, "help_topic": "upload"}
    if request.method != "POST":
        return render(
            request, "datasets/upload_tables.html", {**context, "form": DatasetTablesUploadForm()}
        )
    form = DatasetTablesUploadForm(request.POST, request.FILES)
    refused = getattr(request, "upload_refused", None)  # set while parsing the body
    if refused:
        form = DatasetTablesUploadForm(initial=request.POST.dict())
        context["refused_message"] = _refused_message(refused)
    elif form.is_valid():
        try:
            dataset = dataset_upload_tables(
                organization=organization,
                user=user_of(request),
                persons=form.cleaned_data["persons"],
                events=form.cleaned_data["events"],
                person_key=form.cleaned_data["person_key"],
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
            )
        except ApplicationError as exc:
            field = exc.extra.get("field")
            form.add_error(field if field in form.fields else None, exc.message)
        else:
            messages.success(
                request,
                f"'{dataset.name}' was uploaded; its tables are being read, checked and joined.",
            )
            return redirect("dataset-detail", org=organization.slug, dataset_id=dataset.id)
    return render(
        request,
        "datasets/upload_tables.html",
        {**context, "form": form},
        status=413 if refused else 400,
    )


@org_view()
def dataset_detail(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    job = job_refresh(dataset.profile_job) if dataset.profile_job else None
    working = (DatasetStatus.CONVERTING, DatasetStatus.PROFILING)
    if dataset.status in working and job is not None and job.is_finished:
        # Its worker was lost: shown as failed, as the job is (a read does not write; the
        # next worker or a retry marks both).
        dataset.status = DatasetStatus.FAILED
    if dataset.profile and membership_of(request).can_see_raw_values:
        hooks.raw_values_shown.send(dataset=dataset, user=user_of(request), via="data set page")
    return render(
        request,
        "datasets/detail.html",
        {
            "dataset": dataset,
            "job": job,
            "columns": (dataset.profile or {}).get("columns", []),
            "tables": (dataset.table_structure or {}).get("tables", []),
            "help_topic": "profile",
        },
    )


@org_view(edit=True)
def dataset_preview_view(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    frame = dataset_preview(dataset=dataset, user=user_of(request), limit=100)
    return no_store(
        render(
            request,
            "datasets/preview.html",
            {
                "dataset": dataset,
                "columns": frame.columns,
                "rows": frame.rows(),
                "help_topic": "profile",
            },
        )
    )


@require_POST
@org_view(edit=True)
def dataset_delete_view(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    name = dataset.name
    try:
        dataset_delete(dataset=dataset, user=user_of(request))
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("dataset-detail", org=organization.slug, dataset_id=dataset.id)
    messages.success(request, f"'{name}' and its files were deleted.")
    return redirect("dataset-list", org=organization.slug)
