"""``manage.py audit_verify [--organization SLUG] [--expect SLUG:SEQ:HASH …] [--record-anchors]``
— check the audit trail's hash chains.

Exits 0 when every chain is intact, 1 (after printing each problem) otherwise; suitable for
cron or a monitoring check. ``--expect`` checks the trail against a head known from outside
the database (each signed report prints the head at its decision); ``--record-anchors``
writes each chain's head, once verified, to the file storage (``apps.audit.anchors``): run
daily, it lets a later check see a trail cut back to an older copy of the database.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import Organization
from apps.audit.anchors import anchor_heads
from apps.audit.services import Expected, audit_verify


class Command(BaseCommand):
    help = "Verify the audit trail's hash chains; exit 1 if any event was edited, deleted or reordered."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", metavar="SLUG", help="Only this organization.")
        parser.add_argument(
            "--expect",
            metavar="SLUG:SEQUENCE:HASH",
            action="append",
            default=[],
            help="A chain head known from outside the database (as a signed report prints "
            "it): the trail must still hold that event with that digest. Repeatable.",
        )
        parser.add_argument(
            "--record-anchors",
            action="store_true",
            help="Once verified, record each chain's head in the file storage.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        organization = None
        if options["organization"]:
            organization = Organization.objects.filter(slug=options["organization"]).first()
            if organization is None:
                raise CommandError(f"No organization with slug {options['organization']!r}.")
        try:
            expected = [Expected.parse(text) for text in options["expect"]]
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        result = audit_verify(organization=organization, expected=expected)
        if result.ok:
            self.stdout.write(
                f"OK: {result.checked} events in {result.organizations} organizations, chain intact"
            )
            if options["record_anchors"]:
                written = anchor_heads(result.heads)
                self.stdout.write(f"{written} chain heads anchored outside the database")
            return
        for problem in result.problems:
            self.stderr.write(problem)
        self.stderr.write(f"FAILED: {result.summary}")
        sys.exit(1)
