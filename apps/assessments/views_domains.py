"""The organization's named pseudonymisation domains (``apps.assessments.domains``): every
member sees them; an administrator defines one."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.assessments.domains import pseudonym_domain_create, pseudonym_domains
from apps.assessments.models import Assessment
from apps.core.errors import ApplicationError


@org_view()
def pseudonym_domains_view(request: HttpRequest, organization: Organization) -> HttpResponse:
    error = ""
    status = 200
    if request.method == "POST":
        try:
            domain = pseudonym_domain_create(
                organization=organization,
                user=user_of(request),
                name=request.POST.get("name", ""),
                description=request.POST.get("description", ""),
            )
        except ApplicationError as exc:
            error, status = exc.message, exc.status
        else:
            messages.success(request, f"Pseudonymisation domain '{domain.name}' defined.")
            return redirect("pseudonym-domains", org=organization.slug)
    domains = pseudonym_domains(organization)
    used = {d.id: Assessment.objects.filter(pseudonym_domain=d).count() for d in domains}
    return render(
        request,
        "assessments/pseudonym_domains.html",
        {
            "domains": [(d, used[d.id]) for d in domains],
            "can_define": membership_of(request).is_admin,
            "error": error,
            "posted": request.POST if error else {},
            "help_topic": "step-deidentify",
        },
        status=status,
    )
