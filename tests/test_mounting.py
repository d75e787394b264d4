"""The mounting examples: MCP under ``/mcp`` of a Flask app and of a Django project, on a real server."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from conftest import TIMEOUT, legacy_handshake, modern_rpc, post, request_message

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str) -> ModuleType:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def flask_example() -> ModuleType:
    return load_example("flask_mount")


@pytest.fixture(scope="module")
def django_example() -> ModuleType:
    return load_example("django_mount")


def _check_mounted_mcp(base: str) -> None:
    url = base + "/mcp"
    session = legacy_handshake(url)
    assert session.initialize_result["serverInfo"]["name"].endswith("host")
    tools = [t["name"] for t in session.rpc("tools/list")["result"]["tools"]]
    assert "add" in tools
    result = session.call_tool("add", {"a": 2, "b": 40})
    assert result["isError"] is False
    assert result["structuredContent"] == {"result": 42}
    assert result["content"] == [{"type": "text", "text": "42"}]
    modern = modern_rpc(url, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})["result"]
    assert modern["structuredContent"] == {"result": 2}
    assert modern["resultType"] == "complete"
    # the mount keeps the MCP refusals: a foreign Host, an unknown session
    assert post(url, request_message("ping"), headers={"Host": "evil.example.com"}).status_code == 421
    assert post(url, request_message("ping"), session_id="0" * 32,
                protocol_version="2025-11-25").status_code == 404
    assert session.delete().status_code == 200


def test_flask_mount(serve_wsgi: Any, flask_example: ModuleType) -> None:
    base = serve_wsgi(flask_example.app)
    home = requests.get(base + "/", timeout=TIMEOUT)
    assert home.status_code == 200
    assert home.text == "Hello from Flask"
    assert requests.get(base + "/nope", timeout=TIMEOUT).status_code == 404  # Flask's own 404
    _check_mounted_mcp(base)
    session = legacy_handshake(base + "/mcp")
    assert session.call_tool("app_name")["content"][0]["text"] == flask_example.app.name


def test_django_mount(serve_wsgi: Any, django_example: ModuleType) -> None:
    base = serve_wsgi(django_example.application)
    home = requests.get(base + "/", timeout=TIMEOUT)
    assert home.status_code == 200
    assert home.text == "Hello from Django"
    assert requests.get(base + "/nope", timeout=TIMEOUT).status_code == 404
    _check_mounted_mcp(base)

