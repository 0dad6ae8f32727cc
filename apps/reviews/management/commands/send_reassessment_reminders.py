"""Daily: remind analysts and admins of releases due for re-assessment (cron or Celery beat)."""

from typing import Any

from django.core.management.base import BaseCommand

from apps.reviews.registry import reassessment_reminders


class Command(BaseCommand):
    help = "E-mail a reminder for every release whose re-assessment date has come."

    def handle(self, *args: Any, **options: Any) -> None:
        due = reassessment_reminders()
        self.stdout.write(f"{len(due)} reminder(s) sent.")
