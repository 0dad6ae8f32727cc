"""Requests the database could never store are refused at the door.

PostgreSQL text cannot hold the NUL character: a query parameter or form field carrying one
reaches a filter (``?organization=%00``) and the driver raises instead of matching nothing,
and some readers crash on it (the PKCS#12 reader panics on a NUL in the passphrase). Every
path goes through here, so no view has to remember it: the request gets a 400 naming the
field (JSON for the API, as every API error). The API's JSON and multipart fields are checked
by its serializer fields, and anything stored by the save guard (``apps.core.text_limits``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse


class RejectNulCharacters:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A quoted cookie may spell a NUL as an octal escape ("\000"), which Django's cookie
        # parser decodes: such a cookie is dropped, as if the client had none (before the
        # session middleware looks its key up).
        if any("\x00" in name or "\x00" in value for name, value in request.COOKIES.items()):
            request.COOKIES = {
                name: value
                for name, value in request.COOKIES.items()
                if "\x00" not in name and "\x00" not in value
            }
        field = _field_with_nul(request)
        if field is not None:
            return _refuse(request, field)
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        """A page's multipart form (an upload with its fields), once the URL is resolved:
        the upload handler then knows the organization's size limit, as it does when the
        CSRF check reads the same body next. The API's multipart fields are checked by its
        serializer fields, whose parsing must stay with the API view."""
        if (
            request.method == "POST"
            and request.content_type == "multipart/form-data"
            and not request.path.startswith("/api/")
        ):
            field = _nul_in(request.POST.lists())
            if field is not None:
                return _refuse(request, field)
        return None


def _refuse(request: HttpRequest, field: str) -> HttpResponse:
    message = f"'{field}' contains a NUL character, which no field accepts."
    if request.path.startswith("/api/"):
        return JsonResponse({"message": message, "extra": {"field": field}}, status=400)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _nul_in(items: Any) -> str | None:
    for name, values in items:
        if "\x00" in name or any("\x00" in v for v in values):
            return str(name).replace("\x00", "")
    return None


def _field_with_nul(request: HttpRequest) -> str | None:
    if "\x00" in request.path:
        return "path"
    field = _nul_in(request.GET.lists())
    if field is not None:
        return field
    # Form posts; multipart ones once the URL is resolved (process_view), so that the upload
    # handler finds the organization's size limit (apps.datasets.uploads).
    if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        return _nul_in(request.POST.lists())
    return None


class ApiErrorsAsJson:
    """Every error under ``/api/`` answers in the API's format, ``{"message", "extra"}``, in
    every settings module: Django's own 404 and 500 pages (its debug pages under local
    settings, which bypass ``handler404``), the 400 of a bad Host header, a 405 from a
    plain view. A client of the API never has to parse HTML; the traceback of a 500 stays
    in the server's log."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith("/api/")
            or "json" in response.get("Content-Type", "")
        ):
            return response
        message = _API_ERRORS.get(response.status_code, response.reason_phrase or "Error")
        answer = JsonResponse({"message": message, "extra": {}}, status=response.status_code)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if response.has_header(header):
                answer[header] = response[header]
        return answer


_API_ERRORS = {
    400: "Bad request.",
    401: "Authentication credentials were not provided.",
    403: "You do not have permission to perform this action.",
    404: "Not found.",
    405: "Method not allowed.",
    500: "Server error: the request could not be completed; it is in the server's log.",
}
