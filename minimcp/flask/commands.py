"""``flask mcp inspect|call|install``: the ``minimcp`` verbs for the application's own server.

Each starts ``flask --app APP mcp stdio [--user ID]`` and talks to it (see ``minimcp.cli.hosted``);
``install`` writes that command, with APP made absolute, since a host starts it from anywhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import Any, Protocol

import click
from flask import current_app
from flask.cli import AppGroup, ScriptInfo

from minimcp.cli.hosted import EXAMPLES, HOSTED_VERBS, App, run_verb, unknown_user

PROG = "flask mcp"
HELP = {
    "inspect": "Show the tools, resources and prompts this application serves (as --user).",
    "call": "Call one of this application's tools (as --user) and print its result.",
    "install": "Add this application's stdio server to an MCP host (claude-desktop, cursor, ...).",
}


class Site(Protocol):
    """What the verbs ask of the application's ``minimcp.flask.MCP``: its name, and a user by id
    (its ``load_user``, else Flask-Login's ``user_loader``)."""

    @property
    def name(self) -> str: ...

    def _load(self, user_id: str) -> Any: ...


def add_commands(group: AppGroup, mcp: Site) -> None:
    for verb in HOSTED_VERBS:
        _add(group, mcp, verb)


def _add(group: AppGroup, mcp: Site, verb: str) -> None:
    @group.command(verb, help=HELP[verb] + f" Example: {EXAMPLES[verb].format(prog=PROG)}. --help lists the options.",
                   add_help_option=False, context_settings={"ignore_unknown_options": True})
    @click.argument("words", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def command(context: click.Context, words: tuple[str, ...]) -> None:
        app = App(PROG, mcp.name, _stdio_command(context), lambda user_id: _check_user(mcp, user_id))
        context.exit(run_verb(app, verb, words))


def _stdio_command(context: click.Context) -> Any:
    located = _app_location(context)

    def command(user: str | None) -> tuple[list[str], dict[str, str]]:
        return ([sys.executable, "-m", "flask", "--app", located, "mcp", "stdio",
                 *(["--user", user] if user is not None else [])], {})

    return command


def _app_location(context: click.Context) -> str:
    """``--app`` as given, its module turned into a file path, so the command works from any directory."""
    given = context.ensure_object(ScriptInfo).app_import_path
    if not given:
        return os.path.abspath(sys.modules[current_app.import_name].__file__ or current_app.import_name)
    path, colon, rest = _split_app(given)
    if path.endswith(".py") or os.sep in path:
        file = os.path.abspath(path)
    else:
        spec = importlib.util.find_spec(path)
        file = os.path.abspath(spec.origin) if spec is not None and spec.origin else path
    return file + colon + rest


def _split_app(given: str) -> tuple[str, str, str]:
    """``module:factory(args)`` into the module, ``:`` and the rest, as Flask splits it."""
    parts = re.split(r":(?![\\/])", given, maxsplit=1)
    return (parts[0], ":", parts[1]) if len(parts) == 2 else (parts[0], "", "")


def _check_user(mcp: Site, user_id: str) -> None:
    """The user ``--user`` names, found as the server will find it (``MCP(load_user=...)``, else
    Flask-Login's ``user_loader``)."""
    if mcp._load(user_id) is None:
        raise unknown_user(PROG, user_id)
