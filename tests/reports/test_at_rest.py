"""Data, keys and signing material at rest (#15): what a person with a copy of the storage
folder or of the database can read.

One organization goes through everything that writes files — upload (Parquet copy and the
original), Step 7 with a keyed pseudonym (release files and the keys bundle) and the signed
Step 9 report (the PKCS#12 signing identity and the PDF) — and the tests look at the result
on disk and in the database, not at the code that wrote it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from django.conf import settings


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
