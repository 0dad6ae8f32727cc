"""The Celery application, configured from Django settings (``CELERY_*``)."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deidweb.settings.local")

app = Celery("deidweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect  # type: ignore[untyped-decorator]  # celery has no type hints
def compile_kernels_in_the_background(**_: Any) -> None:
    """A worker that starts on a cold numba cache (a fresh install) starts `deid warmup`
    in the background instead of waiting for it: a search that comes first compiles what
    it needs, the others load the cache (apps/engine/cli_warmup.py)."""
    from apps.engine.cli_warmup import is_warm

    if is_warm():
        return
    from django.conf import settings

    log = Path(settings.VAR_DIR) / "log"
    log.mkdir(parents=True, exist_ok=True)
    with open(log / "warmup.log", "ab") as out:
        subprocess.Popen(  # noqa: S603 (this interpreter, a fixed command)
            [sys.executable, "-m", "apps.engine", "warmup"],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[1],
            start_new_session=True,
        )


@worker_process_init.connect  # type: ignore[untyped-decorator]  # celery has no type hints
def load_compiled_code_at_start(**_: Any) -> None:
    """Each worker process loads the search's compiled kernels as it starts, in a thread, so
    that no user's first search pays for it (a handler here must not block the process's
    start). Only the kernels (encoding's and look-ups' loaded from numba's cache without a
    call): the worker process forks each job's process, which could not use a polars
    thread pool started here (apps/jobs/isolation.py). So a job's first search still
    starts polars' threads and the engine's encoding threads, and its memory is new (a
    10,000-row table: about 55 ms, against 3 ms in a `deid search` process, whose load
    does all of that: search/preload.py)."""
    from apps.engine.cli_warmup import is_warm

    if not is_warm():
        return
    from apps.engine.search.preload import load_kernels
    from apps.jobs.isolation import preload_in_background

    preload_in_background(load_kernels)
