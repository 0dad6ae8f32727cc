"""The ARX benchmark data lives in ../shared beside the project, not in the repository.

Where it is missing a developer's run skips the tests that need it; CI (and any run with
DEIDWEB_REQUIRE_SERVICES) fails instead, so the exactness checks on adult can never be
skipped silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def require(path: Path) -> None:
    if path.exists():
        return
    message = f"benchmark data not found at {path} (expected ../shared/data/arx beside the project)"
    if os.environ.get("CI") or os.environ.get("DEIDWEB_REQUIRE_SERVICES"):
        pytest.fail(message)
    pytest.skip(message)
