"""The elicitation tour: the seed page's servers and client, end to end over real HTTP, both eras.

Each example server runs in its own process on a free loopback port; a ``minimcp.Client`` calls
its tools, first on a legacy connection (the question travels mid-call while the server's worker
waits) and then on a 2026-07-28 connection (the call returns ``input_required`` and is retried
with the answer). Run it with ``python examples/demo.py``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.types import CallToolResult, ElicitRequestParams, ElicitRequestURLParams, ElicitResult, TextContent

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(module: str) -> Iterator[str]:
    """Run ``examples/<module>.py``'s ``mcp`` on a free port in a child process; yield its URL."""
    port = free_port()
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import {module}; "
            f"{module}.mcp.run(transport='streamable-http', port={port})")
    process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{module} did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(5)


def handle_elicitation(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """The seed page's callback: open links, and accept the offered alternative date."""
    if isinstance(params, ElicitRequestURLParams):
        print(f"Open this link to continue: {params.url}")
        return ElicitResult(action="accept")
    print(params.message)
    if "Delete anyway" in params.message:
        return ElicitResult(action="accept", content={"ok": True})
    return ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"})


def interactive_callback() -> Any:
    """The terminal form when a person is at the keyboard, else the scripted answers above."""
    if sys.stdin.isatty():
        try:
            from minimcp.client import terminal_elicitation
        except ImportError:
            return handle_elicitation
        return terminal_elicitation
    return handle_elicitation


def text_of(result: CallToolResult) -> str:
    """A tool's first block as the tour prints it: these tools answer in text, and only a
    ``TextContent`` block has ``.text``."""
    block = result.content[0]
    return block.text if isinstance(block, TextContent) else str(block)


def tour(mode: str, callback: Any) -> None:
    print(f"\n=== {'legacy connection (2025-11-25)' if mode == 'legacy' else 'auto: 2026-07-28'} ===")
    with serving("bistro_server") as url, Client(url, mode=mode, elicitation_callback=callback) as client:
        print(f"[connected, protocol {client.protocol_version}]")
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        print(text_of(result))
    completed: list[str] = []

    def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/elicitation/complete":
            completed.append(message.params.elicitation_id)

    with serving("deposit_server") as url, Client(url, mode=mode, elicitation_callback=callback,
                                                   message_handler=on_message) as client:
        print(text_of(client.call_tool("pay_deposit", {"booking_id": "42"})))
        print(text_of(client.call_tool("confirm_deposit", {"booking_id": "42"})))
        time.sleep(0.2)
        if completed:
            print(f"[notifications/elicitation/complete for {completed[0]}]")
    with serving("files_server") as url, Client(url, mode=mode, elicitation_callback=callback) as client:
        for path in ("/tmp/empty", "/tmp/project"):
            print(text_of(client.call_tool("delete_folder", {"path": path})))
    with serving("bistro_server") as url, Client(url, mode=mode) as client:
        try:
            client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        except MCPError as exc:
            print(f"without a callback: MCPError: {exc} ({exc.code})")


def main() -> None:
    callback = interactive_callback()
    tour("legacy", callback)
    tour("auto", callback)


if __name__ == "__main__":
    main()
