"""API plumbing shared by every app: error format and organization-scoped permissions."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import ApplicationError


def query_values(request: Request) -> dict[str, str]:
    """The query string as one value per name; a name given twice is a 400 naming it.

    Every query parameter of the API takes one value; QueryDict would quietly keep the last,
    so ``?offset=-1&offset=0`` would pass as 0."""
    repeated = [name for name, values in request.query_params.lists() if len(values) > 1]
    if repeated:
        raise exceptions.ValidationError({name: ["Give this parameter once."] for name in repeated})
    return request.query_params.dict()


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error leaves the API as ``{"message": ..., "extra": {...}}``."""
    if isinstance(exc, ApplicationError):
        return Response({"message": exc.message, "extra": exc.extra}, status=exc.status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "message_dict") else exc.messages
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = {"message": "Validation error", "extra": {"fields": response.data}}
    elif isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"message": str(response.data["detail"]), "extra": {}}
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404 for a path no view answers (``handler404``): JSON under ``/api/``."""
    if request.path.startswith("/api/"):
        return JsonResponse({"message": "Not found.", "extra": {}}, status=404)
    return defaults.page_not_found(request, exception)
