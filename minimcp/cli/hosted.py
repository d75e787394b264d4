"""The verbs for a server that lives in a web application: ``flask mcp ...`` and ``manage.py mcp ...``.

``inspect``, ``call`` and ``install`` work as ``minimcp``'s do, with the application's own stdio
command as TARGET (``flask mcp stdio`` / ``manage.py mcp stdio``, started with ``--user``), so what
they show is what an MCP host that starts that command sees, the user's permissions included, and
``install`` writes exactly that command. The host framework parses nothing: the words after the
verb go to the same argparse options as ``minimcp``'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minimcp.cli import hosts, verbs
from minimcp.cli.app import (
    add_call_options,
    add_era_options,
    add_host,
    add_inspect_options,
    add_install_options,
    bare_json,
    guarded,
    parse,
)
from minimcp.cli.errors import CLIError
from minimcp.cli.target import Connection, Target

HOSTED_VERBS = ("inspect", "call", "install")
EXAMPLES = {
    "inspect": "{prog} inspect --user ada",
    "call": "{prog} call --user ada add_note text='Buy milk'",
    "install": "{prog} install claude-desktop --user ada",
}


@dataclass(frozen=True)
class App:
    """What the verbs need of the host application."""

    prog: str  # "flask mcp" or "manage.py mcp", for help and messages
    name: str  # the server's name, the default name of an installed entry
    #: The command (and the environment it needs beyond a host's) that serves the app over stdio as a user.
    stdio_command: Callable[[str | None], tuple[list[str], dict[str, str]]]
    #: Raises a ``CLIError`` saying what to do when the application has no such user.
    check_user: Callable[[str], None]


def parser_for(app: App, verb: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{app.prog} {verb}", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example:\n  " + EXAMPLES[verb].format(prog=app.prog))
    parser.add_argument("--user", help="act as this user of the application (anonymous without it)")
    if verb == "install":
        add_host(parser)
        add_install_options(parser)
    else:
        add_era_options(parser)
        (add_inspect_options if verb == "inspect" else add_call_options)(parser)
    return parser


def run_verb(app: App, verb: str, argv: Sequence[str]) -> int:
    """``{prog} VERB ARGV...``; returns the exit code, as ``minimcp`` would."""
    words = bare_json(list(argv)) if verb == "call" else list(argv)
    options = parse(parser_for(app, verb), words)
    return guarded(lambda: _run(app, verb, options), app.prog)


def _run(app: App, verb: str, options: argparse.Namespace) -> int:
    if options.user is not None:
        app.check_user(options.user)
    command, env = app.stdio_command(options.user)
    target = Target(command=tuple(command))
    if verb == "install":
        extra = {**env, **hosts.parse_env(options.env)}
        entry = hosts.entry_for(hosts.HOSTS[options.host], target, extra, {})
        return hosts.install(options.host, options.name or app.name, entry, options.printing, sys.stdout)
    connection = Connection(target, era=options.era, log_level=options.log_level)
    return (verbs.inspect if verb == "inspect" else verbs.call)(connection, options, sys.stdout)


def unknown_user(prog: str, user: str) -> CLIError:
    return CLIError(f"{prog}: no user {user!r}; give --user the name (Django) or id (Flask-Login) of an existing user")
