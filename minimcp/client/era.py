"""The client's side of the two protocol eras: every rule that differs has its home here.

``ClientSession`` settles on a protocol version (``initialize`` for the legacy handshake,
``server/discover`` or ``use_version`` for 2026-07-28) and from then on asks its era object
instead of branching on the version:

- ``stamp``: what each request carries beyond its params (2026-07-28: the ``_meta`` declarations);
- ``request_headers``: the HTTP headers naming the request (2026-07-28: ``Mcp-Method``,
  ``Mcp-Name``, ``Mcp-Param-*``), beyond the ``MCP-Protocol-Version`` both eras send;
- ``session_expired``: what a 404 on the session costs (legacy: one fresh ``initialize``);
- ``retry``: which error answers earn one retry (2026-07-28: ``-32022`` naming a version we speak,
  ``-32020`` after relisting a redefined tool);
- ``check_listen``: whether ``subscriptions/listen`` exists (2026-07-28 only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from minimcp.client.subscriptions import ListenNotSupportedError
from minimcp.jsonrpc import MCPError
from minimcp.shared.header_values import TARGET_PARAMS, encode_header_value
from minimcp.types import (
    HEADER_MISMATCH,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    dump,
)

if TYPE_CHECKING:
    from minimcp.client.session import ClientSession


class ClientEra(ABC):
    """The rules of one era as the client keeps them; stateless, one instance each."""

    @abstractmethod
    def stamp(self, session: ClientSession, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` as this era sends them."""

    @abstractmethod
    def request_headers(self, session: ClientSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        """The headers that name this request, beyond ``MCP-Protocol-Version``."""

    @abstractmethod
    def session_expired(self, session: ClientSession, restarted: bool) -> bool:
        """The server forgot our session: whether to send the request again (after starting over)."""

    @abstractmethod
    def retry(self, session: ClientSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        """Whether ``failure`` earns one more try; ``retried`` holds the codes that already had theirs."""

    @abstractmethod
    def check_listen(self, session: ClientSession) -> None:
        """Refuse ``subscriptions/listen`` where the era has none."""

    def direct_progress(self, session: ClientSession) -> bool:
        """Whether progress reaches only the request's progress callback, with its values as the
        server gave them (``1`` stays an int), rather than as a parsed notification that the
        ``message_handler`` sees too: the official SDK's in-process 2026-07-28 path, which carries no
        JSON-RPC framing."""
        return False


class LegacyClientEra(ClientEra):
    """2024-11-05 to 2025-11-25: a session negotiated once, requests as they are."""

    def stamp(self, session: ClientSession, params: dict[str, Any]) -> dict[str, Any]:
        return params

    def request_headers(self, session: ClientSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        return {}

    def session_expired(self, session: ClientSession, restarted: bool) -> bool:
        if restarted:
            return False
        session.initialize()  # the spec's rule for a 404 on a legacy session: a fresh initialize
        return True

    def retry(self, session: ClientSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        return False

    def check_listen(self, session: ClientSession) -> None:
        raise ListenNotSupportedError(session.protocol_version)


class ModernClientEra(ClientEra):
    """2026-07-28: every request carries who we are; the server keeps nothing."""

    def direct_progress(self, session: ClientSession) -> bool:
        return bool(getattr(session.transport, "in_process", False))

    def stamp(self, session: ClientSession, params: dict[str, Any]) -> dict[str, Any]:
        meta = dict(params.get("_meta") or {})
        meta[META_PROTOCOL_VERSION] = session.protocol_version
        meta[META_CLIENT_CAPABILITIES] = dump(session.capabilities)
        meta[META_CLIENT_INFO] = dump(session.client_info)
        if session.log_level is not None:
            meta[META_LOG_LEVEL] = session.log_level
        return {**params, "_meta": meta}

    def request_headers(self, session: ClientSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        headers = {"Mcp-Method": method}
        params = params or {}
        name_param = TARGET_PARAMS.get(method)
        if name_param is not None and isinstance(params.get(name_param), str):
            headers["Mcp-Name"] = encode_header_value(params[name_param]) or ""
        if method == "tools/call":
            arguments = params.get("arguments") or {}
            for argument, header in session._header_parameters(params.get("name", "")).items():
                value = encode_header_value(arguments.get(argument))
                if value is not None:
                    headers[f"Mcp-Param-{header}"] = value
        return headers

    def session_expired(self, session: ClientSession, restarted: bool) -> bool:
        return False  # a 2026-07-28 request has no session to lose: the 404 is the answer

    def retry(self, session: ClientSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        code = failure.code
        if code in retried:
            return False
        if code == UNSUPPORTED_PROTOCOL_VERSION:
            earned = session._adopt(failure.data)
        elif code == HEADER_MISMATCH and method == "tools/call":
            earned = session._relearn_headers(params.get("name"))
        else:
            earned = False
        if earned:
            retried.add(code)
        return earned

    def check_listen(self, session: ClientSession) -> None:
        return None  # a listen is an ordinary 2026-07-28 request


LEGACY = LegacyClientEra()
MODERN = ModernClientEra()


def client_era(protocol_version: str | None) -> ClientEra:
    """The era of a negotiated version (legacy until one is known: nothing is stamped yet)."""
    return MODERN if protocol_version in MODERN_PROTOCOL_VERSIONS else LEGACY
