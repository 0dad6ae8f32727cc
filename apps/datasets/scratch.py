"""The private folder for every temporary file with data: uploads being received, local
copies of stored files, conversions, release spools.

In the system temp folder, such files outlived the process that wrote them (81 MB of a
partial upload after a web restart, a copy from object storage after a worker was killed)
where any local account could look. Instead each process, when Django starts it (web and
worker alike: `DatasetsConfig.ready`), calls `scratch_start`, which

- makes the private root (DEIDWEB_TEMP_DIR, by default var/tmp) readable by the service
  account only (0700);
- removes what dead processes left there: each process has its own folder beside a lock
  file it holds locked for its whole life (the operating system releases the lock when the
  process ends, however it ends), so a folder whose lock can be taken belongs to nobody,
  while the folders of processes still running are left alone;
- makes the process's own folder the default of Python's tempfile module (which Django's
  upload handler, django-storages' copies of S3 objects and the app's own temporary files
  use) and of TMPDIR and POLARS_TEMP_DIR (for libraries and child processes), and removes
  it at exit;
- does the same in every process forked from it (Celery's prefork pool processes, a job's
  process), so that one killed leaves nothing that outlives the next process's start.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import logging
import os
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Scratch", "scratch_start", "sweep"]

logger = logging.getLogger(__name__)

_LOCK = ".lock"


@dataclass(frozen=True)
class Scratch:
    root: Path
    folder: Path  # this process's own
    lock: int  # the descriptor holding its lock
    pid: int  # the process that made it (the one that removes it at exit)


_current: Scratch | None = None


def _private_root(root: Path) -> None:
    """The root, made if missing, owned by this account and closed to every other."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = root.stat()
    if info.st_uid != os.geteuid():
        raise PermissionError(errno.EPERM, f"it belongs to another account (uid {info.st_uid})")
    if stat.S_IMODE(info.st_mode) != 0o700:
        root.chmod(0o700)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


def sweep(root: Path) -> list[str]:
    """Remove from `root` everything no running process holds: the folders whose lock can
    be taken, and anything else found there. Returns the names removed."""
    removed: list[str] = []
    if not root.is_dir():
        return removed
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(_LOCK):
            continue
        lock = root / (entry.name + _LOCK)
        try:
            descriptor = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            # A folder is made after its lock is taken: without one, nobody owns it.
            _remove(entry)
            removed.append(entry.name)
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)  # its process is running
            continue
        try:
            _remove(entry)
            lock.unlink(missing_ok=True)
            removed.append(entry.name)
        finally:
            os.close(descriptor)
    # Locks left without a folder (a process ended between taking its lock and making it).
    for lock in root.glob("*" + _LOCK):
        if (root / lock.name[: -len(_LOCK)]).exists():
            continue
        try:
            descriptor = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink(missing_ok=True)
        except BlockingIOError:
            pass
        finally:
            os.close(descriptor)
    return removed


def _own_folder(root: Path) -> tuple[Path, int]:
    """A new folder of this process in `root`, and the descriptor of its lock, taken before
    the folder exists (so that a sweep running meanwhile never sees it unlocked)."""
    while True:
        name = f"p{os.getpid()}-{uuid.uuid4().hex[:12]}"
        lock = root / (name + _LOCK)
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        # A sweep may have taken and removed the lock file between its creation and the
        # lock: then this descriptor locks a file no one else can see. Start again.
        try:
            same = os.fstat(descriptor).st_ino == lock.stat().st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(descriptor)
            continue
        folder = root / name
        folder.mkdir(mode=0o700)
        return folder, descriptor


def _end(scratch: Scratch) -> None:
    """At exit of the process that made it: remove its folder, then its lock."""
    if os.getpid() != scratch.pid:
        return
    shutil.rmtree(scratch.folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        (scratch.root / (scratch.folder.name + _LOCK)).unlink()
    with contextlib.suppress(OSError):
        os.close(scratch.lock)


def scratch_start(root: Path) -> Scratch:
    """Make `root` private, remove what dead processes left in it, and give this process a
    folder of its own there as the default of every temporary file (see the module
    docstring). Called once per process; a second call returns the same folder."""
    global _current
    if _current is not None:
        return _current
    root = Path(root).absolute()
    try:
        _private_root(root)
        removed = sweep(root)
        folder, descriptor = _own_folder(root)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"The temporary folder {root} cannot be used ({exc.strerror or exc}). Temporary "
            "copies of personal data are kept only there: set DEIDWEB_TEMP_DIR to a folder "
            "of the account the app runs as",
        ) from exc
    if removed:
        logger.info(
            "Removed %d temporary folder(s) left by ended processes in %s", len(removed), root
        )
    tempfile.tempdir = str(folder)
    # For child processes and libraries that read the environment (polars spills there).
    os.environ["TMPDIR"] = os.environ["POLARS_TEMP_DIR"] = str(folder)
    first = _current is None and not _forks_watched
    _current = Scratch(root=root, folder=folder, lock=descriptor, pid=os.getpid())
    atexit.register(_end, _current)
    if first:
        _watch_forks()
    return _current


_forks_watched = False


def _watch_forks() -> None:
    global _forks_watched
    _forks_watched = True
    os.register_at_fork(after_in_child=_after_fork)


def _after_fork() -> None:
    """A forked process — a prefork pool process of the worker, a job's process — gets a
    folder of its own, with its own lock: killed, it leaves its files in a folder nobody
    holds, which the next process started or forked removes. (In its parent's folder they
    stayed for as long as the parent ran, its lock held.) The parent's lock stays the
    parent's: this process's copy of the descriptor is closed."""
    global _current
    parent = _current
    if parent is None:
        return
    with contextlib.suppress(OSError):
        os.close(parent.lock)
    _current = None
    try:
        scratch_start(parent.root)
    except OSError:
        logger.exception("a forked process could not make its own temporary folder")
        _current = parent
