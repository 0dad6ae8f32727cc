"""`warmup`: compile every numba kernel into the on-disk cache, once, at install time.

    python manage.py deid warmup      (what `make install` and the Docker build run)

Without it, the first search after an install compiles the kernels as it goes (about 20 s
on the adult data set; the next search of the same size takes 0.7 s). The kernels are
declared with ``cache=True``, so what this command compiles is written to numba's cache
and every later process (web, worker) only loads it (search/preload.py says what is
exercised). The cache lives in ``NUMBA_CACHE_DIR`` when set (Django's settings set it under
var/, so that a read-only install still has a writable cache), else beside the sources.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from apps.engine.errors import EngineInputError
from apps.engine.longitudinal.preload import load_longitudinal_code


def cache_dir() -> Path | None:
    """Where numba writes its cache: NUMBA_CACHE_DIR, or None for beside the sources."""
    value = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    return Path(value) if value else None


def check_writable(folder: Path) -> None:
    """Create the cache folder if needed and prove a file can be written in it: numba cannot
    cache a kernel anywhere else, and refuses to compile it when no location is writable."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise EngineInputError(
            f"numba's cache folder {folder} (NUMBA_CACHE_DIR) is not writable: {exc}"
        ) from None


def warmup() -> float:
    """Compile (or load) every kernel a search uses; returns the seconds it took."""
    from apps.engine.search.preload import load_compiled_code, load_sensitive_code

    started = time.perf_counter()
    load_compiled_code()
    load_sensitive_code()
    load_longitudinal_code()
    return time.perf_counter() - started


def warmup_command(args: argparse.Namespace) -> int:
    folder = cache_dir()
    if folder is not None:
        check_writable(folder)
    seconds = warmup()
    where = str(folder) if folder is not None else "__pycache__ beside the engine's sources"
    print(f"numba kernels compiled and cached in {seconds:.1f} s ({where})")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "warmup",
        help="compile the numba kernels into the on-disk cache (run at install)",
        description="Compile every numba kernel a search uses into numba's on-disk cache, "
        "so that the first search after an install does not wait for the compiler.",
    )
    parser.set_defaults(handler=warmup_command)
