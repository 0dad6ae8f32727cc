"""Check a signed Step 9 report, or a recipient summary with its JSON twin, from files on
disk: the same check as the verify page (``apps.reports.summary_verification.copy_verify``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import Organization
from apps.reports.summary_verification import copy_verify


class Command(BaseCommand):
    help = (
        "Check that a PDF is the organization's signed report or recipient summary, unchanged; "
        "with --json, that the JSON twin is exactly the one the summary carries. Exits 1 when "
        "the check fails."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("pdf", help="The signed PDF.")
        parser.add_argument("--json", default="", help="The recipient summary's JSON twin.")
        parser.add_argument("--organization", required=True, help="Slug of the organization.")

    def handle(self, *args: Any, pdf: str, json: str, organization: str, **options: Any) -> None:
        org = Organization.objects.filter(slug=organization).first()
        if org is None:
            raise CommandError(f"No organization with the slug '{organization}'.")
        try:
            pdf_bytes = Path(pdf).read_bytes()
            twin = Path(json).read_bytes() if json else None
        except OSError as exc:
            raise CommandError(f"Cannot read {exc.filename}: {exc.strerror}.") from None
        result = copy_verify(organization=org, pdf=pdf_bytes, twin=twin)
        self.stdout.write(result["summary"])
        self.stdout.write(f"  SHA-256 of the PDF: {result['sha256']}")
        twin_check = result.get("recipient_summary")
        if twin_check:
            self.stdout.write(f"  JSON twin carried: {twin_check['json_sha256_carried'] or '—'}")
            self.stdout.write(f"  JSON twin given:   {twin_check['json_sha256'] or '—'}")
        if not result["valid"]:
            raise CommandError(result["problem"] or "Not valid.", returncode=1)
