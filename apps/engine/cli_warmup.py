"""`warmup`: compile every numba kernel into the on-disk cache, once.

    python manage.py deid warmup            (the Docker build; a Celery worker starts it in
                                             the background on a cold cache: deidweb/celery.py)
    python manage.py deid warmup --if-cold  (`make warm`: nothing to do when it is warm)

Without it, the first search after an install compiles the kernels as it goes. The
kernels are declared with ``cache=True``, so what this command compiles is written to
numba's cache and every later process (web, worker) only loads it (search/preload.py says
what is exercised). It ends by writing a marker (:func:`marker_path`) naming the sources
it compiled: a Celery worker loads the compiled code when it starts if the marker is there,
and else starts this command in the background, so that neither a worker's start nor
`make run` waits for the compiler (a search that comes first compiles what it needs). The
cache lives under ``NUMBA_CACHE_DIR`` when set (Django's settings set it under var/, so that
a read-only install still has a writable cache), in a folder per version of the sources
(numba_cache.py), else beside the sources.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from apps.engine.attacks.persons import load_person_attack_code
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal.preload import load_longitudinal_code
from apps.engine.numba_cache import (
    cache_root,
    remove_unused_folders,
    sources_digest,
    sources_folder,
)
from apps.engine.search.preload import load_compiled_code, load_sensitive_code

_ENGINE = Path(__file__).resolve().parent


def cache_dir() -> Path | None:
    """Where numba writes the current sources' compiled code: their folder under
    NUMBA_CACHE_DIR, or None for beside the sources."""
    root = cache_root()
    return None if root is None else sources_folder(root, sources_digest())


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


def marker_path() -> Path:
    """The file saying that the cache holds the compiled code of the current sources."""
    return (cache_dir() or _ENGINE / "__pycache__") / f".compiled-{sources_digest()}"


def is_warm() -> bool:
    """Whether `warmup` has compiled the current sources into the cache."""
    return marker_path().exists()


def cache_folders() -> list[Path]:
    """The folders where numba keeps the compiled code of *these* sources.

    Under NUMBA_CACHE_DIR numba names a source folder's cache after the folder and the SHA-1
    of its absolute path (``numba.core.caching._UserProvidedCacheLocator``), so several
    checkouts can share one cache; without it, the index files sit in ``__pycache__``
    beside the sources."""
    roots = {os.path.abspath(os.path.dirname(__file__)), str(_ENGINE)}
    sources = {os.path.dirname(str(p)) for root in roots for p in Path(root).rglob("*.py")}
    folder = cache_dir()
    if folder is None:
        return sorted(Path(s) / "__pycache__" for s in sources)
    return sorted(
        folder / f"{os.path.basename(s)}_{hashlib.sha1(s.encode()).hexdigest()}" for s in sources
    )


def clear_cache() -> int:
    """Remove the compiled code beside the sources (no NUMBA_CACHE_DIR); returns the files
    removed.

    numba checks a cached function against its own source file only: a compiled caller in
    one file keeps the machine code of a callee from another file as it was when the caller
    was compiled. Once any engine source changed (an upgrade, a checkout), every cached
    kernel may hold stale callees, so a warm-up on new sources starts from an empty cache.
    Under NUMBA_CACHE_DIR the new sources' folder starts empty instead, and nothing that a
    running process may be loading is removed (numba_cache.py)."""
    removed = 0
    for folder in cache_folders():
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.suffix in (".nbi", ".nbc"):
                entry.unlink(missing_ok=True)
                removed += 1
    return removed


def warmup() -> float:
    """Compile (or load) every kernel a search uses; returns the seconds it took. Sources
    other than those last compiled (no marker of theirs) start from an empty cache: their
    own folder under NUMBA_CACHE_DIR, whose other sources' folders are then removed once
    no process uses them; beside the sources, the cache emptied first."""
    started = time.perf_counter()
    root = cache_root()
    if root is None and not is_warm():
        clear_cache()
    load_compiled_code()
    load_sensitive_code()
    load_longitudinal_code()
    load_person_attack_code()
    seconds = time.perf_counter() - started
    marker = marker_path()
    marker.parent.mkdir(parents=True, exist_ok=True)
    for old in marker.parent.glob(".compiled-*"):
        old.unlink(missing_ok=True)
    marker.write_text(f"{seconds:.1f}\n")
    if root is not None:
        remove_unused_folders(root, keep=marker.parent)
    return seconds


def warmup_command(args: argparse.Namespace) -> int:
    folder = cache_dir()
    if folder is not None:
        check_writable(folder)
    if args.if_cold and is_warm():
        print(f"numba kernels already compiled for these sources ({marker_path()})")
        return 0
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
    parser.add_argument(
        "--if-cold",
        action="store_true",
        help="do nothing when the cache holds the current sources' compiled code",
    )
    parser.set_defaults(handler=warmup_command)
