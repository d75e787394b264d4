"""What a proxy stands in front of: one upstream (a URL, a command, a server object) or an
``mcpServers`` configuration of several, read into :class:`UpstreamSpec` values.

The configuration is the one MCP hosts write (Claude Desktop, Cursor, VS Code)::

    {"mcpServers": {
        "weather": {"url": "https://weather.example/mcp", "headers": {"Authorization": "Bearer ..."}},
        "files": {"command": "python", "args": ["files_server.py"], "env": {"ROOT": "/srv"}}}}

Each entry may also say how long its calls may take (``timeout``, seconds), how long connecting
may (``connect_timeout``) and which protocol era to speak (``mode``: ``auto``, ``legacy`` or a
2026-07-28 version). A mistake in it is a start-up error naming the entry and what to write.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minimcp.client.stdio import StdioServerParameters
from minimcp.server.app.namespace import NAMESPACE

#: Seconds one call to an upstream may take before the caller is told it timed out, naming the upstream.
DEFAULT_CALL_TIMEOUT = 120.0
#: Seconds opening a connection to an upstream may take (a process started and answering, a URL reached).
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Keys an ``mcpServers`` entry may hold besides its target's own.
_SETTINGS = {"timeout", "connect_timeout", "mode", "transport", "type", "description"}


class ProxyConfigError(ValueError):
    """A proxy target or ``mcpServers`` entry that cannot be served; the message says what to write."""


@dataclass(frozen=True)
class UpstreamSpec:
    """One upstream: its name (its namespace in a gateway of several), what ``Client``
    is given to reach it, and the bounds of its calls."""

    name: str
    #: A URL, ``StdioServerParameters``, or a server object in this process.
    target: Any
    headers: Mapping[str, str] = field(default_factory=dict)
    mode: str = "auto"
    timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT

    @property
    def where(self) -> str:
        """The upstream as an operator recognises it in an error: its URL or command line."""
        target = self.target
        if isinstance(target, str):
            return target
        if isinstance(target, StdioServerParameters):
            return shlex.join([target.command, *target.args])
        return f"in-process server {getattr(target, 'name', type(target).__name__)!r}"


def is_configuration(target: Any) -> bool:
    """Whether ``target`` is an ``mcpServers`` configuration (a mapping, or a ``.json`` file path)."""
    if isinstance(target, Mapping):
        return "mcpServers" in target
    return isinstance(target, Path) or (isinstance(target, str) and target.endswith(".json")
                                        and not target.startswith(("http://", "https://")))


def read_configuration(target: Any) -> dict[str, UpstreamSpec]:
    """The upstreams of an ``mcpServers`` configuration, by name, in the file's order."""
    if not isinstance(target, Mapping):
        path = Path(target)
        try:
            target = json.loads(path.read_text())
        except OSError as failed:
            raise ProxyConfigError(f"{path}: cannot read the configuration ({failed.strerror})") from None
        except json.JSONDecodeError as failed:
            raise ProxyConfigError(f"{path}: not JSON ({failed.msg}, line {failed.lineno})") from None
    servers = target.get("mcpServers") if isinstance(target, Mapping) else None
    if not isinstance(servers, Mapping) or not servers:
        raise ProxyConfigError('the configuration needs "mcpServers": {"NAME": {"url": ...} or {"command": ...}}, '
                               "with one entry at least")
    return {str(name): entry_spec(str(name), entry) for name, entry in servers.items()}


def entry_spec(name: str, entry: Any) -> UpstreamSpec:
    """One ``mcpServers`` entry as an ``UpstreamSpec``."""
    if not NAMESPACE.fullmatch(name):
        raise ProxyConfigError(f"mcpServers name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', starting "
                               "with a letter or digit (it is the namespace its tools, prompts and resources are "
                               "served under)")
    if not isinstance(entry, Mapping):
        raise ProxyConfigError(f"mcpServers.{name}: an object with \"url\" or \"command\", not {type(entry).__name__}")
    unknown = set(entry) - _SETTINGS - {"url", "headers", "command", "args", "env", "cwd"}
    if unknown:
        raise ProxyConfigError(f"mcpServers.{name}: unknown key(s) {sorted(unknown)}; an entry takes url and headers, "
                               f"or command, args, env and cwd, and optionally {sorted(_SETTINGS)}")
    bounds: dict[str, Any] = {key: _seconds(name, key, entry[key]) for key in ("timeout", "connect_timeout")
                              if key in entry}
    mode = entry.get("mode", "auto")
    if "url" in entry:
        if "command" in entry:
            raise ProxyConfigError(f"mcpServers.{name}: give \"url\" or \"command\", not both")
        url, headers = entry["url"], entry.get("headers") or {}
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ProxyConfigError(f"mcpServers.{name}.url: an http:// or https:// URL, not {url!r}")
        if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
            raise ProxyConfigError(f"mcpServers.{name}.headers: an object of header names to string values")
        return UpstreamSpec(name, url, dict(headers), mode=mode, **bounds)
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ProxyConfigError(f"mcpServers.{name}: give \"url\" (Streamable HTTP) or \"command\" (stdio)")
    args, env = entry.get("args") or [], entry.get("env")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ProxyConfigError(f"mcpServers.{name}.args: a list of strings")
    if env is not None and not (isinstance(env, Mapping) and all(isinstance(v, str) for v in env.values())):
        raise ProxyConfigError(f"mcpServers.{name}.env: an object of variable names to string values")
    params = StdioServerParameters(command=command, args=args, env=dict(env) if env else None, cwd=entry.get("cwd"))
    return UpstreamSpec(name, params, mode=mode, **bounds)


def target_spec(name: str, target: Any, **settings: Any) -> UpstreamSpec:
    """One upstream given directly: a URL, a command line (a string to split, or a list), a
    ``StdioServerParameters``, or a server object in this process."""
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        return UpstreamSpec(name, target, **settings)
    if isinstance(target, str):
        target = shlex.split(target)
    if isinstance(target, (list, tuple)):
        if not target or not all(isinstance(word, str) for word in target):
            raise ProxyConfigError(f"the command of upstream {name!r} must be a non-empty list of strings")
        target = StdioServerParameters(command=target[0], args=list(target[1:]))
    if isinstance(target, StdioServerParameters) or hasattr(target, "in_memory_endpoint"):
        return UpstreamSpec(name, target, **settings)
    raise ProxyConfigError(f"cannot proxy a {type(target).__name__}: give a URL, a command, an MCPServer, or an "
                           '{"mcpServers": {...}} configuration')


def _seconds(name: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ProxyConfigError(f"mcpServers.{name}.{key}: a positive number of seconds, not {value!r}")
    return float(value)
