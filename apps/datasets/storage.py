"""Files in the storage backend, and local paths to read them with polars."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage

from apps.core.errors import ApplicationError


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store(local: Path, name: str) -> str:
    """Copy a local file into the storage backend; returns the name it was stored under."""
    with local.open("rb") as handle:
        return default_storage.save(name, File(handle, name=Path(name).name))


def delete_quietly(*names: str) -> None:
    for name in names:
        if name:
            with contextlib.suppress(FileNotFoundError, OSError):
                default_storage.delete(name)


@contextlib.contextmanager
def local_path(name: str) -> Iterator[Path]:
    """A filesystem path for a stored file: the file itself on local storage, else a temp copy.
    No name (a cluster table has no stored file: its rows stay on its cluster) is refused."""
    if not name:
        raise ApplicationError(
            "This data has no stored file here: a cluster table's rows are read on its "
            "cluster, and this page or action reads a file on this machine.",
            status=409,
        )
    try:
        yield Path(default_storage.path(name))
        return
    except NotImplementedError:
        pass
    suffix = Path(name).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        with default_storage.open(name, "rb") as source:
            shutil.copyfileobj(source, tmp, 1024 * 1024)
        tmp.flush()
        yield Path(tmp.name)
