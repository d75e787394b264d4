"""The server over stdio, as a real subprocess: JSON lines in, JSON lines out, nothing else on stdout."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import LEGACY, MODERN, initialize_params, modern_meta, wait_for

SERVER = Path(__file__).parent / "servers" / "stdio_server.py"
ROOT = Path(__file__).resolve().parent.parent


class StdioPeer:
    """One server process; every stdout line must be a JSON-RPC message."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._pump_out, daemon=True).start()
        self._err_thread = threading.Thread(target=self._pump_err, daemon=True)
        self._err_thread.start()
        self._next_id = 0

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def receive(self, timeout: float = 20) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "server closed stdout: " + b"".join(self.stderr).decode(errors="replace")
        assert line.endswith(b"\n")
        return json.loads(line)  # fails loudly if anything but JSON reached stdout

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = self.receive()
        assert answer["id"] == self._next_id, answer
        return answer

    def handshake(self, version: str = LEGACY, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.request("initialize", initialize_params(version, capabilities))["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close_stdin(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=20)

    def stderr_text(self) -> str:
        self._err_thread.join(10)
        return b"".join(self.stderr).decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def peer() -> Any:
    p = StdioPeer()
    yield p
    p.kill()


def test_legacy_handshake_and_call(peer: StdioPeer) -> None:
    result = peer.handshake()
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"] == {"name": "stdio-test", "version": "0.0.1"}
    assert peer.request("ping")["result"] == {}
    tools = peer.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["echo", "noisy", "era", "boom", "wait_for_cancel", "nap", "ask"]
    call = peer.request("tools/call", {"name": "echo", "arguments": {"text": "hello"}})["result"]
    assert call == {"content": [{"type": "text", "text": "hello"}], "structuredContent": {"result": "hello"},
                    "isError": False}
    era = peer.request("tools/call", {"name": "era", "arguments": {}})["result"]
    assert era["content"][0]["text"] == "2025-11-25 legacy=True"
    boom = peer.request("tools/call", {"name": "boom", "arguments": {}})["result"]
    assert boom["isError"] is True
    assert boom["content"] == [{"type": "text", "text": "Error executing tool boom"}]  # the text stays in the log
    assert peer.close_stdin() == 0


def test_requests_between_initialize_and_initialized_are_served(peer: StdioPeer) -> None:
    """As the official SDK does: the gate is the ``initialize`` answer (the specification asks the
    client to wait for that only), not ``notifications/initialized``."""
    assert peer.request("initialize", initialize_params())["result"]["protocolVersion"] == LEGACY
    assert [t["name"] for t in peer.request("tools/list")["result"]["tools"]][0] == "echo"
    call = peer.request("tools/call", {"name": "echo", "arguments": {"text": "early"}})["result"]
    assert call["content"] == [{"type": "text", "text": "early"}]
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "later"}})["result"]["isError"] is False


def test_before_initialize_only_ping_is_answered_and_notifications_are_dropped(peer: StdioPeer) -> None:
    """A request before ``initialize`` gets -32600 naming what to send first (an unknown method
    -32601, as the official SDK answers it), ``ping`` is answered, and a notification (even
    ``notifications/initialized``) is dropped without an answer; then the handshake works."""
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    early = peer.request("tools/list")
    assert early["error"] == {"code": -32600, "message": "Received tools/list before initialize; send initialize first"}
    assert peer.request("no/such/method")["error"]["code"] == -32601
    assert peer.request("ping")["result"] == {}
    assert peer.request("initialize", initialize_params())["result"]["protocolVersion"] == LEGACY
    assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "ok"}})["result"]["isError"] is False


def test_modern_call_without_handshake(peer: StdioPeer) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    answer = peer.request("tools/call", {"name": "era", "arguments": {}, "_meta": meta})
    result = answer["result"]
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "2026-07-28 legacy=False"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "stdio-test"
    discover = peer.request("server/discover", {"_meta": modern_meta()})["result"]
    assert discover["supportedVersions"] == [MODERN]
    assert discover["resultType"] == "complete"
    echo = peer.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": meta})["result"]
    assert echo["structuredContent"] == {"result": "x"}


def test_modern_refusals_on_stdio(peer: StdioPeer) -> None:
    missing = peer.request("tools/call", {"name": "echo", "arguments": {"text": "x"},
                                          "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}})
    assert missing["error"]["code"] == -32602
    unsupported = peer.request("tools/list", {"_meta": modern_meta(version="v999.0.0")})
    assert unsupported["error"]["code"] == -32022
    assert unsupported["error"]["data"] == {"supported": [MODERN], "requested": "v999.0.0"}
    ping = peer.request("ping", {"_meta": modern_meta()})
    assert ping["error"]["code"] == -32601
    assert peer.request("tools/list", {"_meta": modern_meta()})["result"]["resultType"] == "complete"


def test_both_eras_on_one_process(peer: StdioPeer) -> None:
    peer.handshake()
    legacy = peer.request("tools/call", {"name": "era", "arguments": {}})["result"]
    modern = peer.request("tools/call", {"name": "era", "arguments": {}, "_meta": modern_meta()})["result"]
    assert legacy["content"][0]["text"] == "2025-11-25 legacy=True"
    assert modern["content"][0]["text"] == "2026-07-28 legacy=False"
    assert "resultType" not in legacy


def said(peer: StdioPeer, line: str) -> bool:
    """Whether the server wrote ``line`` on stderr (within ``wait_for``'s seconds)."""
    return wait_for(lambda: line in b"".join(peer.stderr).decode(errors="replace"), 20)


@pytest.mark.parametrize("era", ["legacy", "modern", "modern before any handshake"])
def test_notifications_cancelled_reaches_a_call_in_either_era(peer: StdioPeer, era: str) -> None:
    """The stream's one table of calls in flight holds 2026-07-28 calls too, so a cancel finds them;
    the cancelled call ends unanswered (the official and TypeScript servers send nothing either)."""
    if era != "modern before any handshake":
        peer.handshake()
    meta = {"_meta": modern_meta()} if era != "legacy" else {}
    peer.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
               "params": {"name": "wait_for_cancel", "arguments": {}, **meta}})
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert said(peer, "wait_for_cancel: cancelled")
    # The next line on stdout answers the next call: none answers the cancelled one.
    assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "still here"}, **meta}
                        )["result"]["content"][0]["text"] == "still here"


def test_a_call_cancelled_while_its_question_waits_ends_unanswered(peer: StdioPeer) -> None:
    """The question's wait ends, and the call's "Connection closed" failure is not sent to a client
    that cancelled it (the TypeScript client reports such an answer as one for an unknown id)."""
    peer.handshake(capabilities={"elicitation": {}})
    peer.send({"jsonrpc": "2.0", "id": "ask", "method": "tools/call", "params": {"name": "ask", "arguments": {}}})
    question = peer.receive()
    assert question["method"] == "elicitation/create"
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "ask"}})
    assert said(peer, "ask: no answer: Connection closed")
    assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "next"}})["result"]["content"][0][
        "text"] == "next"


def test_print_in_a_tool_goes_to_stderr(peer: StdioPeer) -> None:
    peer.handshake()
    result = peer.request("tools/call", {"name": "noisy", "arguments": {"text": "boo"}})["result"]
    assert result["content"] == [{"type": "text", "text": "quiet boo"}]
    # the next line on stdout is the next answer, not stray output
    assert peer.request("ping")["result"] == {}
    assert peer.close_stdin() == 0
    assert peer.lines.get(timeout=5) is None  # nothing else was ever written to stdout
    err = peer.stderr_text()
    assert "print says boo" in err
    assert "sys.stdout says boo" in err
    assert "fd 1 says boo" in err


def test_malformed_line_gets_a_parse_error_and_serving_continues(peer: StdioPeer) -> None:
    peer.send_raw(b"{this is not json\n")
    error = peer.receive()
    assert error["id"] is None and error["error"]["code"] == -32700
    peer.send_raw(b"\n")  # blank lines are ignored
    peer.handshake()
    assert peer.request("tools/call", {"name": "echo", "arguments": {"text": "ok"}})["result"]["content"][0]["text"] \
        == "ok"


def test_eof_ends_the_process(peer: StdioPeer) -> None:
    peer.handshake()
    assert peer.close_stdin() == 0
    assert peer.lines.get(timeout=5) is None


def _all_output(peer: StdioPeer) -> list[dict[str, Any]]:
    """Every message the server writes until it closes stdout."""
    messages = []
    while (line := peer.lines.get(timeout=20)) is not None:
        messages.append(json.loads(line))
    return messages


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_call_running_when_stdin_ends_still_answers(version: str) -> None:
    """A client writes its requests and closes stdin at once (as ``printf ... | server`` does, and
    as the spec's shutdown begins): the call still running answers before the server exits."""
    peer = StdioPeer()
    try:
        call: dict[str, Any] = {"name": "nap", "arguments": {"seconds": 0.5}}
        if version == LEGACY:
            peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(version)})
            peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        else:
            call["_meta"] = modern_meta()
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert peer.close_stdin() == 0
        answers = {message["id"]: message for message in _all_output(peer)}
        assert answers[2]["result"]["content"][0]["text"] == "slept 0.5", answers
    finally:
        peer.kill()


def test_a_call_waiting_on_the_client_when_stdin_ends_answers_at_once() -> None:
    peer = StdioPeer()
    try:
        peer.request("initialize", initialize_params(LEGACY, {"elicitation": {}}))
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {}}})
        asked = peer.receive()
        assert asked.get("method") == "elicitation/create", asked
        assert peer.close_stdin() == 0  # within close_stdin's bound, far below the grace calls get
        answers = {message.get("id"): message for message in _all_output(peer)}
        assert answers[2]["result"]["content"][0]["text"].startswith("no answer"), answers
    finally:
        peer.kill()


def test_the_writer_thread_ends_when_close_found_its_queue_full() -> None:
    """A client that stops reading fills the pipe and the writer's queue, so ``close`` cannot queue
    its stop marker; once the client reads again the writer drains what was queued and ends."""
    from minimcp.shared.line_writer import LineWriter

    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader, os.fdopen(write_end, "wb", buffering=0) as stream:
        writer = LineWriter(stream, "test-writer", max_queued=1)
        big = b"x" * 200_000 + b"\n"
        assert writer.put(big, 1.0)  # taken by the thread, which blocks in write: nobody reads the pipe
        assert writer.put(big, 5.0)  # waits in the queue, which is now full
        writer.close(timeout=0.1)
        assert not writer.join(0)
        received = b""
        while received.count(b"\n") < 2:
            received += reader.read1(1 << 20)
        assert writer.join(10), "the writer thread outlived close() once the pipe drained"
