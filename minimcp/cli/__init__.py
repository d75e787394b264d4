"""The ``minimcp`` command line: run, inspect, call, read, prompt, dev and install.

    minimcp inspect server.py
    minimcp call server.py book_table date=2025-12-25 party_size=2
    minimcp install claude-desktop server.py

Built on the standard library's ``argparse`` rather than click or typer: the command ships with the
core install, which stays at its four dependencies, and a shell client wants nothing more than
subcommands, options and help. The package holds one concern per module: ``target`` (what TARGET
names and how to connect to it), ``arguments`` (key=value typed by a tool's schema), ``verbs``
(the client verbs), ``serve`` (run and dev), ``hosts`` (the hosts' configuration files), ``output``
(tables, JSON, progress and logs) and ``app`` (the parser and the exit codes).
"""

from minimcp.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
