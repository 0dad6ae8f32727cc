"""``manage.py audit_verify [--organization SLUG]`` — check the audit trail's hash chains.

Exits 0 when every chain is intact, 1 (after printing each problem) otherwise; suitable for
cron or a monitoring check.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import Organization
from apps.audit.services import audit_verify


class Command(BaseCommand):
    help = "Verify the audit trail's hash chains; exit 1 if any event was edited, deleted or reordered."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", metavar="SLUG", help="Only this organization.")

    def handle(self, *args: Any, **options: Any) -> None:
        organization = None
        if options["organization"]:
            organization = Organization.objects.filter(slug=options["organization"]).first()
            if organization is None:
                raise CommandError(f"No organization with slug {options['organization']!r}.")
        result = audit_verify(organization=organization)
        if result.ok:
            self.stdout.write(
                f"OK: {result.checked} events in {result.organizations} organizations, chain intact"
            )
            return
        for problem in result.problems:
            self.stderr.write(problem)
        self.stderr.write(f"FAILED: {result.summary}")
        sys.exit(1)
