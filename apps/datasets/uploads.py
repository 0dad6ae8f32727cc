"""An upload handler that streams to disk and stops at the organization's size limit.

Django's own handlers would accept a file of any size and only then let a view reject it;
this one refuses as soon as the byte count passes the limit, so a 50 GB upload costs at most
the limit in disk and nothing in memory.
"""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest

from apps.accounts.models import Organization


class RefusedUploadRequest(HttpRequest):
    """For typing only: the handler notes a refusal on the request for the view to read."""

    upload_refused: dict[str, int]


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.received = 0
        self._limit: int | None = None

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = self._resolve_limit()
        return self._limit

    def _resolve_limit(self) -> int:
        # The body is parsed by the CSRF middleware before the view runs, so the handler
        # finds the organization's own limit from the resolved URL itself.
        match = getattr(self.request, "resolver_match", None)
        slug = match.kwargs.get("org") if match is not None else None
        if slug:
            own = Organization.objects.filter(slug=slug).values_list(
                "upload_limit_bytes", flat=True
            )
            if own and own[0]:
                return int(own[0])
        return int(settings.DEIDWEB_UPLOAD_MAX_BYTES)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self._refuse(self.received)
        return super().receive_data_chunk(raw_data, start)

    def _refuse(self, size: int) -> None:
        if self.request is not None:
            cast(RefusedUploadRequest, self.request).upload_refused = {
                "size": size,
                "limit": self.limit,
            }
        # Read and discard the rest of the body (nothing is stored) so the browser receives
        # the page that explains the refusal instead of a reset connection.
        raise StopUpload(connection_reset=False)
