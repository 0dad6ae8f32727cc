"""Data, keys and signing material at rest (#15): what a person with a copy of the storage
folder or of the database can read.

One organization goes through everything that writes files — upload (Parquet copy and the
original), Step 7 with a keyed pseudonym (release files and the keys bundle) and the signed
Step 9 report (the PKCS#12 signing identity and the PDF) — and the tests look at the result
on disk and in the database, not at the code that wrote it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import polars as pl
import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from apps.accounts.models import signing_passphrase_purpose
from apps.core import crypto
from apps.engine.masking import hmac_pseudonym
from apps.reports import signing


@pytest.fixture
def custodian(org_factory):  # type: ignore[no-untyped-def]
    """An organization that keeps the uploaded file too: one more file at rest."""
    return org_factory("Custodian", keep_original_uploads=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_stored_file_is_0600_in_0700_folders(everything_written):
    media = Path(settings.MEDIA_ROOT)
    release = everything_written["assessment"]
    organization = everything_written["organization"]
    report = everything_written["report"]
    named = {
        "Parquet copy of the upload": release.dataset.parquet_path,
        "release Parquet": release.output_parquet_path,
        "release CSV": release.output_csv_path,
        "keys and linking tables": release.secrets_path,
        "signing identity": organization.signing_certificate_path,
        "report PDF": report.pdf_path,
        "original upload": release.dataset.original_path,
    }
    assert all(named.values()), named
    root = media / "organizations" / str(organization.id)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    # every file the organization has, not only the named ones (the kept original too)
    assert {media / name for name in named.values()} <= set(files)
    modes = {str(p.relative_to(media)): oct(_mode(p)) for p in files}
    assert set(modes.values()) == {"0o600"}, modes
    folders = {root.parent, *(p for p in root.rglob("*") if p.is_dir()), root}
    folder_modes = {str(p.relative_to(media)): oct(_mode(p)) for p in folders}
    assert set(folder_modes.values()) == {"0o700"}, folder_modes


def _encodings(secret: bytes) -> dict[str, bytes]:
    """The forms a secret is found in when stored carelessly: as is, base64 (with or
    without padding, standard or URL-safe) and hex (either case)."""
    b64 = base64.b64encode(secret)
    urlsafe = base64.urlsafe_b64encode(secret)
    return {
        "raw": secret,
        "base64": b64,
        "base64 unpadded": b64.rstrip(b"="),
        "base64url": urlsafe.rstrip(b"="),
        "hex": secret.hex().encode(),
        "HEX": secret.hex().upper().encode(),
    }


def _database_text() -> bytes:
    """Every text, JSON and binary value of every table Django knows (its own apps and
    contrib: sessions, the admin's log, users), one value per line."""
    from django.apps import apps
    from django.db import models

    kinds = (models.CharField, models.TextField, models.JSONField, models.BinaryField)
    chunks: list[bytes] = []
    for model in apps.get_models(include_auto_created=True):
        names = [f.attname for f in model._meta.concrete_fields if isinstance(f, kinds)]
        if not names:
            continue
        for row in model._base_manager.values_list(*names):
            for value in row:
                if value is None:
                    continue
                if isinstance(value, (bytes, memoryview)):
                    chunks.append(bytes(value))
                elif isinstance(value, str):
                    chunks.append(value.encode())
                else:
                    chunks.append(json.dumps(value).encode())
    return b"\n".join(chunks)


def _pg_dump() -> bytes | None:
    """The whole database as pg_dump writes it (every table, bytea as hex), when it is
    PostgreSQL and pg_dump is installed."""
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor != "postgresql" or shutil.which("pg_dump") is None:
        return None
    result = subprocess.run(
        [
            "pg_dump",
            "--data-only",
            "--no-owner",
            "-h",
            db["HOST"] or "127.0.0.1",
            "-p",
            str(db["PORT"] or 5432),
            "-U",
            db["USER"] or "postgres",
            db["NAME"],
        ],
        env={**os.environ, "PGPASSWORD": db["PASSWORD"] or ""},
        capture_output=True,
        check=True,
    )
    return result.stdout


@pytest.mark.django_db(transaction=True)  # committed, so that pg_dump sees the rows
def test_storage_and_database_hold_no_key_or_passphrase_in_clear(
    everything_written, client_for, admin_user
):  # type: ignore[no-untyped-def]
    release = everything_written["assessment"]
    organization = everything_written["organization"]
    # The key, as an administrator downloads it; it is the key the release was made with.
    response = client_for(admin_user).get(f"/api/v1/assessments/{release.id}/release/secrets/")
    assert response.status_code == 200
    key = base64.b64decode(json.loads(b"".join(response.streaming_content))["keys"]["email"])
    assert len(key) == 32
    released = pl.read_parquet(Path(settings.MEDIA_ROOT) / release.output_parquet_path)
    assert hmac_pseudonym("p0@example.org", key) in set(released["email"])
    # The passphrase, as the report job used it to sign.
    passphrase = crypto.open_text(
        organization.signing_passphrase_sealed,
        purpose=signing_passphrase_purpose(organization.id),
    )
    with default_storage.open(organization.signing_certificate_path, "rb") as handle:
        assert signing.certificate_of(handle.read(), passphrase)
    needles = {
        **{f"key ({name})": form for name, form in _encodings(key).items()},
        **{f"passphrase ({name})": f for name, f in _encodings(passphrase.encode()).items()},
    }
    files = [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]
    assert len(files) >= 6
    found = [
        f"{label} in {path.relative_to(settings.MEDIA_ROOT)}"
        for path in files
        for label, needle in needles.items()
        if needle in path.read_bytes()
    ]
    database = _database_text()
    assert organization.signing_passphrase_sealed.encode() in database  # the scan sees it
    found += [f"{label} in a database column" for label, n in needles.items() if n in database]
    dump = _pg_dump()
    if dump is not None:
        assert release.secrets_wrapped_key.encode() in dump
        found += [f"{label} in pg_dump" for label, n in needles.items() if n in dump]
    assert found == []
