"""Re-wrap every stored data key under the current master key (DEIDWEB_MASTER_KEY)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import ApplicationError
from apps.core.rotation import master_key_rotate


class Command(BaseCommand):
    help = (
        "Rotate the master key: with the new key in DEIDWEB_MASTER_KEY and the old one in "
        "DEIDWEB_MASTER_KEY_PREVIOUS, re-wrap every stored data key (signing passphrases, "
        "keys and linking tables of releases) under the new key. All or nothing; safe to run "
        "again. Afterwards remove DEIDWEB_MASTER_KEY_PREVIOUS and restart."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be re-wrapped; change nothing."
        )

    def handle(self, *args: Any, dry_run: bool = False, **options: Any) -> None:
        try:
            rotation = master_key_rotate(dry_run=dry_run)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        verb = "would be re-wrapped" if dry_run else "re-wrapped"
        self.stdout.write(f"Current master key: {rotation.current_key_id}")
        labels = sorted(set(rotation.rewrapped) | set(rotation.already_current))
        for label in labels:
            self.stdout.write(
                f"  {label}: {rotation.rewrapped[label]} {verb}, "
                f"{rotation.already_current[label]} already under the current key"
            )
        self.stdout.write(f"{rotation.total_rewrapped} data key(s) {verb}.")
