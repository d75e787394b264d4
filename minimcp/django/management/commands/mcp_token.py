"""``python manage.py mcp_token NAME [--label TEXT | --list | --revoke N]``: issue an API token for a
user and print it once, list the user's tokens, or revoke one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from minimcp.django.models import APIToken


class Command(BaseCommand):
    help = "Issue an MCP API token for a user. It is printed once; only its digest is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--label", default="issued by manage.py mcp_token", help="What the token is for.")
        actions = parser.add_mutually_exclusive_group()
        actions.add_argument("--list", action="store_true", help="List the user's tokens instead of issuing one.")
        actions.add_argument("--revoke", type=int, metavar="N", help="Revoke the user's token number N (see --list).")

    def handle(self, *args: Any, **options: Any) -> None:
        model = get_user_model()
        try:
            user = model._default_manager.get_by_natural_key(options["username"])
        except model.DoesNotExist:
            raise CommandError(f"No user named {options['username']!r}") from None
        if options["list"]:
            for token in APIToken.objects.filter(user=user).order_by("pk"):
                self.stdout.write(token.describe())
        elif options["revoke"] is not None:
            deleted, _ = APIToken.objects.filter(user=user, pk=options["revoke"]).delete()
            if not deleted:
                raise CommandError(f"{options['username']!r} has no token {options['revoke']} (see --list)")
            self.stdout.write(f"Revoked token {options['revoke']} of {options['username']!r}.")
        else:
            self.stdout.write(APIToken.create(user, options["label"]))
