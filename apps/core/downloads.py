"""Responses that carry data, keys, reports or releases out of deidweb.

Each one tells every cache on the way — the browser's disk cache, a proxy, a shared
terminal's history — to keep no copy (``Cache-Control: no-store``, OWASP ASVS 8.2.1): a
de-identified file or a linking table must exist only where its recipient saved it, and a
later user of the same machine must not find it in the browser's cache.
"""

from __future__ import annotations

from typing import IO, TypeVar

from django.http import FileResponse
from django.http.response import HttpResponseBase
from django.utils.cache import add_never_cache_headers

Response = TypeVar("Response", bound=HttpResponseBase)


def no_store(response: Response) -> Response:
    """``Cache-Control: max-age=0, no-cache, no-store, must-revalidate, private`` and an
    ``Expires`` in the past (Django's ``never_cache``), on any response."""
    add_never_cache_headers(response)
    return response


def file_download(
    handle: IO[bytes], *, filename: str, content_type: str | None = None
) -> FileResponse:
    """A file offered as an attachment, never cached."""
    if content_type is None:
        response = FileResponse(handle, as_attachment=True, filename=filename)
    else:
        response = FileResponse(
            handle, as_attachment=True, filename=filename, content_type=content_type
        )
    return no_store(response)
