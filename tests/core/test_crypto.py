"""Envelope encryption (apps.core.crypto), master-key rotation and the data migrations that
seal what was stored in clear before (#15)."""

from __future__ import annotations

import base64
import importlib
import json
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.test import override_settings

from apps.accounts.models import Organization, signing_passphrase_purpose
from apps.assessments.models import SECRETS_BUNDLE_PURPOSE, Assessment
from apps.audit.models import AuditEvent
from apps.core import crypto
from apps.core.rotation import sealed_fields
from deidweb.settings.env import local_master_key

ROOT = Path(__file__).resolve().parents[2]
OLD = base64.b64encode(b"o" * 32).decode()
NEW = base64.b64encode(b"n" * 32).decode()
THIRD = base64.b64encode(b"t" * 32).decode()
PASSPHRASE = "correct horse battery staple"


def test_a_sealed_text_opens_only_for_its_purpose_and_hides_the_text():
    sealed = crypto.seal_text(PASSPHRASE, purpose="organization 1 signing passphrase")
    assert crypto.open_text(sealed, purpose="organization 1 signing passphrase") == PASSPHRASE
    assert crypto.is_sealed(sealed) and sealed.isascii()
    assert PASSPHRASE not in sealed
    version, key_id, wrapped, body = sealed.split(".")
    assert (version, key_id) == ("dwk1", crypto.current_master_key().key_id)
    assert len(base64.urlsafe_b64decode(wrapped + "==")) == 12 + 32 + 16  # nonce, key, tag
    # a fresh data key and nonce every time: the same text never seals the same way twice
    again = crypto.seal_text(PASSPHRASE, purpose="organization 1 signing passphrase")
    assert again.split(".")[2] != wrapped and again.split(".")[3] != body
    with pytest.raises(crypto.SecretUnreadable, match="not sealed for"):
        crypto.open_text(sealed, purpose="organization 2 signing passphrase")


def test_a_damaged_value_or_a_foreign_master_key_is_refused():
    sealed = crypto.seal_text(PASSPHRASE, purpose="p")
    version, key_id, wrapped, body = sealed.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    with pytest.raises(crypto.SecretUnreadable, match="damaged"):
        crypto.open_text(f"{version}.{key_id}.{wrapped}.{flipped}", purpose="p")
    with (
        override_settings(DEIDWEB_MASTER_KEY=THIRD),
        pytest.raises(crypto.SecretUnreadable, match=f"master key {key_id}"),
    ):
        crypto.open_text(sealed, purpose="p")
    with pytest.raises(crypto.SecretUnreadable, match="unknown format"):
        crypto.open_text(PASSPHRASE, purpose="p")


def test_a_sealed_file_keeps_its_key_apart():
    content = json.dumps({"keys": {"email": base64.b64encode(b"k" * 32).decode()}}).encode()
    wrapped, sealed = crypto.seal_bytes(content, purpose=SECRETS_BUNDLE_PURPOSE)
    assert sealed.startswith(crypto.FILE_MAGIC) and content not in sealed
    assert len(sealed) == len(crypto.FILE_MAGIC) + 12 + len(content) + 16
    assert wrapped.count(".") == 2  # a wrapped key only: the file holds the ciphertext
    assert crypto.open_bytes(wrapped, sealed, purpose=SECRETS_BUNDLE_PURPOSE) == content
    with pytest.raises(crypto.SecretUnreadable):
        crypto.open_bytes(wrapped, sealed, purpose="organization 1 signing passphrase")
    other, _ = crypto.seal_bytes(content, purpose=SECRETS_BUNDLE_PURPOSE)
    with pytest.raises(crypto.SecretUnreadable):  # another file's key does not open it
        crypto.open_bytes(other, sealed, purpose=SECRETS_BUNDLE_PURPOSE)


def test_every_sealed_field_is_declared_for_rotation():
    declared = {(m._meta.label_lower, name) for m, name in sealed_fields()}
    assert declared == {
        ("accounts.organization", "signing_passphrase_sealed"),
        ("assessments.assessment", "secrets_wrapped_key"),
        ("assessments.pseudonymdomain", "key_sealed"),
        ("datasets.sparkconnection", "remote_sealed"),
    }
    # and no other field is named as if it held a secret without being declared
    suspicious = {
        (m._meta.label_lower, f.name)
        for m in django_apps.get_models()
        for f in m._meta.get_fields()
        if any(word in f.name for word in ("sealed", "wrapped", "passphrase"))
    }
    assert suspicious == declared


def _dataset(organization):  # type: ignore[no-untyped-def]
    from apps.datasets.models import Dataset

    return Dataset.objects.create(
        organization=organization, name="people", size_bytes=1, rows=10, column_count=4
    )


@pytest.fixture
def sealed_everywhere(custodian, tmp_path):  # type: ignore[no-untyped-def]
    """Under the OLD master key: a sealed passphrase and a sealed keys file on a release."""
    with override_settings(DEIDWEB_MASTER_KEY=OLD):
        custodian.signing_passphrase_sealed = crypto.seal_text(
            PASSPHRASE, purpose=signing_passphrase_purpose(custodian.id)
        )
        custodian.save()
        wrapped, sealed = crypto.seal_bytes(b'{"keys": {}}', purpose=SECRETS_BUNDLE_PURPOSE)
    name = default_storage.save(f"test-rotation/{custodian.id}/keys.sealed", ContentFile(sealed))
    dataset = _dataset(custodian)
    assessment = Assessment.objects.create(
        organization=custodian,
        dataset=dataset,
        title="t",
        secrets_path=name,
        secrets_wrapped_key=wrapped,
    )
    return custodian, assessment, sealed


@pytest.mark.django_db
def test_rotation_rewraps_every_data_key_and_keeps_the_files(sealed_everywhere):
    custodian, assessment, sealed_file = sealed_everywhere
    passphrase_before = custodian.signing_passphrase_sealed
    old_id = crypto.key_id_of(passphrase_before)
    with override_settings(DEIDWEB_MASTER_KEY=NEW):
        # without the old key nothing opens, and nothing is re-wrapped (all or nothing)
        with pytest.raises(CommandError, match=f"unknown master key {old_id}"):
            call_command("rotate_master_key")
        custodian.refresh_from_db()
        assert custodian.signing_passphrase_sealed == passphrase_before
    with override_settings(DEIDWEB_MASTER_KEY=NEW, DEIDWEB_MASTER_KEY_PREVIOUS=OLD):
        new_id = crypto.current_master_key().key_id
        dry = _run_rotation("--dry-run")
        assert "1 would be re-wrapped" in dry
        custodian.refresh_from_db()
        assert custodian.signing_passphrase_sealed == passphrase_before
        out = _run_rotation()
        assert f"Current master key: {new_id}" in out
        assert "accounts.organization.signing_passphrase_sealed: 1 re-wrapped" in out
        assert "assessments.assessment.secrets_wrapped_key: 1 re-wrapped" in out
        assert "2 data key(s) re-wrapped." in out
        assert "0 data key(s) re-wrapped." in _run_rotation()  # again: nothing to do
    custodian.refresh_from_db()
    assessment.refresh_from_db()
    rotated = custodian.signing_passphrase_sealed
    assert crypto.key_id_of(rotated) == crypto.key_id_of(assessment.secrets_wrapped_key) == new_id
    # only the wrapping changed: the encrypted passphrase and the stored file did not
    assert rotated.split(".")[3] == passphrase_before.split(".")[3]
    with default_storage.open(assessment.secrets_path, "rb") as handle:
        assert handle.read() == sealed_file
    with override_settings(DEIDWEB_MASTER_KEY=NEW):  # the old key is no longer needed
        purpose = signing_passphrase_purpose(custodian.id)
        assert crypto.open_text(rotated, purpose=purpose) == PASSPHRASE
        assert (
            crypto.open_bytes(
                assessment.secrets_wrapped_key, sealed_file, purpose=SECRETS_BUNDLE_PURPOSE
            )
            == b'{"keys": {}}'
        )
    (event,) = AuditEvent.objects.filter(action="crypto.master_key_rotated")
    assert event.details["to_key_id"] == new_id
    assert sum(event.details["rewrapped"].values()) == 2


def _run_rotation(*args: str) -> str:
    import io

    out = io.StringIO()
    call_command("rotate_master_key", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_migrations_seal_what_was_stored_in_clear(
    custodian, django_capture_on_commit_callbacks
):
    accounts_migration = importlib.import_module(
        "apps.accounts.migrations.0003_organization_signing_passphrase_sealed"
    )
    assessments_migration = importlib.import_module(
        "apps.assessments.migrations.0004_assessment_secrets_wrapped_key"
    )
    # as 0002 left them: the passphrase in clear, the keys file in clear JSON
    Organization.objects.filter(id=custodian.id).update(signing_passphrase_sealed=PASSPHRASE)
    plain = json.dumps({"keys": {"email": "a2V5"}}).encode()
    legacy = default_storage.save(
        f"test-migration/{custodian.id}/keys-and-linking-tables.json", ContentFile(plain)
    )
    dataset = _dataset(custodian)
    one, two = (
        Assessment.objects.create(
            organization=custodian, dataset=dataset, title="t", version=v, secrets_path=legacy
        )
        for v in (1, 2)  # a revised version shares its predecessor's file
    )
    with django_capture_on_commit_callbacks(execute=True):
        accounts_migration.seal(django_apps, None)
        assessments_migration.seal(django_apps, None)
    custodian.refresh_from_db()
    assert crypto.is_sealed(custodian.signing_passphrase_sealed)
    purpose = signing_passphrase_purpose(custodian.id)
    assert crypto.open_text(custodian.signing_passphrase_sealed, purpose=purpose) == PASSPHRASE
    one.refresh_from_db()
    two.refresh_from_db()
    assert one.secrets_path == two.secrets_path != legacy
    assert one.secrets_path.endswith(".sealed") and one.secrets_wrapped_key
    assert not default_storage.exists(legacy)  # the clear copy is gone once committed
    with default_storage.open(one.secrets_path, "rb") as handle:
        stored = handle.read()
    assert plain not in stored
    assert crypto.open_bytes(two.secrets_wrapped_key, stored, purpose=SECRETS_BUNDLE_PURPOSE) == (
        plain
    )
    # running them again changes nothing
    accounts_migration.seal(django_apps, None)
    assessments_migration.seal(django_apps, None)
    sealed_before = custodian.signing_passphrase_sealed
    custodian.refresh_from_db()
    assert custodian.signing_passphrase_sealed == sealed_before


def _settings_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import django; from django.conf import settings; settings.DEBUG"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        cwd=str(ROOT),
    )


def test_production_refuses_to_start_without_a_master_key():
    production = {
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),  # random: 50 × "x" is refused for itself
    }
    missing = _settings_process(production)
    assert missing.returncode != 0 and "DEIDWEB_MASTER_KEY must be set" in missing.stderr
    short = _settings_process({**production, "DEIDWEB_MASTER_KEY": "c2hvcnQ="})
    assert short.returncode != 0
    assert "DEIDWEB_MASTER_KEY must be 32 random bytes in base64" in short.stderr
    random_key = base64.b64encode(os.urandom(32)).decode()  # b"n" × 32 is refused for itself
    good = _settings_process({**production, "DEIDWEB_MASTER_KEY": random_key})
    assert good.returncode == 0, good.stderr


def test_a_development_key_is_made_once_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "var" / "master.key"
    key = local_master_key(path)
    assert len(base64.b64decode(key)) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert local_master_key(path) == key  # kept, not replaced
    os.chmod(path, 0o600)
    path.write_text("not a key\n")
    with pytest.raises(Exception, match="must be 32 random bytes"):
        local_master_key(path)


@pytest.mark.django_db
def test_keys_that_cannot_be_opened_are_a_clear_error_not_a_crash(sealed_everywhere):
    from apps.assessments.release_secrets import release_secrets_read
    from apps.core.errors import ApplicationError

    _custodian, assessment, _sealed = sealed_everywhere
    with override_settings(DEIDWEB_MASTER_KEY=OLD):
        assert release_secrets_read(assessment=assessment) == b'{"keys": {}}'
    with override_settings(DEIDWEB_MASTER_KEY=NEW, DEIDWEB_MASTER_KEY_PREVIOUS=OLD):
        assert release_secrets_read(assessment=assessment) == b'{"keys": {}}'  # mid-rotation
    with (
        override_settings(DEIDWEB_MASTER_KEY=NEW),
        pytest.raises(ApplicationError, match="master key this server does not have") as caught,
    ):
        release_secrets_read(assessment=assessment)
    assert caught.value.status == 409
