"""A stdio server that floods its client with requests: ``python flooding_stdio_server.py``.

Plain JSON lines, no MCP library: it answers ``initialize`` (2025-11-25), ``tools/list`` and
``tools/call``. The one tool, ``flood(count)``, sends ``count`` ``roots/list`` requests at once
without waiting, then waits for every answer. Once ``busy`` of them came back as errors it logs
``all refusals in`` (``notifications/message``), which a test uses to let the client's callbacks
answer; the call's result is the tally: ``{"answered": n, "errors": [message, ...]}``.
"""

import json
import sys
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any], result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


FLOOD_TOOL = {"name": "flood", "description": "Send count roots/list requests at once.",
              "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}, "busy": {"type": "integer"}},
                              "required": ["count", "busy"]}}


def flood(call: dict[str, Any], lines: Any) -> None:
    count, busy = call["params"]["arguments"]["count"], call["params"]["arguments"]["busy"]
    ids = {f"flood-{n}" for n in range(count)}
    for request_id in sorted(ids):
        send({"jsonrpc": "2.0", "id": request_id, "method": "roots/list"})
    answered, errors = 0, []
    while ids:
        message = json.loads(next(lines))
        if message.get("id") not in ids or "method" in message:
            continue
        ids.discard(message["id"])
        if "error" in message:
            errors.append(message["error"])
            if len(errors) == busy:
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "all refusals in"}})
        else:
            answered += 1
    tally = {"answered": answered, "errors": errors}
    answer(call, {"content": [{"type": "text", "text": json.dumps(tally)}], "isError": False})


def main() -> None:
    lines = iter(sys.stdin)
    for line in lines:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            answer(message, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "logging": {}},
                             "serverInfo": {"name": "flooding", "version": "1"}})
        elif method == "tools/list":
            answer(message, {"tools": [FLOOD_TOOL]})
        elif method == "tools/call":
            flood(message, lines)
        elif method == "ping":
            answer(message, {})
        elif "id" in message and method is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
