"""``manage.py deid measure|search|apply …`` — the engine's command line, unchanged.

The engine parses its own arguments (it is a plain package that also runs as
``python -m apps.engine.cli``); this command only forwards them and its exit code.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from apps.engine.cli import main


class Command(BaseCommand):
    help = "De-identification engine: measure risk, search for the optimal solution, apply it."

    def run_from_argv(self, argv: list[str]) -> None:
        sys.exit(main(argv[2:]))

    def handle(self, *args: Any, **options: Any) -> None:  # pragma: no cover - run_from_argv
        sys.exit(main(list(args)))
