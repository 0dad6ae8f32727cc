"""One exception type for violations of the product's rules (HackSoft styleguide)."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A rule of the method or of the product was violated; ``message`` is shown to the user."""

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
