"""Proxies and gateways: serve another MCP server, or several, as this one.

    from minimcp.server import create_proxy

    proxy = create_proxy("http://127.0.0.1:8000/mcp")          # or a command, an MCPServer,
    proxy.run()                                                  # or {"mcpServers": {...}}

The proxy speaks both protocol eras to its clients and whichever each upstream speaks, relaying
questions (elicitation, sampling, roots), progress, log lines, cancellation and tasks between
them (``relay``); an upstream that is down, slow, garbled or gone fails its calls with an error
naming it (``upstream``) while the others are served. A configuration of several is a ``Gateway``:
one ``ProxyServer`` per upstream, mounted under its name (``MCPServer.mount``'s rule of names).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from minimcp.client.stdio import StdioServerParameters
from minimcp.server.app.proxy.config import (
    ProxyConfigError,
    UpstreamSpec,
    is_configuration,
    read_configuration,
    target_spec,
)
from minimcp.server.app.proxy.provider import MirroredTool
from minimcp.server.app.proxy.server import Gateway, ProxyServer
from minimcp.server.app.proxy.upstream import Credentials, Reach, Upstream, UpstreamFailure

__all__ = ["Credentials", "Gateway", "MirroredTool", "ProxyConfigError", "ProxyServer", "Reach", "Upstream",
           "UpstreamFailure", "UpstreamSpec", "create_proxy"]


def create_proxy(target: Any, name: str | None = None, *, upstream_name: str | None = None,
                 timeout: float | None = None, connect_timeout: float | None = None, mode: str | None = None,
                 headers: Mapping[str, str] | None = None, credentials: Any = None,
                 **options: Any) -> ProxyServer | Gateway:
    """A server serving ``target``: a URL, a command (a string or a list), ``StdioServerParameters``,
    an ``MCPServer``, or an ``mcpServers`` configuration (a mapping, or the path of its JSON file),
    whose upstreams, when several, are each served under their name (a ``Gateway``, mounting a
    ``ProxyServer`` per upstream).

    ``timeout``, ``connect_timeout``, ``mode`` and ``headers`` describe a single target (a
    configuration says them per entry). ``credentials`` is what an HTTP upstream is reached with
    besides its headers (``ProxyServer``'s): for a configuration, by upstream name; for a single
    target, its credential itself (``lambda user: {"Authorization": ...}``, or an auth object).
    The other keywords are ``ProxyServer``'s and ``MCPServer``'s.
    """
    if is_configuration(target):
        if credentials is not None and not isinstance(credentials, Mapping):
            raise ProxyConfigError("a configuration's credentials are given by upstream name: "
                                   "credentials={\"billing\": lambda user: {...}}")
        options["credentials"] = credentials
        if any(given is not None for given in (upstream_name, timeout, connect_timeout, mode, headers)):
            raise ProxyConfigError("a configuration says timeout, connect_timeout, mode and headers per entry, "
                                   "in its mcpServers")
        specs = list(read_configuration(target).values())
        return Gateway(specs, name, **options) if len(specs) > 1 else ProxyServer(specs, name, **options)
    settings: dict[str, Any] = {key: value for key, value in (
        ("timeout", timeout), ("connect_timeout", connect_timeout), ("mode", mode), ("headers", headers))
        if value is not None}
    spec = target_spec(upstream_name or _name_of(target), target, **settings)
    return ProxyServer([spec], name, credentials=None if credentials is None else {spec.name: credentials}, **options)


def _name_of(target: Any) -> str:
    """A name for an upstream given without one: its host, its program, or its server's name."""
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        return urlsplit(target).hostname or "upstream"
    if isinstance(target, (str, list, tuple, StdioServerParameters)):
        words = target.split() if isinstance(target, str) else (
            [target.command, *target.args] if isinstance(target, StdioServerParameters) else list(target))
        last = Path(words[-1]).name if words else ""
        return last.removesuffix(".py") or "upstream"
    return str(getattr(target, "name", None) or "upstream")
