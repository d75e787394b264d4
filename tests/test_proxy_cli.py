"""``minimcp proxy`` and ``minimcp run config.json``, run as a user (or an MCP host) runs them.

The proxy is a subprocess in front of real upstream processes: over stdio, started by minimcp's
stdio client as a host starts a server, in front of a server over HTTP (what ``fastmcp-remote``
does for a stdio-only host); and over HTTP, serving an ``mcpServers`` configuration of two
upstreams as one server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import LEGACY, MODERN, ROOT, server_process

from minimcp import Client, StdioServerParameters
from minimcp.client import ClientRequestContext
from minimcp.types import ElicitResult

MINIMCP = str(Path(sys.executable).with_name("minimcp"))
UPSTREAM = ROOT / "tests" / "servers" / "proxy_upstream.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def http_upstream() -> Iterator[str]:
    with server_process([sys.executable, str(UPSTREAM), "--http"], env=ENV) as server:
        yield f"{server.base}/mcp"


def accept(context: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"proceed": True})


@pytest.mark.parametrize(("mode", "version"), [("legacy", LEGACY), ("auto", MODERN)])
def test_minimcp_proxy_serves_an_http_server_over_stdio(http_upstream: str, mode: str, version: str) -> None:
    proxy = StdioServerParameters(command=MINIMCP, args=["proxy", http_upstream], env=ENV)
    with Client(proxy, mode=mode, elicitation_callback=accept) as client:
        assert client.protocol_version == version
        assert "echo" in {tool.name for tool in client.list_tools().tools}
        assert client.call_tool("echo", {"text": "through stdio"}).content[0].text == "through stdio"
        assert client.call_tool("confirm", {"item": "chair"}).content[0].text == "chair: accept proceed=True"


def test_minimcp_run_serves_a_configuration_of_two_as_one_server(http_upstream: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "local": {"command": sys.executable, "args": [str(UPSTREAM)], "env": {"PYTHONPATH": str(ROOT)}},
        "remote": {"url": http_upstream},
    }}))
    with server_process([MINIMCP, "run", str(config), "--http", "--port", "0"], env=ENV) as served:
        with Client(f"{served.base}/mcp") as client:
            names = {tool.name for tool in client.list_tools().tools}
            assert {"local_echo", "remote_echo"} <= names
            assert client.call_tool("local_echo", {"text": "one"}).content[0].text == "one"
            assert client.call_tool("remote_echo", {"text": "two"}).content[0].text == "two"


def test_a_wrong_configuration_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"bad": {"url": "ftp://example.com"}}}))
    done = subprocess.run([MINIMCP, "run", str(config)], capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 2
    assert "mcpServers.bad.url: an http:// or https:// URL, not 'ftp://example.com'" in done.stderr
    assert "Traceback" not in done.stderr
