"""Interoperability with an implementation no one here wrote: the official Python SDK (``mcp``).

The official client (async; the test drives it with ``anyio.run``) talks to a minimcp server in
both eras, elicitation included; and minimcp's client, in its default auto mode, completes an
elicitation against an official server in a separate process, and logs in at an official
authorization server (registration, PKCE, refresh).
"""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import anyio
import mcp as official
import mcp_types as official_types
import pytest
from conftest import load_example, run_server_process
from oauth_fakes import ApprovingUser, client_metadata

from minimcp import Client
from minimcp.client.auth import InMemoryTokenStorage, OAuthClientProvider
from minimcp.server import MCPServer
from minimcp.types import ElicitResult


def bistro() -> MCPServer:
    return load_example("bistro_server").mcp


def run_official_client(url: str, mode: str) -> tuple[str, list[str], list[str], str]:
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> official_types.ElicitResult:
        asked.append(params.message)
        return official_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"})

    async def main() -> tuple[str, list[str], list[str], str]:
        async with official.Client(url, mode=mode, elicitation_callback=on_elicit) as client:
            tools = await client.list_tools()
            result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
            return result.content[0].text, [t.name for t in tools.tools], asked, client.protocol_version

    return anyio.run(main)


@pytest.mark.parametrize("mode, version", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_the_official_client_completes_book_table(serve_http: Callable[..., str], mode: str, version: str) -> None:
    text, names, asked, negotiated = run_official_client(serve_http(bistro()), mode)
    assert names == ["book_table"]
    assert asked == ["No tables for 2 on 2025-12-25. Would you like to try another date?"]
    assert text == "Booked a table for 2 on 2025-12-27."
    assert negotiated == version


def run_official(script_name: str) -> Iterator[str]:
    """``tests/servers/<script_name>`` in its own process, on the port it bound; yields its ``/mcp`` URL."""
    script = Path(__file__).parent / "servers" / script_name
    for base in run_server_process([sys.executable, str(script)]):
        yield f"{base}/mcp"


@pytest.fixture
def official_server() -> Iterator[str]:
    yield from run_official("official_confirm.py")


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_minimcp_client_completes_an_elicitation_against_the_official_server(official_server: str, mode: str,
                                                                            version: str) -> None:
    asked: list[str] = []

    def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})

    with Client(official_server, mode=mode, elicitation_callback=on_elicit) as client:
        result = client.call_tool("confirm", {"n": 7})
        assert client.protocol_version == version
    assert result.content[0].text == "confirmed 7"
    assert asked == ["Proceed with item 7?"]


@pytest.fixture
def official_oauth_server() -> Iterator[str]:
    yield from run_official("official_oauth.py")


def test_minimcp_client_logs_in_at_the_official_authorization_server_and_refreshes(official_oauth_server: str) -> None:
    user, storage = ApprovingUser(), InMemoryTokenStorage()
    provider = OAuthClientProvider(official_oauth_server, client_metadata(), storage, user.redirect, user.callback)
    with Client(official_oauth_server, auth=provider) as client:
        first = client.call_tool("whoami", {}).content[0].text
        issued = storage.get_tokens()
    # A new connection reuses the stored registration and refreshes the (short-lived) token.
    with Client(official_oauth_server, auth=provider) as client:
        again = client.call_tool("whoami", {}).content[0].text
    client_info, refreshed = storage.get_client_info(), storage.get_tokens()
    assert client_info is not None and first == again == f"{client_info.client_id} mcp"
    assert len(user.visits) == 1
    assert issued is not None and refreshed is not None and refreshed.access_token != issued.access_token
