"""The release manifest: which files a release is, their rows and SHA-256, and one digest.

A release written to a cluster is a folder of Parquet files that deidweb never copies.
What the reviewer approves, the report prints and the download/registry check compares
is the manifest's **digest**: SHA-256 of the manifest's canonical JSON (sorted keys, no
spaces, UTF-8), which covers the location, the columns, the row count and every file's
name, size, rows and SHA-256. A file changed, added or removed after approval changes
what `verify` finds: `compare` says which.

Hashing streams each file through ``pyarrow.fs`` (a local path, ``file://``, and the
object stores pyarrow reads), so the same function runs on this machine and inside a
Spark executor, next to the data (apps.engine.rows.spark).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MANIFEST_FORMAT = "deidweb-release-manifest/1"
_CHUNK = 8 * 1024 * 1024
#: The rows of a file that is no longer a readable Parquet file (bytes appended, a
#: truncated or overwritten footer): its bytes and SHA-256 still say it changed.
UNREADABLE_ROWS = -1


@dataclass(frozen=True)
class ManifestFile:
    name: str  # relative to the release's location
    bytes: int
    rows: int
    sha256: str


@dataclass(frozen=True)
class ReleaseManifest:
    location: str
    rows: int
    columns: tuple[tuple[str, str], ...]  # (name, type) in order
    files: tuple[ManifestFile, ...]  # sorted by name

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "location": self.location,
            "rows": self.rows,
            "columns": [[name, kind] for name, kind in self.columns],
            "files": [
                {"name": f.name, "bytes": f.bytes, "rows": f.rows, "sha256": f.sha256}
                for f in self.files
            ],
        }

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON: the one value a reviewer approves."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReleaseManifest:
        if data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"not a release manifest of format {MANIFEST_FORMAT}")
        return cls(
            location=str(data["location"]),
            rows=int(data["rows"]),
            columns=tuple((str(n), str(k)) for n, k in data["columns"]),
            files=tuple(
                ManifestFile(str(f["name"]), int(f["bytes"]), int(f["rows"]), str(f["sha256"]))
                for f in data["files"]
            ),
        )


@dataclass(frozen=True)
class ManifestCheck:
    """What `compare` found: ``ok`` only when every file is as recorded and none
    was added or removed."""

    ok: bool
    digest: str  # the digest of the manifest checked against
    changed: tuple[str, ...]
    missing: tuple[str, ...]
    added: tuple[str, ...]

    def message(self) -> str:
        if self.ok:
            return "every file of the release is as recorded in its manifest"
        parts = []
        for label, names in (
            ("changed", self.changed),
            ("missing", self.missing),
            ("added", self.added),
        ):
            if names:
                parts.append(f"{label}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}")
        return "the release differs from its manifest (" + "; ".join(parts) + ")"


def relative_name(location: str, uri: str) -> str:
    """A file's name inside the release's folder, whatever scheme prefix the engine
    lists it with (``file:///tmp/r/part-0.parquet`` in ``/tmp/r`` → ``part-0.parquet``)."""
    base = _path_of(location).rstrip("/")
    path = _path_of(uri)
    if base and path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return path.rsplit("/", 1)[-1]


def _path_of(uri: str) -> str:
    """The path part of a URI or path (``file:///a/b`` and ``file:/a/b`` → ``/a/b``)."""
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        return "/" + rest.lstrip("/") if scheme == "file" else rest
    if uri.startswith("file:"):
        return "/" + uri[len("file:") :].lstrip("/")
    return uri


def hash_file(uri: str) -> tuple[int, int, str]:
    """(bytes, Parquet rows, SHA-256) of one file, streamed in 8 MB chunks.

    The bytes are read as they are on the storage (pyarrow's file systems, never Hadoop's
    checksummed one), and a file whose Parquet footer no longer reads counts
    `UNREADABLE_ROWS` rows instead of failing the check: a damaged file is reported as
    changed, by name, not as a cluster that cannot be checked."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    if "://" in uri:
        filesystem, path = pafs.FileSystem.from_uri(uri)
    else:
        filesystem, path = pafs.LocalFileSystem(), _path_of(uri)
    digest = hashlib.sha256()
    size = 0
    with filesystem.open_input_stream(path) as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    rows = 0
    if path.endswith((".parquet", ".pq")):
        try:
            with filesystem.open_input_file(path) as handle:
                rows = pq.ParquetFile(handle).metadata.num_rows
        except (pa.ArrowException, ValueError, OSError):
            rows = UNREADABLE_ROWS
    return size, rows, digest.hexdigest()


def build_manifest(
    location: str,
    columns: Sequence[tuple[str, str]],
    hashed: Iterable[tuple[str, int, int, str]],
) -> ReleaseManifest:
    """The manifest of ``location`` from its files' (uri, bytes, rows, sha256)."""
    files = tuple(
        sorted(
            (ManifestFile(relative_name(location, u), b, r, h) for u, b, r, h in hashed),
            key=lambda f: f.name,
        )
    )
    return ReleaseManifest(
        location=location,
        rows=sum(f.rows for f in files),
        columns=tuple((str(n), str(k)) for n, k in columns),
        files=files,
    )


def compare(manifest: ReleaseManifest, current: ReleaseManifest) -> ManifestCheck:
    """Which recorded files changed, went missing, or were added."""
    before = {f.name: f for f in manifest.files}
    now = {f.name: f for f in current.files}
    changed = tuple(
        sorted(
            n
            for n in before.keys() & now.keys()
            if (before[n].sha256, before[n].bytes) != (now[n].sha256, now[n].bytes)
        )
    )
    missing = tuple(sorted(before.keys() - now.keys()))
    added = tuple(sorted(now.keys() - before.keys()))
    return ManifestCheck(
        ok=not (changed or missing or added),
        digest=manifest.digest,
        changed=changed,
        missing=missing,
        added=added,
    )
