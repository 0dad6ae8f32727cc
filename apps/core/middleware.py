"""Requests the database could never store are refused at the door.

PostgreSQL text cannot hold the NUL character: a query parameter or form field carrying one
reaches a filter (``?organization=%00``) and the driver raises instead of matching nothing.
Every path goes through here, so no view has to remember it: the request gets a 400 naming
the field (JSON for the API, as every API error)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse


class RejectNulCharacters:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        field = _field_with_nul(request)
        if field is not None:
            message = f"'{field}' contains a NUL character, which no field accepts."
            if request.path.startswith("/api/"):
                return JsonResponse({"message": message, "extra": {"field": field}}, status=400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _field_with_nul(request: HttpRequest) -> str | None:
    if "\x00" in request.path:
        return "path"
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in v for v in values):
            return name.replace("\x00", "")
    # Form posts, but not multipart ones: reading those here would parse the upload before
    # the upload view has set its size limit (apps.datasets.uploads).
    if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        for name, values in request.POST.lists():
            if "\x00" in name or any("\x00" in v for v in values):
                return name.replace("\x00", "")
    return None
