"""Keys and linking tables are kept sealed (#15): each release's file is envelope-encrypted
with a data key of its own, wrapped by the master key (apps.core.crypto).

A file written in clear before this migration is sealed into a new file beside it; the
plaintext file is deleted only once the database points at the sealed one (on commit), so
an interrupted migration never loses a key."""

import logging
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import migrations, models, transaction

from apps.assessments.models import SECRETS_BUNDLE_PURPOSE
from apps.core import crypto

logger = logging.getLogger(__name__)


def _delete_later(name: str) -> None:
    transaction.on_commit(lambda: default_storage.delete(name))


def seal(apps: Any, schema_editor: Any) -> None:
    Assessment = apps.get_model("assessments", "Assessment")  # noqa: N806
    pending = Assessment.objects.exclude(secrets_path="").filter(secrets_wrapped_key="")
    for name in sorted(set(pending.values_list("secrets_path", flat=True))):
        try:
            with default_storage.open(name, "rb") as handle:
                plain = handle.read()
        except OSError:
            logger.warning("keys file %s is missing from storage; left as it is", name)
            continue
        wrapped, sealed = crypto.seal_bytes(plain, purpose=SECRETS_BUNDLE_PURPOSE)
        stem = name.removesuffix(".json")
        saved = default_storage.save(f"{stem}.sealed", ContentFile(sealed))
        Assessment.objects.filter(secrets_path=name).update(
            secrets_path=saved, secrets_wrapped_key=wrapped
        )
        _delete_later(name)


def unseal(apps: Any, schema_editor: Any) -> None:
    Assessment = apps.get_model("assessments", "Assessment")  # noqa: N806
    sealed_rows = Assessment.objects.exclude(secrets_path="").exclude(secrets_wrapped_key="")
    for name, wrapped in sorted(
        set(sealed_rows.values_list("secrets_path", "secrets_wrapped_key"))
    ):
        with default_storage.open(name, "rb") as handle:
            plain = crypto.open_bytes(wrapped, handle.read(), purpose=SECRETS_BUNDLE_PURPOSE)
        saved = default_storage.save(f"{name.removesuffix('.sealed')}.json", ContentFile(plain))
        Assessment.objects.filter(secrets_path=name).update(
            secrets_path=saved, secrets_wrapped_key=""
        )
        _delete_later(name)


class Migration(migrations.Migration):
    dependencies = [
        ("assessments", "0003_population"),
    ]

    operations = [
        migrations.AddField(
            model_name="assessment",
            name="secrets_wrapped_key",
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(seal, unseal),
    ]
