"""TARGET, the same for every verb: a server file, a URL, or a command line after ``--``.

A file is imported and its server object found as the official ``mcp run`` finds it (``mcp``,
``server``, then ``app``, or the name after ``file.py:``), and the client talks to it in memory, so
a file needs no port and its import errors come back as they are. A URL is Streamable HTTP; a
command is started and spoken to over stdio with the caller's own environment, as a shell would.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minimcp.cli.errors import CLIError
from minimcp.client.auth.browser import browser_login
from minimcp.client.client import Client
from minimcp.client.session import ElicitationFnT, LoggingFnT
from minimcp.client.stdio import StdioServerParameters
from minimcp.types import LoggingLevel

#: The names the official ``mcp run`` tries, in its order, when a file names no object.
SERVER_NAMES = ("mcp", "server", "app")
#: The module name a server file is imported under: not ``__main__``, so its ``mcp.run()`` stays put.
MODULE_NAME = "__minimcp_server__"

HOW_TO_NAME = ("give a server file (server.py or server.py:mcp), a URL (http://127.0.0.1:8000/mcp), "
               "or a command after -- (minimcp inspect -- python server.py)")


@dataclass(frozen=True)
class Target:
    """What the user pointed at; exactly one of ``file``, ``url`` and ``command`` is set."""

    file: Path | None = None
    obj: str | None = None
    url: str | None = None
    command: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        """The file as ``mcp run`` takes it: absolute, with its ``:obj`` when one was named."""
        assert self.file is not None
        return f"{self.file}:{self.obj}" if self.obj else str(self.file)


def parse_target(text: str | None, command: list[str]) -> Target:
    """Read TARGET; ``command`` is what followed ``--`` on the command line."""
    if command:
        if text is not None:
            raise CLIError(f"both a TARGET ({text}) and a command after -- were given: keep one")
        return Target(command=tuple(command))
    if not text:
        raise CLIError(f"no TARGET: {HOW_TO_NAME}")
    if text.startswith(("http://", "https://")):
        return Target(url=text)
    path, obj = _split_object(text)
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise CLIError(f"{path}: no such file; {HOW_TO_NAME}")
    return Target(file=file, obj=obj)


def _split_object(text: str) -> tuple[str, str | None]:
    """``server.py:obj`` into its parts, leaving a Windows drive letter (``C:\\...``) alone."""
    drive = len(text) > 1 and text[1] == ":"
    if ":" in (text[2:] if drive else text):
        path, obj = text.rsplit(":", 1)
        return path, obj or None
    return text, None


def load_server(target: Target) -> Any:
    """Import the target's file and return its server object (an ``MCPServer`` or a ``Server``)."""
    assert target.file is not None
    folder = str(target.file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file's own imports of its neighbours resolve, as under `python file.py`
    spec = importlib.util.spec_from_file_location(MODULE_NAME, target.file)
    if spec is None or spec.loader is None:
        raise CLIError(f"{target.file} cannot be imported as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module  # pydantic resolves a model's annotations through its module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as failed:  # the file's own code failed: a message, not our traceback
        sys.modules.pop(MODULE_NAME, None)
        raise CLIError(f"{target.file} failed while being imported: {_failure(failed, target.file)}") from None
    if target.obj:
        server = getattr(module, target.obj, None)
        if server is None:
            raise CLIError(f"{target.file} has no {target.obj!r}; name its server object after the colon")
        if not _is_server(server):
            raise CLIError(f"{target.spec} is a {type(server).__name__}, not an MCP server (MCPServer or Server)")
        return server
    for name in SERVER_NAMES:
        if _is_server(getattr(module, name, None)):
            return getattr(module, name)
    raise CLIError(f"no server object in {target.file}: name it mcp, server or app at module level, "
                   f"or say which with {target.file.name}:NAME")


def _failure(failed: BaseException, file: Path) -> str:
    """What went wrong in ``file``'s own code, and where: the last line of it the traceback passed
    through (a syntax error's own line), or nothing when the failure never reached it."""
    said = f"{type(failed).__name__}: {failed}" if str(failed) else type(failed).__name__
    if isinstance(failed, SystemExit):
        said = f"it called sys.exit({failed.code!r})"
    if isinstance(failed, SyntaxError) and failed.lineno is not None:
        return f"{type(failed).__name__}: {failed.msg} (line {failed.lineno})"
    here = [frame for frame in traceback.extract_tb(failed.__traceback__) if Path(frame.filename) == file]
    if not here:
        return said
    frame = here[-1]
    return f"{said} (line {frame.lineno}: {(frame.line or '').strip()})"


def _is_server(value: Any) -> bool:
    return hasattr(value, "in_memory_endpoint") and hasattr(value, "run")


@dataclass
class Connection:
    """How to reach the target: the options every verb shares."""

    target: Target
    era: str = "auto"
    headers: dict[str, str] = field(default_factory=dict)  # for a URL; see request_headers
    log_level: LoggingLevel | None = "info"

    def client(self, stack: ExitStack, *, elicitation: ElicitationFnT | None = None,
               logging: LoggingFnT | None = None) -> Client:
        """A connected ``Client``; what it holds (a subprocess, HTTP connections, the sign-in's
        loopback port) is released when ``stack`` closes."""
        target = self.target
        reach: dict[str, Any] = {}
        if target.file is not None:
            server: Any = load_server(target)
        elif target.command:
            server = StdioServerParameters(command=target.command[0], args=list(target.command[1:]),
                                           env=dict(os.environ))
        else:
            server = target.url
            reach = {"headers": self.headers or None, "auth": self._sign_in(stack)}
        client = Client(server, mode=self.era, elicitation_callback=elicitation, logging_callback=logging,
                        log_level=self.log_level if logging else None, **reach)
        return stack.enter_context(client)

    def _sign_in(self, stack: ExitStack) -> Any:
        """A browser sign-in, which acts only when the server answers 401; none when the caller
        sends an Authorization header of their own."""
        if any(name.lower() == "authorization" for name in self.headers):
            return None
        assert self.target.url is not None
        auth = browser_login(self.target.url)
        stack.callback(auth.close)
        return auth


def request_headers(headers: list[str], token: str | None) -> dict[str, str]:
    """The headers of ``--header`` and ``--token`` for a URL: what a client sends, and what install writes."""
    parsed = dict(parse_header(text) for text in headers)
    if token:
        parsed["Authorization"] = f"Bearer {token}"
    return parsed


def parse_header(text: str) -> tuple[str, str]:
    """``--header 'Name: value'`` into its parts, as curl takes it."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise CLIError(f"--header {text!r}: write it as NAME:VALUE, e.g. --header 'X-Api-Key: s3cret'")
    return name.strip(), value.strip()
