"""The signing passphrase is kept sealed (#15): envelope-encrypted under the master key,
never in clear in the database (apps.core.crypto)."""

from typing import Any

from django.db import migrations, models

from apps.accounts.models import signing_passphrase_purpose
from apps.core import crypto


def seal(apps: Any, schema_editor: Any) -> None:
    Organization = apps.get_model("accounts", "Organization")  # noqa: N806
    for org in Organization.objects.exclude(signing_passphrase_sealed=""):
        if crypto.is_sealed(org.signing_passphrase_sealed):
            continue
        org.signing_passphrase_sealed = crypto.seal_text(
            org.signing_passphrase_sealed, purpose=signing_passphrase_purpose(org.id)
        )
        org.save(update_fields=["signing_passphrase_sealed"])


def unseal(apps: Any, schema_editor: Any) -> None:
    Organization = apps.get_model("accounts", "Organization")  # noqa: N806
    for org in Organization.objects.exclude(signing_passphrase_sealed=""):
        if crypto.is_sealed(org.signing_passphrase_sealed):
            org.signing_passphrase_sealed = crypto.open_text(
                org.signing_passphrase_sealed, purpose=signing_passphrase_purpose(org.id)
            )
            org.save(update_fields=["signing_passphrase_sealed"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_organization_reassessment_months_and_more"),
    ]

    operations = [
        migrations.RenameField(
            model_name="organization",
            old_name="signing_passphrase",
            new_name="signing_passphrase_sealed",
        ),
        migrations.AlterField(
            model_name="organization",
            name="signing_passphrase_sealed",
            field=models.TextField(
                blank=True,
                help_text="The PKCS#12 passphrase, sealed (apps.core.crypto); never shown.",
            ),
        ),
        migrations.RunPython(seal, unseal),
    ]
