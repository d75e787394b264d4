"""``python manage.py mcp inspect|call|install|stdio``: the ``minimcp`` verbs for the project's server.

``stdio`` is ``mcp_stdio``; the others start ``manage.py mcp stdio [--user NAME]`` and talk to it
(see ``minimcp.cli.hosted``), and ``install`` writes that command with the settings module it needs.
The words after the verb are parsed by the same options as ``minimcp``'s, not by Django's parser.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from minimcp.cli.hosted import EXAMPLES, HOSTED_VERBS, App, run_verb, unknown_user

PROG = "manage.py mcp"
VERBS = (*HOSTED_VERBS, "stdio")


class Command(BaseCommand):
    help = ("The project's MCP server: inspect, call or install it, or serve it over stdio; "
            + "; ".join(EXAMPLES[verb].format(prog=PROG) for verb in HOSTED_VERBS)
            + ". manage.py mcp VERB --help lists a verb's options.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("verb", choices=VERBS)
        parser.add_argument("words", nargs="*", help="the verb's arguments (manage.py mcp VERB --help)")

    def run_from_argv(self, argv: list[str]) -> NoReturn:
        """Hand the verb's words to its own parser: Django's would take ``--help`` and ``--json`` for its own."""
        verb = argv[2] if len(argv) > 2 else ""
        if verb == "stdio":
            from minimcp.django.management.commands.mcp_stdio import Command as Stdio

            Stdio().run_from_argv([argv[0], "mcp_stdio", *argv[3:]])
            sys.exit(0)
        if verb not in HOSTED_VERBS:
            self.print_help(argv[0], "mcp")
            sys.exit(0 if verb in ("-h", "--help") else 2)
        from minimcp.django import mcp

        sys.exit(run_verb(App(PROG, mcp.name, _stdio_command, _check_user), verb, argv[3:]))

    def handle(self, *args: Any, **options: Any) -> None:
        """Unused: ``run_from_argv`` runs every verb (``call_command("mcp", ...)`` has no stdin or exit code)."""
        raise CommandError("manage.py mcp runs from the command line only (python manage.py mcp VERB ...): "
                           "call_command has no terminal for its questions nor an exit code for its answer")


def _stdio_command(user: str | None) -> tuple[list[str], dict[str, str]]:
    """``manage.py mcp stdio``, by the path this manage.py was run from, and the settings it used."""
    manage = os.path.abspath(sys.argv[0])
    start = [manage] if os.path.basename(manage) == "manage.py" else ["-m", "django"]
    env = {"DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
    if start[0] == "-m":
        env["PYTHONPATH"] = os.getcwd()  # django-admin finds the settings module from here
    return [sys.executable, *start, "mcp", "stdio", *(["--user", user] if user is not None else [])], env


def _check_user(name: str) -> None:
    model = get_user_model()
    try:
        model._default_manager.get_by_natural_key(name)
    except model.DoesNotExist:
        raise unknown_user(PROG, name) from None
