"""Handlers for workers started by the worker-kill tests (DEIDWEB_TEST_JOB_HANDLERS): the real
ones, made to pause on their first attempt at a point where a worker killed there leaves work
half done. Later attempts run straight through."""

from __future__ import annotations

import time
from typing import Any

PAUSE_SECONDS = 120
PAUSED = "Paused for the test"


def _pause(context: Any) -> None:
    deadline = time.monotonic() + PAUSE_SECONDS
    while time.monotonic() < deadline:
        context.progress(50, PAUSED, force=True)
        time.sleep(0.5)


def slow_search(job: Any, context: Any) -> dict[str, Any]:
    from apps.assessments.search_job import assessment_search_handler

    if job.attempts == 1:
        _pause(context)
    return assessment_search_handler(job, context)


def slow_apply(job: Any, context: Any) -> dict[str, Any]:
    """The first attempt pauses once it has stored its first release file (before the result
    is swapped in): killed there, it leaves that file behind."""
    from apps.assessments.release_apply import assessment_apply_handler
    from apps.datasets import storage

    if job.attempts != 1:
        return assessment_apply_handler(job, context)
    real_store = storage.store

    def store_then_pause(local: Any, name: str) -> str:
        stored = real_store(local, name)
        _pause(context)
        return stored

    storage.store = store_then_pause
    try:
        return assessment_apply_handler(job, context)
    finally:
        storage.store = real_store
