"""The engine's code shipped with a Spark session: a zip of ``apps.engine`` put on the
executors' Python path, so they run exactly the client's masking and recoding, not whatever
version the cluster may have installed (`SparkRows._ship_engine`)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path


def engine_archive() -> Path:
    """A zip of the ``apps.engine`` package (its Python files and the data files it reads
    through importlib.resources), named by its content."""
    root = Path(__file__).resolve().parents[4]
    package = root / "apps" / "engine"
    files = sorted(
        [
            root / "apps" / "__init__.py",
            *package.rglob("*.py"),
            *(
                p
                for p in package.rglob("data/**/*")
                if p.is_file() and "__pycache__" not in p.parts
            ),
        ],
        key=lambda p: p.relative_to(root).as_posix(),
    )
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    archive = Path(tempfile.gettempdir()) / f"deidweb-engine-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        partial_path = archive.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(partial_path, "w", zipfile.ZIP_DEFLATED) as zipped:
            for file in files:
                info = zipfile.ZipInfo(file.relative_to(root).as_posix(), (1980, 1, 1, 0, 0, 0))
                zipped.writestr(info, file.read_bytes(), zipfile.ZIP_DEFLATED)
        partial_path.replace(archive)
    return archive
