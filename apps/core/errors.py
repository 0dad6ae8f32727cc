"""One exception type for violations of the product's rules (HackSoft styleguide)."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A rule of the method or of the product was violated; ``message`` is shown to the user.

    ``status`` is the HTTP status the API answers with: 400 for bad input (the default), 403
    when the caller's role does not allow it, 409 when the object's state does not (a frozen
    version)."""

    def __init__(
        self, message: str, extra: dict[str, Any] | None = None, *, status: int = 400
    ) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        self.status = status
