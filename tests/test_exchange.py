"""The sans-I/O exchange driven directly (method, path, headers, body) answers as the WSGI app does."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests

from conftest import BASE_HEADERS, LEGACY, TIMEOUT, initialize_params, modern_headers, modern_params
from minimcp.server import MCPServer
from minimcp.server.edges.http.testing import Answer, ExchangeClient


def _server() -> MCPServer:
    mcp = MCPServer("exchange")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


def _over_http(url: str, headers: dict[str, str], body: dict[str, Any]) -> Answer:
    response = requests.post(url, data=json.dumps(body), headers=headers, timeout=TIMEOUT)
    return Answer(response.status_code, response.headers, response.content)  # type: ignore[arg-type]


def _both(serve_http: Callable[..., str], headers: dict[str, str], body: dict[str, Any]) -> tuple[Answer, Answer]:
    app = _server().wsgi_app()  # never served: only its exchange is used
    try:
        direct = ExchangeClient(app.exchange).request("POST", headers, json.dumps(body).encode())
    finally:
        app.close()
    return direct, _over_http(serve_http(_server()), headers, body)


def _same(direct: Answer, wire: Answer) -> None:
    assert direct.status == wire.status
    assert direct.headers["Content-Type"] == wire.headers["Content-Type"]
    assert direct.json() == wire.json()


def test_a_legacy_initialize_answers_as_over_wsgi(serve_http: Callable[..., str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(LEGACY)}
    direct, wire = _both(serve_http, BASE_HEADERS, body)
    _same(direct, wire)
    assert direct.status == 200 and direct.json()["result"]["protocolVersion"] == LEGACY
    assert direct.headers["Mcp-Session-Id"] and wire.headers["Mcp-Session-Id"]


def test_a_2026_tools_call_answers_as_over_wsgi(serve_http: Callable[..., str]) -> None:
    params = {"name": "echo", "arguments": {"text": "hi"}}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": modern_params(params)}
    direct, wire = _both(serve_http, {**BASE_HEADERS, **modern_headers("tools/call", params)}, body)
    _same(direct, wire)
    assert direct.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_refusals_answer_as_over_wsgi(serve_http: Callable[..., str]) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    direct, wire = _both(serve_http, {**BASE_HEADERS, "Accept": "text/html"}, body)
    _same(direct, wire)
    assert direct.status == 406
    direct, wire = _both(serve_http, {**BASE_HEADERS, "Mcp-Session-Id": "no-such-session"}, body)
    _same(direct, wire)
    assert direct.status == 404 and direct.json()["error"]["message"] == "Session not found"


def test_a_session_opened_in_process_is_ended_by_delete() -> None:
    app = _server().wsgi_app()
    client = ExchangeClient(app.exchange, principal="alice")
    body = {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": initialize_params(LEGACY)}
    try:
        session_id = client.request("POST", BASE_HEADERS, json.dumps(body).encode()).headers["Mcp-Session-Id"]
        assert client.request("DELETE", {"Mcp-Session-Id": session_id}, principal="bob").status == 404
        assert client.request("DELETE", {"Mcp-Session-Id": session_id}).status == 200
        assert client.request("DELETE", {"Mcp-Session-Id": session_id}).status == 404
    finally:
        app.close()
