"""``python manage.py mcp_stdio [--user NAME]``: the project's MCP tools over stdin/stdout."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Serve the project's MCP tools over stdio, for an MCP client that starts this command."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Run every call as this user (by user name); anonymous otherwise.")

    def handle(self, *args: Any, **options: Any) -> None:
        from minimcp.django import mcp

        user = None
        if options["user"] is not None:
            model = get_user_model()
            try:
                user = model._default_manager.get_by_natural_key(options["user"])
            except model.DoesNotExist:
                raise CommandError(f"No user named {options['user']!r}") from None
        with mcp.acting_as(user):
            mcp.run("stdio")
