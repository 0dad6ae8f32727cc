"""Create an organization's report-signing identity if it has none, and show its certificate."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import Organization
from apps.reports.identity import organization_signing_ensure
from apps.reports.signing import describe_certificate


class Command(BaseCommand):
    help = (
        "Create the certificate that signs an organization's Step 9 reports (if missing) "
        "and print its subject and SHA-256 fingerprint."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--organization", required=True, help="Slug of the organization.")

    def handle(self, *args: Any, organization: str, **options: Any) -> None:
        org = Organization.objects.filter(slug=organization).first()
        if org is None:
            raise CommandError(f"No organization with the slug '{organization}'.")
        before = (org.signing_certificate_path, org.signing_passphrase_sealed)
        pem = organization_signing_ensure(organization=org)
        info = describe_certificate(pem)
        org.refresh_from_db()
        after = (org.signing_certificate_path, org.signing_passphrase_sealed)
        state = "existing" if before[0] and before == after else "created"
        self.stdout.write(f"Signing certificate of {org.name} ({state})")
        self.stdout.write(f"  subject: {info['subject']}")
        self.stdout.write(f"  SHA-256 fingerprint: {info['sha256']}")
        self.stdout.write(f"  valid: {info['not_before'][:10]} to {info['not_after'][:10]}")
