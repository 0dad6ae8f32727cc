"""Where numba keeps the engine's compiled kernels: one folder per version of the sources.

``NUMBA_CACHE_DIR`` names the cache's root (the settings put it at var/numba). Every process
that imports the engine uses the folder ``sources-<digest>`` under it, named after a digest
of the engine's sources (:func:`sources_digest`), and points numba there before any kernel
is declared (``apps/engine/__init__.py``). A warm-up for new sources therefore compiles into
a new folder and never empties the one that running jobs on the previous sources are
loading their compiled code from. numba checks a cached kernel against its own file only
(a cached caller keeps the machine code of a callee from another file as it was), so a
folder per digest also means that new sources never load a stale callee.

Each process holds a shared lock on its folder's ``.in-use`` file for as long as it lives
(forked job processes inherit it); a warm-up removes another digest's folder only when it
can take that lock exclusively, that is when no process uses it any more.

Without ``NUMBA_CACHE_DIR`` numba caches beside the sources (one folder per source folder,
for whatever sources are there), and this module changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import sys
from pathlib import Path
from typing import IO

_ENGINE = Path(__file__).resolve().parent
_SOURCES_FOLDER = re.compile(r"sources-[0-9a-z-]+")
_IN_USE = ".in-use"
# The lock file of this process's folder, open for as long as the process lives.
_HELD: list[IO[bytes]] = []


def sources_digest() -> str:
    """A digest of the engine's sources: a cache folder holds the compiled code of these.

    Every process that imports the engine computes it, so the walk skips the compiled
    files' folders (``Path.rglob`` through them took most of its 20 ms)."""
    relative = []
    for folder, subfolders, names in os.walk(_ENGINE):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        relative += [os.path.relpath(os.path.join(folder, n), _ENGINE) for n in names]
    digest = hashlib.sha256()
    for name in sorted(n for n in relative if n.endswith(".py")):
        digest.update(name.encode())
        with open(_ENGINE / name, "rb") as source:
            digest.update(source.read())
    return digest.hexdigest()[:16]


def cache_root() -> Path | None:
    """The root of numba's cache: NUMBA_CACHE_DIR, or None for beside the sources.

    A process started by one that already chose its folder inherits NUMBA_CACHE_DIR set to
    that folder; the root is then its parent, so the child picks the folder of its own
    sources instead of nesting one folder in another."""
    value = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    if not value:
        return None
    path = Path(value)
    return path.parent if _SOURCES_FOLDER.fullmatch(path.name) else path


def sources_folder(root: Path, digest: str) -> Path:
    """The folder under the root for the compiled code of the sources with this digest."""
    return root / f"sources-{digest}"


def use_sources_folder() -> None:
    """Point numba at the folder of the current sources and hold it while the process lives.

    Called when the engine is first imported, before any kernel is declared: numba fixes a
    kernel's cache folder when the kernel is declared (``cache=True``)."""
    root = cache_root()
    if root is None:
        return
    folder = sources_folder(root, sources_digest())
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:  # imported before the engine: re-read its environment
        from numba.core import config

        config.reload_config()  # type: ignore[no-untyped-call]  # numba has no type hints
    hold(folder)


def hold(folder: Path) -> None:
    """Take a shared lock on the folder's ``.in-use`` file and keep it open.

    An unwritable folder is left alone here: `deid warmup` names it, and numba says so
    when it cannot cache a kernel."""
    while True:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle = open(folder / _IN_USE, "ab")  # noqa: SIM115 (held until the process ends)
        except OSError:
            return
        fcntl.flock(handle, fcntl.LOCK_SH)
        # A warm-up may have removed the folder between the open and the lock: hold the
        # file that is there now, not the one that was deleted.
        try:
            same = os.stat(folder / _IN_USE).st_ino == os.fstat(handle.fileno()).st_ino
        except OSError:
            same = False
        if same:
            _HELD.append(handle)
            return
        handle.close()


def remove_unused_folders(root: Path, keep: Path) -> list[Path]:
    """Remove the folders of other sources that no process uses; returns those removed.

    A folder is removed while holding its ``.in-use`` lock exclusively, which no process
    can take while another holds it shared (a process on those sources, or a job it
    forked)."""
    removed = []
    for folder in sorted(root.glob("sources-*")):
        if folder == keep or not folder.is_dir():
            continue
        try:
            handle = open(folder / _IN_USE, "ab")  # noqa: SIM115 (closed below)
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(folder)
            removed.append(folder)
    return removed
