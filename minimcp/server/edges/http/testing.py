"""The exchange called in-process, with no server and no socket: the adapter a test needs.

It is also what any new host of the endpoint looks like (an ASGI one would differ in reading its
request and writing its answer only): build an ``HTTPRequest``, ``handle`` it, read the
``HTTPResponse``. ``ExchangeClient(app.exchange).request("POST", headers, body)`` answers with the
status, the headers and the whole body (a stream is read to its end). A request comes from
``Host: localhost`` unless its headers say otherwise, as werkzeug's test client sends it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minimcp.server.edges.http.exchange import Exchange, HTTPRequest
from minimcp.shared.http_headers import Headers


@dataclass(frozen=True)
class Answer:
    """One answer of the exchange, read whole."""

    status: int
    headers: Headers
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ExchangeClient:
    """Requests to ``exchange``, as ``principal`` (``None``: nobody) unless a request says otherwise."""

    def __init__(self, exchange: Exchange, principal: str | None = None) -> None:
        self.exchange = exchange
        self.principal = principal

    def request(self, method: str, headers: Mapping[str, str] | None = None, body: bytes = b"",
                principal: str | None = None) -> Answer:
        response = self.exchange.handle(HTTPRequest(method, self.exchange.path, Headers({"Host": "localhost", **(headers or {})}), body,
                                                    principal=principal or self.principal))
        try:
            data = b"".join(response.body)
        finally:
            response.close()
        return Answer(response.status, Headers(response.headers), data)
