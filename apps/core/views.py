from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

from apps.core.help import HELP_TOPICS


def help_page(request: HttpRequest, topic: str = "start") -> HttpResponse:
    if topic not in HELP_TOPICS:
        raise Http404("No such help page.")
    try:
        get_template(f"help/{topic}.html")
    except TemplateDoesNotExist:
        raise Http404("No such help page.") from None
    return render(request, f"help/{topic}.html", {"topics": HELP_TOPICS, "topic": topic})


def health(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and the compose healthcheck: the database answers."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
