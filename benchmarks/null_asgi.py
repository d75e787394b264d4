#!/usr/bin/env python3
"""The ceiling of the peer's stack: a protocol-free ASGI app on uvicorn, as fast as uvicorn runs.

    python benchmarks/null_asgi.py PORT [--loop uvloop|asyncio|auto] [--http httptools|h11|auto]

The ASGI twin of ``null_wsgi.py``, answering with its ``answer`` (no validation, no sessions): a
server's figure beside this one shows what the HTTP stack alone costs on the same machine.
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from null_wsgi import answer  # this folder is on sys.path


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    status, headers, out = answer(scope["method"], body)
    await send({"type": "http.response.start", "status": int(status[:3]),
                "headers": [(k.lower().encode(), v.encode()) for k, v in headers]})
    await send({"type": "http.response.body", "body": out})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    ap.add_argument("--loop", default="uvloop")
    ap.add_argument("--http", default="httptools")
    args = ap.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, loop=args.loop,
                http=args.http)


if __name__ == "__main__":
    main()
