"""A proxied call's questions, progress, log lines and cancellation, carried across eras.

An upstream asks in its era and the downstream client answers in its own; the ``Context`` of the
proxied request already speaks the client's era (``ctx.questions``), so every question goes
through it:

- a legacy upstream's server-to-client request (``elicitation/create``, ``sampling/createMessage``,
  ``roots/list``) arrives at the upstream connection's callback, which asks the client through
  ``ctx.questions``: on a legacy client that is a push and the callback returns its answer; on a
  2026-07-28 client the question has no recorded answer yet, so the round ends with
  ``input_required``, the upstream call is abandoned (cancelled), and on the client's retry the
  call is made again from the top: the upstream asks the same question, which now has its
  recorded answer, and that answer goes upstream. This is the replay rule minimcp's own tool
  bodies follow on 2026-07-28, applied to the upstream as the body.
- a 2026-07-28 upstream's ``input_required`` round goes to a legacy client as pushes (each input
  request asked through ``ctx.questions``, the upstream retried with the answers and its own
  ``requestState``), and to a 2026-07-28 client as itself: the same ``inputRequests``, the
  upstream's ``requestState`` carried inside the proxy's own sealed state, and on the retry the
  client's ``inputResponses`` and that state go upstream unchanged.

A downstream cancellation (a ``notifications/cancelled``, a closed 2026-07-28 stream, a timeout)
ends the request's outbox, whose end callback (``Outbox.on_end``) cancels the upstream call in
flight through its ``CancelScope``: no thread looks for it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from minimcp.client.cancel import CancelScope
from minimcp.jsonrpc import MCPError
from minimcp.server.app.context import Context, elicitation_gate
from minimcp.server.core.rounds import InputRequired
from minimcp.types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    ErrorData,
    InputRequiredResult,
    LoggingMessageNotificationParams,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.app.proxy.upstream import Upstream, UpstreamConnection
    from minimcp.server.core.sessions import Connection

logger = logging.getLogger("minimcp.server.proxy")

T = TypeVar("T")

#: Seconds before a 2026-07-28 upstream that answered a round with no question is asked again.
ROUND_PAUSE = 0.05
#: Rounds of a 2026-07-28 upstream answered for a legacy client before the call fails.
MAX_ROUNDS = 10
#: The code an upstream question gets when its call was abandoned so its client could answer on retry.
ABANDONED = -32800
_UNSUPPORTED = {"sampling/createMessage": ("sampling", "Sampling not supported"),
                "roots/list": ("roots", "List roots not supported")}


def _gate(connection: Connection, method: str, params: dict[str, Any]) -> None:
    """Refuse a question the client did not declare it can answer, as that client would."""
    if method == "elicitation/create":
        elicitation_gate(connection, params.get("mode") or "form")
        return
    capability, refusal = _UNSUPPORTED[method]
    required: dict[str, Any] = {capability: {}}
    if method == "sampling/createMessage" and params.get("tools"):
        required = {"sampling": {"tools": {}}}
    if not connection.declares(required):
        raise MCPError(INVALID_REQUEST, refusal)


class Relay:
    """One proxied request's end of its upstream connection (``UpstreamConnection.relay``)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.legacy = ctx.session.legacy
        # _lock guards _asked (how many questions the upstream asked this pass) and pending.
        self._lock = threading.Lock()
        self._asked = 0
        #: The question a 2026-07-28 client must answer first; the call raises it once the upstream call ends.
        self.pending: InputRequired | None = None
        #: The scope of the upstream call in flight (one per leg, ``_watched``); replaced whole, read
        #: by the thread that cancels it.
        self.scope = CancelScope()
        meta = ctx.request_context.meta or {}
        #: Whether the client asked for progress: only then does the upstream call ask for it.
        self.wants_progress = meta.get("progressToken") is not None
        outbox = ctx.request_context.outbox
        if outbox is not None:
            outbox.on_end(self.cancel_if_cancelled)

    def cancel_if_cancelled(self) -> None:
        """When the request ends: a request its client cancelled (or that timed out) cancels the
        upstream call in flight; one answered has none in flight left."""
        if self.ctx.cancelled:
            self.scope.cancel()

    # --- questions ---------------------------------------------------------------------------------
    def ask(self, connection: UpstreamConnection, method: str, params: dict[str, Any]) -> dict[str, Any] | ErrorData:
        """A legacy upstream's question, answered by the client (see the module docstring)."""
        with self._lock:
            key = f"upstream:{self._asked}"
            self._asked += 1
        try:
            return self.question(key, method, params)
        except InputRequired as pending:
            with self._lock:
                self.pending = pending
            connection.broken = True
            self.scope.cancel()
            return ErrorData(code=ABANDONED, message="The question went to the client, which answers it when it "
                                                     "makes this call again")
        except MCPError as refused:
            return refused.error
        except Exception as failed:  # the client's answer did not fit: the upstream learns why, as from a client
            return ErrorData(code=INTERNAL_ERROR, message=str(failed))

    def question(self, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the client ``method`` under ``key``, in its era; the upstream's ``_meta`` stays upstream."""
        ctx = self.ctx
        params = {name: value for name, value in params.items() if name != "_meta"}
        connection = ctx.session.connection
        if method == "elicitation/create" and params.get("mode") == "url":
            elicitation_id = params.pop("elicitationId", None)
            params = connection.era.url_elicitation(params, elicitation_id)
        ctx.questions.ready(method)
        return ctx.questions.ask(key, method, params, lambda: _gate(connection, method, params))

    def answer_round(self, result: InputRequiredResult) -> dict[str, Any]:
        """A 2026-07-28 upstream's input requests, asked of a legacy client one by one."""
        answers: dict[str, Any] = {}
        for key, request in (result.input_requests or {}).items():
            wire = dump(request) if isinstance(request, BaseModel) else dict(request)
            answers[key] = self.question(key, wire["method"], wire.get("params") or {})
        return answers

    # --- what the upstream tells ---------------------------------------------------------------------
    def log(self, params: LoggingMessageNotificationParams) -> None:
        rc = self.ctx.request_context
        rc.session.send_log_message(params.level, params.data, params.logger, rc.request_id)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.ctx.report_progress(progress, total, message)

    # --- the rounds of a 2026-07-28 client -------------------------------------------------------------
    def resumed(self) -> tuple[dict[str, Any] | None, str | None, bool]:
        """On a client's retry of a round the upstream asked: its answers, the upstream's
        ``requestState``, and ``True``; otherwise ``(None, None, False)``."""
        own = self.ctx.request_state
        if own is None:
            return None, None, False
        try:
            state = json.loads(own)["upstream"]
        except (ValueError, KeyError, TypeError):
            return None, None, False
        responses = self.ctx.input_responses or {}
        return {key: dump(value) if isinstance(value, BaseModel) else value
                for key, value in responses.items()}, state, True

    @staticmethod
    def passed_on(result: InputRequiredResult) -> InputRequiredResult:
        """The upstream's round as the proxy's own: its questions, its state inside the proxy's
        (which the round machinery seals)."""
        return InputRequiredResult(input_requests=result.input_requests,
                                   request_state=json.dumps({"upstream": result.request_state}))


#: One leg of a forwarded request: ``(connection, inputResponses, requestState, progress callback)``.
Leg = Callable[["UpstreamConnection", "dict[str, Any] | None", "str | None", Any], Any]


def forward(upstream: Upstream, method: str, ctx: Context | None, leg: Leg, key: Any = None) -> Any:
    """Send one request upstream for the client of ``ctx`` and return what the client gets: the
    upstream's result, or (for a 2026-07-28 client) a round to answer first."""
    if ctx is None:
        return upstream.call(method, lambda connection: _complete(leg(connection, None, None, None), method))
    relay = Relay(ctx)
    responses, state, _ = relay.resumed()

    def run(connection: UpstreamConnection) -> Any:
        nonlocal responses, state
        for _ in range(MAX_ROUNDS + 1):
            result = _watched(relay, connection, lambda: leg(connection, responses, state,
                                                             relay.progress if relay.wants_progress else None))
            if not isinstance(result, InputRequiredResult):
                return result
            if not relay.legacy:
                return relay.passed_on(result)
            if result.input_requests:
                responses = relay.answer_round(result)
            else:
                responses = None
                time.sleep(ROUND_PAUSE)
            state = result.request_state
        raise MCPError(INTERNAL_ERROR, f"Upstream {upstream.name!r} kept answering {method} with input_required for "
                                       f"{MAX_ROUNDS} rounds")

    return upstream.call(method, run, relay, key)


def _watched(relay: Relay, connection: UpstreamConnection, send: Callable[[], T]) -> T:
    """``send`` under the relay's cancel scope, which the client's cancellation cancels; raises the
    question a 2026-07-28 client must answer first when that is why the call was abandoned. A
    cancelled call's connection is not used again (the upstream may still be working on it)."""
    relay.scope = scope = CancelScope()
    relay.cancel_if_cancelled()  # cancelled between two legs: the end callback saw the scope before
    with scope:
        result = send()
    pending = relay.pending
    if pending is not None:
        raise pending
    if scope.cancelled_caught:
        connection.broken = True
        raise MCPError(REQUEST_TIMEOUT, "The client cancelled the request")  # no one reads it: the call is gone
    return result


def _complete(result: Any, method: str) -> Any:
    if isinstance(result, InputRequiredResult):
        raise MCPError(INVALID_REQUEST, f"The upstream asked for input on {method}, and this call has no client to ask")
    return result
