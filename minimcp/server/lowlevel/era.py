"""The two protocol eras as objects: every rule that differs between them has its home here.

A legacy connection (opened by ``initialize``, 2024-11-05 to 2025-11-25) and a 2026-07-28 request
(self-contained, its version in ``_meta``) get one of the two era objects when the transport
classifies them, and the core asks the object instead of branching on a flag:

- ``ask_back``: whether a question can travel to the client as a server-to-client request (legacy)
  or must come back as ``input_required`` (2026-07-28);
- ``unexpected``: what the client learns of a failure nobody anticipated;
- ``resource_not_found``: the code of an unknown resource;
- ``finish``: how a result is decorated on the wire (``resultType``, caching hints, ``serverInfo``);
- ``log_by_default``: whether protocol logging flows before the client asked for a level;
- ``url_elicitation``: whether a URL elicitation names its ``elicitationId``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from minimcp.jsonrpc import MCPError
from minimcp.types import INTERNAL_ERROR, INVALID_PARAMS, META_SERVER_INFO, RESOURCE_NOT_FOUND, InputRequiredResult


class Era(ABC):
    """The rules of one protocol era; stateless, so one instance of each serves every request."""

    name: str
    legacy: bool
    ask_back: bool
    log_by_default: bool
    resource_not_found: int

    @abstractmethod
    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        """The error a client gets for an exception no handler anticipated."""

    @abstractmethod
    def finish(self, result: Any, wire: dict[str, Any], cache_scope: str | None, ttl_ms: int,
               server_info: dict[str, Any]) -> None:
        """Decorate (or refuse) a handler's result in wire form, in place."""

    @abstractmethod
    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        """The ``elicitation/create`` params of a URL question."""


class LegacyEra(Era):
    """2024-11-05 to 2025-11-25: a session, server-to-client requests, the official SDK's error parity."""

    name = "legacy"
    legacy = True
    ask_back = True
    log_by_default = True
    resource_not_found = RESOURCE_NOT_FOUND

    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        return MCPError(0, str(exc))  # what the official SDK sends, for wire parity

    def finish(self, result: Any, wire: dict[str, Any], cache_scope: str | None, ttl_ms: int,
               server_info: dict[str, Any]) -> None:
        if isinstance(result, InputRequiredResult) or (isinstance(wire, dict)
                                                       and wire.get("resultType") == "input_required"):
            raise MCPError(INTERNAL_ERROR, "Handler returned an invalid result")

    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        return {**params, "elicitationId": elicitation_id}


class ModernEra(Era):
    """2026-07-28: self-contained requests, ``input_required`` rounds, sanitized internal errors."""

    name = "2026-07-28"
    legacy = False
    ask_back = False
    log_by_default = False
    resource_not_found = INVALID_PARAMS

    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        return MCPError(INTERNAL_ERROR, str(exc) if expose else "Internal server error")

    def finish(self, result: Any, wire: dict[str, Any], cache_scope: str | None, ttl_ms: int,
               server_info: dict[str, Any]) -> None:
        wire.setdefault("resultType", "complete")
        if wire["resultType"] == "complete" and cache_scope is not None:
            wire.setdefault("ttlMs", ttl_ms)
            wire.setdefault("cacheScope", cache_scope)
        wire.setdefault("_meta", {}).setdefault(META_SERVER_INFO, server_info)

    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        return params


LEGACY = LegacyEra()
MODERN = ModernEra()
