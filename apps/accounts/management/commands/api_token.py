"""API keys from the command line: create one for a user, list a user's keys, revoke one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.selectors import api_tokens_of
from apps.accounts.services import api_token_create, api_token_revoke
from apps.core.errors import ApplicationError


class Command(BaseCommand):
    help = (
        "Create, list or revoke a user's API keys. The key is printed once, at creation; "
        "scripts send it as 'Authorization: Bearer <key>'."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Make a key and print it (once).")
        create.add_argument("username")
        create.add_argument("--name", required=True, help="What the key is for.")
        listing = actions.add_parser("list", help="The user's keys: name, beginning, state.")
        listing.add_argument("username")
        revoke = actions.add_parser("revoke", help="Revoke a key by its beginning (deid_…).")
        revoke.add_argument("username")
        revoke.add_argument("prefix")

    def handle(self, *args: Any, action: str, username: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named '{username}'.")
        if action == "create":
            try:
                token, key = api_token_create(user=user, name=options["name"])
            except ApplicationError as error:
                raise CommandError(error.message) from None
            self.stderr.write(f"Key '{token.name}' for {username} (shown once, store it now):")
            self.stdout.write(key)
        elif action == "list":
            for token in api_tokens_of(user=user):
                state = (
                    "active" if token.is_active else f"revoked {token.revoked_at:%Y-%m-%d %H:%M}"
                )
                used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
                self.stdout.write(f"{token.prefix}…  {token.name}  last used {used}  {state}")
        else:
            prefix = options["prefix"].rstrip("…").rstrip(".")
            matches = [t for t in api_tokens_of(user=user) if t.prefix == prefix and t.is_active]
            if len(matches) != 1:
                raise CommandError(f"{username} has no active key beginning '{prefix}'.")
            api_token_revoke(token=matches[0])
            self.stdout.write(f"Revoked '{matches[0].name}' ({prefix}…).")
