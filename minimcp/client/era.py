"""The client's side of the two protocol eras: every rule that differs has its home here.

``negotiate`` settles a ``ClientSession`` on a protocol version as ``Client(mode=...)`` says
(``initialize`` for the legacy handshake, ``server/discover`` or ``use_version`` for 2026-07-28;
``check_mode`` refuses a mode that names neither), and from then on the session asks its era object
instead of branching on the version. The era objects use only the part of ``ClientSession``'s
public surface that ``EraSession`` names, so this module stays below the session that uses it.

- ``speaks``, ``settle``: which versions are the era's, and which one an answer settles on;
- ``carries_claims``: whether extension result shapes (``ResultClaim``) travel at all (2026-07-28 only);
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
from typing import Any, Protocol

from pydantic import ValidationError

from minimcp.client.transports import NetworkError, Transport
from minimcp.jsonrpc import MCPError
from minimcp.shared.inbound import TARGET_PARAMS, encoded_header
from minimcp.types import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    HEADER_MISMATCH,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    ClientCapabilities,
    DiscoverResult,
    Implementation,
    InitializeResult,
    LoggingLevel,
    dump,
)


class ListenNotSupportedError(RuntimeError):
    """``subscriptions/listen`` needs a 2026-07-28 connection."""

    def __init__(self, negotiated_version: str | None) -> None:
        self.negotiated_version = negotiated_version
        super().__init__(
            f"subscriptions/listen is not available at protocol version {negotiated_version!r}; it requires "
            "2026-07-28. On earlier versions use subscribe_resource() and the change notifications delivered "
            "through message_handler."
        )


class EraSession(Protocol):
    """What the era rules read and do on a ``ClientSession``: the negotiated version (which a
    retry may move), what every 2026-07-28 request declares, and the requests that negotiate."""

    protocol_version: str | None

    @property
    def era(self) -> ClientEra: ...

    @property
    def capabilities(self) -> ClientCapabilities: ...

    @property
    def client_info(self) -> Implementation: ...

    @property
    def log_level(self) -> LoggingLevel | None: ...

    @property
    def transport(self) -> Transport: ...

    def initialize(self) -> InitializeResult: ...

    def discover(self) -> DiscoverResult: ...

    def use_version(self, version: str, prior_discover: DiscoverResult | None = None) -> None: ...

    def header_parameters(self, tool_name: Any) -> dict[str, str]: ...

    def relearn_headers(self, tool_name: Any) -> bool: ...


class ClientEra(ABC):
    """The rules of one era as the client keeps them; stateless, one instance each."""

    #: The protocol versions of this era we speak, oldest first.
    versions: tuple[str, ...]
    #: Whether an extension's claimed result shapes travel on this era's connections.
    carries_claims: bool
    #: Whether a request's own exchange closing (its HTTP connection shut) is its cancellation, so
    #: no ``notifications/cancelled`` follows (2026-07-28); in legacy a disconnect is no cancellation.
    cancels_by_closing: bool

    # --- which versions, which one ---------------------------------------------------------
    def speaks(self, version: object) -> bool:
        """Whether ``version`` is one of this era's that we speak."""
        return version in self.versions

    def common(self, supported: object) -> str | None:
        """Our first version of this era that the server's ``supported`` list names, if any."""
        names = supported if isinstance(supported, list) else ()
        return next((version for version in self.versions if version in names), None)

    @abstractmethod
    def stamp(self, session: EraSession, params: dict[str, Any], version: str | None = None) -> dict[str, Any]:
        """``params`` as this era sends them, at ``version`` (by default the negotiated one)."""

    @abstractmethod
    def request_headers(self, session: EraSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        """The headers that name this request, beyond ``MCP-Protocol-Version``."""

    @abstractmethod
    def session_expired(self, session: EraSession, restarted: bool) -> bool:
        """The server forgot our session: whether to send the request again (after starting over)."""

    @abstractmethod
    def retry(self, session: EraSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        """Whether ``failure`` earns one more try; ``retried`` holds the codes that already had theirs."""

    @abstractmethod
    def check_listen(self, session: EraSession) -> None:
        """Refuse ``subscriptions/listen`` where the era has none."""

    def direct_progress(self, session: EraSession) -> bool:
        """Whether progress reaches only the request's progress callback, with its values as the
        server gave them (``1`` stays an int), rather than as a parsed notification that the
        ``message_handler`` sees too: the official SDK's in-process 2026-07-28 path, which carries no
        JSON-RPC framing."""
        return False

    @abstractmethod
    def describe_server(self, session: EraSession) -> None:
        """Make sure ``session.server_info`` names the server (``minimcp inspect`` shows it)."""


class LegacyClientEra(ClientEra):
    """2024-11-05 to 2025-11-25: a session negotiated once, requests as they are."""

    versions = HANDSHAKE_PROTOCOL_VERSIONS
    carries_claims = False
    cancels_by_closing = False

    def settle(self, answered: str) -> str:
        """The version an ``initialize`` answer settles on: the one it names, which must be ours."""
        if not self.speaks(answered):
            raise RuntimeError(f"Unsupported protocol version from the server: {answered}")
        return answered

    def named_in(self, refusal: Any) -> bool:
        """Whether a ``-32022`` refusal's data leaves the handshake open: it names a handshake
        version, or names none at all (it says nothing of the server's era)."""
        supported = refusal.get("supported") if isinstance(refusal, dict) else None
        return not isinstance(supported, list) or any(self.speaks(version) for version in supported)

    def stamp(self, session: EraSession, params: dict[str, Any], version: str | None = None) -> dict[str, Any]:
        return params

    def request_headers(self, session: EraSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        return {}

    def session_expired(self, session: EraSession, restarted: bool) -> bool:
        if restarted:
            return False
        session.initialize()  # the spec's rule for a 404 on a legacy session: a fresh initialize
        return True

    def retry(self, session: EraSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        return False

    def check_listen(self, session: EraSession) -> None:
        raise ListenNotSupportedError(session.protocol_version)

    def describe_server(self, session: EraSession) -> None:
        """Nothing to do: ``initialize`` named the server."""


class ModernClientEra(ClientEra):
    """2026-07-28: every request carries who we are; the server keeps nothing."""

    versions = MODERN_PROTOCOL_VERSIONS
    carries_claims = True
    cancels_by_closing = True

    def settle(self, supported: list[str]) -> str:
        """The version a ``server/discover`` answer settles on; ``MCPError`` when it names none of ours."""
        version = self.common(supported)
        if version is None:
            raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "No mutually supported 2026-07-28-era protocol version",
                           {"supported": supported})
        return version

    def direct_progress(self, session: EraSession) -> bool:
        return bool(getattr(session.transport, "in_process", False))

    def describe_server(self, session: EraSession) -> None:
        """Ask ``server/discover``: a pinned version skips the probe that names the server."""
        session.discover()

    def stamp(self, session: EraSession, params: dict[str, Any], version: str | None = None) -> dict[str, Any]:
        meta = dict(params.get("_meta") or {})
        meta[META_PROTOCOL_VERSION] = version or session.protocol_version
        meta[META_CLIENT_CAPABILITIES] = dump(session.capabilities)
        meta[META_CLIENT_INFO] = dump(session.client_info)
        if session.log_level is not None:
            meta[META_LOG_LEVEL] = session.log_level
        return {**params, "_meta": meta}

    def request_headers(self, session: EraSession, method: str,
                        params: Mapping[str, Any] | None) -> dict[str, str]:
        headers = {"Mcp-Method": method}
        params = params or {}
        name_param = TARGET_PARAMS.get(method)
        if name_param is not None and isinstance(params.get(name_param), str):
            headers["Mcp-Name"] = encoded_header(params[name_param]) or ""
        if method == "tools/call":
            arguments = params.get("arguments") or {}
            for argument, header in session.header_parameters(params.get("name", "")).items():
                value = encoded_header(arguments.get(argument))
                if value is not None:
                    headers[f"Mcp-Param-{header}"] = value
        return headers

    def session_expired(self, session: EraSession, restarted: bool) -> bool:
        return False  # a 2026-07-28 request has no session to lose: the 404 is the answer

    def retry(self, session: EraSession, failure: MCPError, method: str, params: dict[str, Any],
              retried: set[int]) -> bool:
        code = failure.code
        if code in retried:
            return False
        if code == UNSUPPORTED_PROTOCOL_VERSION:
            version = self.common(failure.data.get("supported") if isinstance(failure.data, dict) else None)
            earned = version is not None
            if version is not None:
                session.protocol_version = version
        elif code == HEADER_MISMATCH and method == "tools/call":
            earned = session.relearn_headers(params.get("name"))
        else:
            earned = False
        if earned:
            retried.add(code)
        return earned

    def check_listen(self, session: EraSession) -> None:
        return None  # a listen is an ordinary 2026-07-28 request


LEGACY = LegacyClientEra()
MODERN = ModernClientEra()


def client_era(protocol_version: str | None) -> ClientEra:
    """The era of a negotiated version (legacy until one is known: nothing is stamped yet)."""
    return MODERN if MODERN.speaks(protocol_version) else LEGACY


#: The ``Client(mode=...)`` values that name a way to negotiate rather than one version.
NEGOTIATING_MODES = ("legacy", "auto")


def check_mode(mode: str) -> None:
    """Refuse a ``Client(mode=...)`` that is neither a way to negotiate nor a 2026-07-28 version we
    speak, naming a handshake version's proper spelling (``mode='legacy'``)."""
    if mode in NEGOTIATING_MODES or MODERN.speaks(mode):
        return
    text = f"mode must be 'legacy', 'auto', or one of {list(MODERN.versions)!r}; got {mode!r}"
    if LEGACY.speaks(mode):
        text += f" ({mode!r} is a handshake-era version; use mode='legacy')"
    raise ValueError(text)


def negotiate(session: EraSession, mode: str, prior_discover: DiscoverResult | None = None) -> ClientEra:
    """Settle ``session`` on the era ``mode`` names and return it: ``legacy`` (the handshake), one
    2026-07-28 version (no traffic; ``prior_discover`` is what the server is known to offer), or
    ``auto``: one ``server/discover`` probe; a modern answer settles it, any other answer (an error,
    a non-discover result) means a legacy server, except a -32022 that names only modern versions
    we lack: that server is modern and will not talk to us at all. No answer (a network error) is
    raised as it is, as the official client does: it tells nothing of the server's era, and the
    handshake would only fail the same way, later."""
    if mode == "legacy":
        session.initialize()
    elif mode != "auto":
        session.use_version(mode, prior_discover)
    elif not _discovered(session):
        session.initialize()
    return session.era


def _discovered(session: EraSession) -> bool:
    """``auto``'s probe: whether ``server/discover`` settled ``session`` on 2026-07-28 (``False``:
    the server is a legacy one, so the handshake comes next)."""
    try:
        session.discover()
        return True
    except NetworkError:
        raise
    except MCPError as failure:
        if failure.code == UNSUPPORTED_PROTOCOL_VERSION and not LEGACY.named_in(failure.data):
            raise
    except ValidationError:
        pass
    return False
