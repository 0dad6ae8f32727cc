"""The cluster page (issue #27): the organization's Spark connection (administrators set
it; the address is never shown back) and registering a cluster table as a data set."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.datasets.cluster import cluster_dataset_register
from apps.datasets.cluster_connection import (
    spark_connection_clear,
    spark_connection_set,
    spark_connection_status,
)


class ConnectionForm(forms.Form):
    remote = forms.CharField(
        label="Spark Connect address",
        required=False,
        max_length=2000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="sc://HOST:15002, with /;token=… when the server asks for one. It is sealed "
        "and never shown again; leave empty to keep the stored one.",
    )
    release_prefix = forms.CharField(
        label="Release area",
        max_length=500,
        help_text="Releases are written only below this path of the cluster, e.g. "
        "s3a://lake/deidentified or /lake/releases.",
    )


class ClusterTableForm(forms.Form):
    source = forms.CharField(
        label="Table or path",
        max_length=500,
        help_text="table:NAME (catalog table), delta:PATH, or a Parquet file or folder the "
        "cluster reads. deidweb keeps no copy of it.",
    )
    name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


@org_view()
def cluster_page(request: HttpRequest, organization: Organization) -> HttpResponse:
    membership = membership_of(request)
    connection_form = ConnectionForm(
        initial={"release_prefix": spark_connection_status(organization)["release_prefix"]}
    )
    table_form = ClusterTableForm()
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action in ("connection", "clear") and not membership.is_admin:
                raise PermissionDenied("Only administrators manage the Spark connection.")
            if action == "connection":
                connection_form = ConnectionForm(request.POST)
                if connection_form.is_valid():
                    spark_connection_set(
                        organization=organization,
                        user=user_of(request),
                        remote=connection_form.cleaned_data["remote"],
                        release_prefix=connection_form.cleaned_data["release_prefix"],
                    )
                    messages.success(request, "Spark connection saved.")
                    return redirect("cluster", org=organization.slug)
            elif action == "clear":
                spark_connection_clear(organization=organization, user=user_of(request))
                messages.success(request, "Spark connection removed.")
                return redirect("cluster", org=organization.slug)
            elif action == "table":
                if not membership.can_edit:
                    raise PermissionDenied("Only analysts and administrators register data sets.")
                table_form = ClusterTableForm(request.POST)
                if table_form.is_valid():
                    dataset = cluster_dataset_register(
                        organization=organization, user=user_of(request), **table_form.cleaned_data
                    )
                    return redirect("dataset-detail", org=organization.slug, dataset_id=dataset.id)
            else:
                raise ApplicationError("Unknown action.")
        except ApplicationError as exc:
            messages.error(request, exc.message)
    return render(
        request,
        "datasets/cluster.html",
        {
            "status": spark_connection_status(organization),
            "connection_form": connection_form,
            "table_form": table_form,
            "can_change": membership.is_admin,
            "can_register": membership.can_edit,
            "help_topic": "datasets",
        },
    )
