"""The ``minimcp`` command: the parser, and the one place where failures become messages and exit codes.

Exit codes: 0 success; 1 the tool answered ``isError`` (its message on stderr); 2 the call did not
happen (a usage, protocol or connection error, the message on stderr); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import get_args
from urllib.parse import urlsplit

import requests
from pydantic import ValidationError

from minimcp.cli import hosts, serve, verbs
from minimcp.cli import proxy as proxying
from minimcp.cli.errors import FAILED, CLIError
from minimcp.cli.output import ANSWER, MESSAGE, cut
from minimcp.cli.target import Connection, Target, load_server, parse_target, request_headers
from minimcp.client.client import InputRequiredRoundsExceededError
from minimcp.client.auth.challenge import challenge_param
from minimcp.client.auth.exceptions import OAuthFlowError
from minimcp.client.printable import printable
from minimcp.client.transports import NetworkError
from minimcp.jsonrpc import MCPError
from minimcp.types import MODERN_PROTOCOL_VERSIONS, LoggingLevel

#: Stands for TARGET when the server is a command after ``--`` (never typed: it has no dashes to hide).
COMMAND = "<command after -->"
ERAS = ("auto", "legacy", *MODERN_PROTOCOL_VERSIONS)
LEVELS = get_args(LoggingLevel)

TARGET_HELP = ("server.py or server.py:OBJ (the object mcp, server or app by default), a URL "
               "(http://127.0.0.1:8000/mcp), or leave it out and put a command after -- "
               "(-- python server.py)")

VERBS: dict[str, tuple[str, str]] = {
    "run": ("serve a server file, or an mcpServers configuration as one server, over stdio (or HTTP with --http)",
            "minimcp run server.py\n  minimcp run server.py:mcp --http --port 8000\n"
            "  minimcp run mcp.json --http   (each of its mcpServers under its name)"),
    "proxy": ("serve any server (a URL, a command, a file) as a server of this process, over stdio or HTTP",
              "minimcp proxy https://example.com/mcp   (a stdio host reaching an HTTP server; OAuth in the browser)\n"
              "  minimcp proxy --http --port 8001 -- python server.py"),
    "inspect": ("show a server: its info, capabilities, tools, resources, templates and prompts",
                "minimcp inspect server.py\n  minimcp inspect http://127.0.0.1:8000/mcp --json\n"
                "  minimcp inspect -- python server.py"),
    "call": ("call a tool and print its result (exit 1 if the tool failed, 2 if the call did not happen)",
             "minimcp call server.py book_table date=2025-12-25 party_size=2\n"
             "  minimcp call http://127.0.0.1:8000/mcp book_table --json '{\"date\": \"2025-12-25\", \"party_size\": 2}'\n"
             "  echo '{\"party_size\": 2}' | minimcp call server.py book_table date=2025-12-25 -"),
    "read": ("read a resource and print its contents",
             "minimcp read server.py notes://today"),
    "prompt": ("get a prompt with its arguments and print its messages",
               "minimcp prompt server.py summarize topic=tides"),
    "dev": ("serve a file over HTTP, reloading it when it changes, with the MCP Inspector",
            "minimcp dev server.py\n  minimcp dev server.py --port 8001"),
    "install": ("add a server to an MCP host's configuration (" + ", ".join(hosts.HOSTS) + ")",
                "minimcp install claude-desktop server.py\n"
                "  minimcp install cursor server.py --name notes --env API_KEY=s3cret\n"
                "  minimcp install vscode http://127.0.0.1:8000/mcp --token s3cret --print"),
}


def add_era_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--era", choices=ERAS, default="auto",
                        help="protocol era: auto (try 2026-07-28, fall back to the handshake), legacy, or a version")
    parser.add_argument("--log-level", default="info", choices=LEVELS,
                        help="the least severe server log message to show on stderr (info)")


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-H", "--header", action="append", default=[], metavar="NAME:VALUE",
                        help="an HTTP header for a URL target (repeatable)")
    parser.add_argument("--token", help="a bearer token for a URL target (without it, a server that asks for "
                                        "OAuth gets a browser sign-in)")


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: the address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="with --http: the port (8000; 0 picks a free one)")


def add_inspect_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def add_call_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", metavar="TOOL")
    parser.add_argument("arguments", nargs="*", metavar="key=value",
                        help="arguments, typed by the tool's input schema (JSON for objects and arrays); "
                             "- reads a JSON object of arguments from stdin")
    parser.add_argument("--json", nargs="?", const="", default=None, metavar="ARGS",
                        help="print the result as JSON (its structured content when there is one); ARGS, a JSON "
                             "object or - for stdin, gives the arguments")
    add_full_option(parser)
    parser.add_argument("--task", action="store_true", help="run the call as a task and wait, showing its status")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="give up waiting after this long")


def add_full_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help=f"print the whole answer (without it, a text answer is cut after {ANSWER:,} characters)")


def add_install_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", help="the server's name in the host (default: the server's own name)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the server the host starts (repeatable)")
    parser.add_argument("--print", action="store_true", dest="printing",
                        help="print the entry as JSON instead of writing the host's file")


def add_host(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", metavar="HOST", choices=list(hosts.HOSTS), help=", ".join(hosts.HOSTS))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minimcp", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run, look at and call Model Context Protocol servers; install them into MCP hosts.",
        epilog="Every verb takes TARGET: " + TARGET_HELP + ".\nminimcp VERB --help shows a verb's options.")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    connect = argparse.ArgumentParser(add_help=False)  # what a verb that connects as a client takes
    add_era_options(connect)
    add_remote_options(connect)
    remote = argparse.ArgumentParser(add_help=False)  # install writes a URL's headers, and connects to nothing
    add_remote_options(remote)

    def verb(name: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        summary, examples = VERBS[name]
        return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                              epilog=f"examples:\n  {examples}\n\nTARGET: {TARGET_HELP}.",
                              formatter_class=argparse.RawDescriptionHelpFormatter, parents=list(parents))

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("target", metavar="TARGET", help="the server (see below)")

    run = verb("run")
    target(run)
    add_serving_options(run)

    proxy = verb("proxy", remote)
    target(proxy)
    add_serving_options(proxy)
    proxy.add_argument("--era", choices=ERAS, default="auto",
                       help="the protocol era to speak to the upstream: auto (try 2026-07-28, fall back to the "
                            "handshake), legacy, or a version; clients of the proxy may speak either")
    proxy.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="how long one call to the upstream may take before its caller is told it timed out (120)")

    inspect = verb("inspect", connect)
    target(inspect)
    add_inspect_options(inspect)

    call = verb("call", connect)
    target(call)
    add_call_options(call)

    read = verb("read", connect)
    target(read)
    read.add_argument("uri", metavar="URI")
    read.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_full_option(read)

    prompt = verb("prompt", connect)
    target(prompt)
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("arguments", nargs="*", metavar="key=value", help="the prompt's arguments")
    prompt.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_full_option(prompt)

    dev = verb("dev")
    target(dev)
    dev.add_argument("--host", default="127.0.0.1", help="the address to listen on (127.0.0.1)")
    dev.add_argument("--port", type=int, default=8000, help="the port (8000; 0 picks a free one, kept on reload)")

    install = verb("install", remote)
    add_host(install)
    target(install)
    add_install_options(install)
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The words before ``--`` and the command after it; COMMAND takes TARGET's place (after HOST
    for install), and a bare ``--json`` before a key=value word is kept from swallowing it."""
    words = list(argv)
    command: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, command = words[:at], words[at + 1:]
        if words and command:
            place = 2 if words[0] == "install" and len(words) > 1 and not words[1].startswith("-") else 1
            words.insert(place, COMMAND)
    return (bare_json(words) if words[:1] == ["call"] else words), command


def bare_json(words: list[str]) -> list[str]:
    """``call``'s ``--json`` takes ARGS only when JSON (or ``-``) follows: a bare one must not eat a key=value."""
    words = list(words)
    for i, word in enumerate(words):
        if word == "--json":
            following = words[i + 1] if i + 1 < len(words) else ""
            if not (following.lstrip().startswith(("{", "[")) or following == "-"):
                words[i] = "--json="
    return words


def parse(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """Parse, keeping key=value words that follow an option (argparse ends a '*' positional early)."""
    options, extra = parser.parse_known_args(words)
    if "arguments" in options and not any(word.startswith("-") and word != "-" for word in extra):
        options.arguments += extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return options


def dispatch(options: argparse.Namespace, command: list[str]) -> int:
    text = None if options.target == COMMAND else options.target
    target = parse_target(text, command)
    out = sys.stdout
    if options.verb == "run":
        return serve.run(target, options)
    if options.verb == "dev":
        return serve.dev(target, options)
    headers = request_headers(options.header, options.token)
    if options.verb == "proxy":
        if headers and target.url is None:
            raise CLIError("--header and --token are sent to a URL; a file or a command is not reached over HTTP")
        return proxying.proxy(target, options, headers)
    if options.verb == "install":
        name = options.name or _default_name(target)
        entry = hosts.entry_for(hosts.HOSTS[options.host], target, hosts.parse_env(options.env), headers)
        return hosts.install(options.host, name, entry, options.printing, out)
    if headers and target.url is None:
        raise CLIError("--header and --token are sent to a URL; a file or a command is not reached over HTTP")
    connection = Connection(target, era=options.era, headers=headers, log_level=options.log_level)
    return {"inspect": verbs.inspect, "call": verbs.call, "read": verbs.read, "prompt": verbs.prompt}[options.verb](
        connection, options, out)


def _default_name(target: Target) -> str:
    """The server's own name for a file (as the official install names it), else one from the target."""
    if target.file is not None:
        try:
            return str(load_server(target).name)
        except ImportError:  # its dependencies are not installed here; the host's Python may have them
            return target.file.stem
    if target.url is not None:
        return urlsplit(target.url).hostname or "server"
    last = target.command[-1]
    return last.rsplit("/", 1)[-1].removesuffix(".py") or "server"


def main(argv: Sequence[str] | None = None) -> int:
    words, command = split_command(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    options = parse(parser, words)
    if command and COMMAND not in words:
        parser.error("a command after -- takes the place of TARGET; put the verb first: minimcp inspect -- python "
                     "server.py")
    return guarded(lambda: dispatch(options, command), " ".join(command) if command else options.target,
                   bool(command))


def guarded(verb: Callable[[], int], where: str, command: bool = False) -> int:
    """Run a verb, turning what stops it into a message on stderr and its exit code."""
    try:
        return verb()
    except CLIError as failure:
        return _fail(str(failure), failure.code)
    except MCPError as failure:
        return _fail(f"{where}: {_explained(failure)}")
    except OAuthFlowError as failure:
        return _fail(f"{where}: {_sign_in_failed(failure)}")
    except (NetworkError, requests.RequestException, InputRequiredRoundsExceededError,
            ValidationError, TimeoutError) as failure:
        return _fail(f"{where}: {type(failure).__name__}: {failure}")
    except BrokenPipeError:  # the reader left (| head): nothing more to say, and nowhere to say it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED
    except OSError as failure:
        return _fail(f"{failure}" + (" (is the command after -- installed and on PATH?)" if command else ""))
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130


def _explained(failure: MCPError) -> str:
    """An MCP error as the user reads it: an HTTP refusal of the credentials (no MCP answer at all,
    just a status and a challenge) says which flag to change, not only the JSON-RPC stand-in code."""
    refusal = failure.data if isinstance(failure.data, dict) else {}
    status = refusal.get("status")
    if status not in (401, 403):
        shown = f"MCP error {failure.code}: {failure.message}"
        return shown if status is None else f"{shown} (HTTP {status})"
    challenge = refusal.get("wwwAuthenticate")
    reason = ", ".join(part for part in (challenge_param(challenge, "error"),
                                         challenge_param(challenge, "error_description")) if part)
    said = f"HTTP {status}" + (f": {reason}" if reason else "")
    if status == 401:
        return (f"the server refused the credentials ({said}); check --token or --header, or leave them out "
                "to sign in through the browser")
    scope = challenge_param(challenge, "scope")
    needs = f" (it asks for scope {scope!r})" if scope else ""
    return (f"the server refused the call ({said}): the token lacks a permission the call needs{needs}; "
            "use a token that carries it, or leave --token out to sign in again")


def _sign_in_failed(failure: OAuthFlowError) -> str:
    """A sign-in that failed, as the user reads it: first what the server said when it refused (a
    server that takes API tokens says there how to get one), then why signing in failed, then the
    flags that give credentials. A registration error alone would hide all that."""
    failed = f"{type(failure).__name__}: {failure}"
    refusal = failure.refusal
    if refusal is None:
        return failed
    said = refusal.said
    return (f"the server refused the request (HTTP {refusal.status}" + (f": {cut(said, MESSAGE // 4)}" if said else "")
            + f"), and signing in through the browser failed ({failed}); give credentials with --token TOKEN "
            "or --header 'NAME: VALUE'")


def _fail(message: str, code: int = FAILED) -> int:
    """The message on stderr: it may quote the server (an error, a refusal), so printable and bounded."""
    sys.stderr.write(f"minimcp: {cut(printable(message, lines=True), MESSAGE)}\n")
    sys.stderr.flush()
    return code
