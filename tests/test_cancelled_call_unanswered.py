"""A legacy call its client cancels (``notifications/cancelled``) ends unanswered over HTTP.

The specification asks the receiver of a cancellation not to answer the cancelled request, and the
official and TypeScript servers send nothing. The TypeScript client keeps reading a call's SSE
stream after it sent the cancellation, so an answer there reaches it as a response to an id it
forgot (its ``onerror`` reports it). Here a raw client reads on in the same way: no answer comes,
on a stream that ends (2025-06-18) or stays open and quiet until the client leaves (a resumable
2025-11-25 stream, which a client waiting for its answer would resume), and a JSON-only endpoint
answers the cancelled call's POST with an empty 202. The question the call was waiting on ends.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from conftest import BASE_HEADERS, TIMEOUT, legacy_handshake, request_message, wait_for
from pydantic import BaseModel

from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context


class Name(BaseModel):
    name: str


def waiting_server(started: threading.Event, outcomes: list[str]) -> MCPServer:
    mcp = MCPServer("cancelled")

    @mcp.tool()
    def ask_name(ctx: Context) -> str:
        """Asks a question (which opens the call's SSE stream) no one answers."""
        started.set()
        try:
            return ctx.elicit("Your name?", Name).action
        except MCPError as error:
            outcomes.append(str(error))
            raise

    @mcp.tool()
    def wait_for_cancel(ctx: Context) -> str:
        """Reports progress (a JSON body drops it), then waits for the cancellation."""
        ctx.report_progress(1)
        started.set()
        deadline = time.monotonic() + TIMEOUT
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        outcomes.append("cancelled" if ctx.cancelled else "never cancelled")
        return outcomes[-1]

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


class Reader(threading.Thread):
    """POSTs ``call`` and collects the messages of its answer until the answer ends, or until
    ``stop`` is set and the next line (a keep-alive comment, at least) comes."""

    def __init__(self, url: str, call: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.call, self.headers = url, call, headers
        self.stop = threading.Event()
        self.status: int | None = None
        self.messages: list[dict[str, Any]] = []

    def run(self) -> None:
        with requests.post(self.url, json=self.call, headers=self.headers, stream=True, timeout=TIMEOUT) as response:
            self.status = response.status_code
            for line in response.iter_lines():
                if line.startswith(b"data:") and line[5:].strip():
                    self.messages.append(json.loads(line[5:]))
                elif line.startswith(b"{"):
                    self.messages.append(json.loads(line))
                if self.stop.is_set():
                    return


@pytest.mark.parametrize("version, json_response, tool", [
    ("2025-11-25", False, "ask_name"),
    ("2025-06-18", False, "ask_name"),
    ("2025-11-25", False, "wait_for_cancel"),
    ("2025-06-18", False, "wait_for_cancel"),
    ("2025-11-25", True, "wait_for_cancel"),
])
def test_a_cancelled_call_ends_without_its_answer(serve_http: Callable[..., str], version: str, json_response: bool,
                                                  tool: str) -> None:
    started, outcomes = threading.Event(), list[str]()
    url = serve_http(waiting_server(started, outcomes), json_response=json_response, keepalive_interval=0.2)
    session = legacy_handshake(url, version, capabilities={"elicitation": {}})
    call = request_message("tools/call", {"name": tool, "arguments": {}, "_meta": {"progressToken": "waiting"}})
    reader = Reader(url, call, {**BASE_HEADERS, "Mcp-Session-Id": session.session_id, "MCP-Protocol-Version": version})
    reader.start()
    assert started.wait(TIMEOUT)
    cancelled = session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": call["id"], "reason": "the user changed their mind"}})
    assert cancelled.status_code == 202
    assert wait_for(lambda: outcomes == (["Connection closed"] if tool == "ask_name" else ["cancelled"]))
    # A call after the cancelled one has ended: its answer, were it sent, would have been by now.
    assert session.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"
    reader.stop.set()
    reader.join(TIMEOUT)
    assert not reader.is_alive()
    assert reader.status == (202 if json_response else 200)
    assert [message for message in reader.messages if message.get("id") == call["id"] and "method" not in message] == []
