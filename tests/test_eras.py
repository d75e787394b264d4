"""The era objects' own seams, both sides: which era a message or a negotiation lands on, the
connection each era builds, and what the client's eras ask of ``ClientSession``'s public surface.

The choosing rules are sans-I/O functions, tested as such; what the client's eras do with a
session is tested over real transports (in memory and real HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field

from minimcp.client.era import LEGACY as CLIENT_LEGACY
from minimcp.client.era import MODERN as CLIENT_MODERN
from minimcp.client.era import check_mode, negotiate
from minimcp.client.session import ClientSession
from minimcp.client.transports import HttpTransport, InMemoryTransport
from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer
from minimcp.server.lowlevel import Server
from minimcp.server.core.dispatch import Dispatcher
from minimcp.server.core.era import LEGACY, MODERN, era_of_message
from minimcp.server.core.peer import Peer
from minimcp.types import INVALID_PARAMS, LATEST_HANDSHAKE_VERSION, UNSUPPORTED_PROTOCOL_VERSION

MODERN_VERSION = "2026-07-28"


def _modern(method: str = "tools/list", version: str = MODERN_VERSION, **meta: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                                 "io.modelcontextprotocol/clientCapabilities": {}, **meta}}}


def _plain(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


# --- server: which era ---------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "header", "era"), [
    (_modern(), None, MODERN),  # the envelope says so
    (_modern(version="2099-01-01"), None, MODERN),  # a 2026-style envelope, refused later by the ladder
    (_plain("tools/list"), MODERN_VERSION, MODERN),  # the version header names no handshake version
    (_plain("tools/list"), "2099-01-01", MODERN),
    (_plain("tools/list"), "2025-06-18", LEGACY),
    (_plain("initialize", protocolVersion="2025-11-25"), None, LEGACY),
    (_plain("tools/list"), None, LEGACY),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, None, LEGACY),
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, None, LEGACY),  # a response: no method, no envelope
])
def test_era_of_message_reads_the_envelope_then_the_version_header(message: dict[str, Any], header: str | None,
                                                                    era: Any) -> None:
    assert era_of_message(message, header) is era
    assert Dispatcher.era_of(message, header) is era


def test_a_method_only_2026_serves_is_2026_by_the_methods_table() -> None:
    discover = _plain("server/discover")
    assert era_of_message(discover) is LEGACY  # no table given: every method is served by both eras
    assert era_of_message(discover, None, lambda method, era: era is MODERN) is MODERN
    assert Dispatcher.era_of(discover) is MODERN
    assert Dispatcher.era_of(_plain("subscriptions/listen")) is MODERN
    assert Dispatcher.era_of(_plain("com.example/custom")) is LEGACY  # a method the protocol does not define


@pytest.mark.parametrize(("requested", "settled"), [
    ("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
    (MODERN_VERSION, LATEST_HANDSHAKE_VERSION),  # no initialize at 2026-07-28: our latest handshake version
    ("2099-01-01", LATEST_HANDSHAKE_VERSION), (None, LATEST_HANDSHAKE_VERSION), (20250618, LATEST_HANDSHAKE_VERSION),
])
def test_initialize_settles_on_the_requested_version_when_spoken_else_the_latest(requested: Any, settled: str) -> None:
    assert LEGACY.negotiate(requested) == settled


def test_each_era_speaks_only_its_own_versions() -> None:
    assert LEGACY.speaks("2025-11-25") and not LEGACY.speaks(MODERN_VERSION)
    assert MODERN.speaks(MODERN_VERSION) and not MODERN.speaks("2025-11-25") and not MODERN.speaks(None)
    assert (LEGACY.latest, MODERN.latest) == (LATEST_HANDSHAKE_VERSION, MODERN_VERSION)


# --- server: which connection --------------------------------------------------------------------

def test_a_2026_request_is_described_by_its_own_envelope() -> None:
    server = Server("eras")
    connection = MODERN.connection(server, _modern(**{"io.modelcontextprotocol/logLevel": "debug",
                                                      "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}))
    assert (connection.era, connection.protocol_version, connection.log_level) == (MODERN, MODERN_VERSION, "debug")
    assert connection.client_info is not None and connection.client_info.name == "c"
    detached = MODERN.connection(server)  # an in-process call: nobody declared anything
    assert (detached.era, detached.protocol_version, detached.client_info) == (MODERN, MODERN_VERSION, None)
    fresh = LEGACY.connection(server)  # about to initialize
    assert (fresh.era, fresh.protocol_version, fresh.initialize_accepted) == (LEGACY, LATEST_HANDSHAKE_VERSION, False)


@pytest.mark.parametrize(("message", "code"), [
    (_modern(version="2099-01-01"), UNSUPPORTED_PROTOCOL_VERSION),
    (_modern(**{"io.modelcontextprotocol/logLevel": "loud"}), INVALID_PARAMS),
    (_plain("tools/list"), INVALID_PARAMS),  # no envelope at all
])
def test_a_2026_envelope_the_era_cannot_describe_is_refused(message: dict[str, Any], code: int) -> None:
    with pytest.raises(MCPError) as refused:
        MODERN.connection(Server("eras"), message)
    assert refused.value.code == code
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        assert refused.value.data == {"supported": [MODERN_VERSION], "requested": "2099-01-01"}


def test_an_ordered_stream_keeps_its_session_for_legacy_and_a_fresh_connection_per_2026_request() -> None:
    server = Server("eras")
    peer = Peer(server, "memory", raise_exceptions=True)
    peer.connection.lifespan_state = {"driver": "given"}
    assert peer.connection_for(_plain("initialize", protocolVersion="2025-11-25")) is peer.connection
    first, second = peer.connection_for(_modern()), peer.connection_for(_modern())
    assert first is not second and peer.connection not in (first, second)
    assert (first.era, first.expose_errors, first.lifespan_state) == (MODERN, True, {"driver": "given"})


# --- client: which era a negotiation lands on ----------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", "auto", MODERN_VERSION])
def test_check_mode_accepts_the_ways_to_negotiate_and_our_2026_versions(mode: str) -> None:
    check_mode(mode)


@pytest.mark.parametrize(("mode", "hint"), [("2025-06-18", "use mode='legacy'"), ("modern", "got 'modern'")])
def test_check_mode_refuses_anything_else_saying_what_to_use(mode: str, hint: str) -> None:
    with pytest.raises(ValueError, match=hint):
        check_mode(mode)


def test_the_client_eras_settle_only_on_their_own_versions() -> None:
    assert CLIENT_LEGACY.settle("2025-06-18") == "2025-06-18"
    with pytest.raises(RuntimeError, match="Unsupported protocol version from the server: 2099-01-01"):
        CLIENT_LEGACY.settle("2099-01-01")
    assert CLIENT_MODERN.settle(["2099-01-01", MODERN_VERSION]) == MODERN_VERSION
    with pytest.raises(MCPError) as none_common:
        CLIENT_MODERN.settle(["2099-01-01"])
    assert (none_common.value.code, none_common.value.data) == (UNSUPPORTED_PROTOCOL_VERSION, {"supported": ["2099-01-01"]})
    assert CLIENT_MODERN.common("not a list") is None
    assert (CLIENT_LEGACY.carries_claims, CLIENT_MODERN.carries_claims) == (False, True)


@pytest.mark.parametrize(("refusal", "open_"), [
    ({"supported": ["2025-06-18", MODERN_VERSION]}, True),
    ({"supported": ["2099-01-01"]}, False),  # a modern server we cannot talk to: no handshake either
    ({"supported": "garbled"}, True), (None, True),  # says nothing of the era: try the handshake
])
def test_a_version_refusal_leaves_the_handshake_open_unless_it_names_only_2026_versions(
        refusal: Any, open_: bool) -> None:
    assert CLIENT_LEGACY.named_in(refusal) is open_


@pytest.fixture(params=["memory", "http"])
def session_to(request: pytest.FixtureRequest, serve_http: Callable[..., str]) -> Callable[[MCPServer], ClientSession]:
    """``session_to(mcp)``: a started ``ClientSession`` to ``mcp`` in memory, then over real HTTP; closed at teardown."""
    opened: list[ClientSession] = []

    def make(mcp: MCPServer) -> ClientSession:
        transport = InMemoryTransport(mcp) if request.param == "memory" else HttpTransport(serve_http(mcp))
        session = ClientSession(transport)
        session.start()
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


@pytest.mark.parametrize(("mode", "era", "version"), [
    ("legacy", CLIENT_LEGACY, LATEST_HANDSHAKE_VERSION), ("auto", CLIENT_MODERN, MODERN_VERSION),
    (MODERN_VERSION, CLIENT_MODERN, MODERN_VERSION),
])
def test_negotiate_lands_on_the_era_the_mode_names(session_to: Callable[[MCPServer], ClientSession], mode: str,
                                                   era: Any, version: str) -> None:
    mcp = MCPServer("eras")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    session = session_to(mcp)
    assert negotiate(session, mode) is era
    assert (session.era, session.protocol_version) == (era, version)
    assert session.call_tool("echo", {"text": "hi"}).content[0].text == "hi"  # the era's requests are served


def _route(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    return region


def _zone(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Zone"})]) -> str:
    return region


def test_the_session_relearns_a_tools_argument_headers_only_when_they_changed(
        session_to: Callable[[MCPServer], ClientSession]) -> None:
    mcp = MCPServer("eras")
    mcp.add_tool(_route, name="route")
    session = session_to(mcp)
    negotiate(session, MODERN_VERSION)
    assert session.header_parameters("route") == {}  # never listed
    assert session.relearn_headers("route") is True
    assert session.header_parameters("route") == {"region": "Region"}
    assert session.relearn_headers("route") is False  # listed again, nothing changed
    mcp.remove_tool("route")
    mcp.add_tool(_zone, name="route")
    assert session.relearn_headers("route") is True
    assert session.header_parameters("route") == {"region": "Zone"}
    assert session.relearn_headers("gone") is False  # no such tool: nothing to retry with
