"""``python manage.py mcp_token NAME [--label TEXT]``: issue an API token for a user and print it once."""

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

    def handle(self, *args: Any, **options: Any) -> None:
        model = get_user_model()
        try:
            user = model._default_manager.get_by_natural_key(options["username"])
        except model.DoesNotExist:
            raise CommandError(f"No user named {options['username']!r}") from None
        self.stdout.write(APIToken.create(user, options["label"]))
