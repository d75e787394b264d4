"""How a handler's question (an elicitation, a sampling request, a roots listing) reaches the client.

The era picks the strategy once per request (``Era.questions``, ``Era.rounds``); tool code, resolvers
and the tasks extension ask through it and never learn which era they serve:

- ``AskClient`` (legacy): a server-to-client request on the call's own stream; the worker blocks
  until the answer arrives (bounded by the server's ``back_channel_timeout``);
- the ``AnswerBook`` of a round (2026-07-28, ``minimcp.server.core.rounds``): the answer recorded in
  this round's ``requestState`` and ``inputResponses``, or ``InputRequired``, which ends the pass
  with ``input_required``;
- ``NoQuestions``: a call with nobody to ask (``mcp.call_tool(...)`` in-process, a 2026-07-28 handler
  outside a round).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minimcp import jsonrpc

if TYPE_CHECKING:
    from minimcp.types import RequestId

Gate = Callable[[], None]


class Asking(Protocol):
    """A connection that can put a question to its client and wait for the answer (``Connection.ask``)."""

    def ask(self, method: str, params: dict[str, Any], related_request_id: RequestId | None) -> dict[str, Any]: ...


class AskingSession(Protocol):
    """The session of the request a legacy question is asked for (``ServerSession``)."""

    @property
    def can_send_request(self) -> bool: ...

    @property
    def connection(self) -> Asking: ...


class Questions(ABC):
    """The strategy's interface; ``ready`` is a no-op for strategies that can always record a question."""

    def ready(self, method: str) -> None:
        """Raise at once when no question can reach the client on this channel at all."""

    @abstractmethod
    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        """The client's answer (a JSON-RPC ``result`` object) to ``method`` with ``params``.

        ``gate`` raises when the client did not declare it can answer; it runs only when the question
        must actually go out, so an answer already recorded (2026-07-28) needs no declaration.
        """


class AskClient(Questions):
    """Legacy era: a server-to-client request on the call's own stream; the worker blocks."""

    def __init__(self, session: AskingSession, request_id: RequestId | None) -> None:
        self._session = session
        self._request_id = request_id

    def ready(self, method: str) -> None:
        if not self._session.can_send_request:  # stateless or JSON-only HTTP: no stream to ask on
            raise jsonrpc.NoBackChannelError(method)

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        gate()
        return self._session.connection.ask(method, params, self._request_id)


class NoQuestions(Questions):
    """Nobody to ask: every question fails as one with no back channel."""

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        raise jsonrpc.NoBackChannelError(method)
