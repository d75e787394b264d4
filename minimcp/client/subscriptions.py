"""``subscriptions/listen`` from the client side (2026-07-28): one stream of typed change events.

``with client.listen(tools_list_changed=True) as sub:`` sends the request, and returns once the
server has acknowledged it, so ``sub.honored`` (what the server agreed to deliver) is known on the
first line of the block. Iterating yields ``ToolsListChanged()``, ``ResourceUpdated(uri)`` and
friends; the loop ends when the server closes the stream gracefully, and raises
``SubscriptionLost`` when the stream dropped. Leaving the block ends the subscription; the session
carries on. Nothing is replayed: after a lost stream, listen again and read again.

Threads. A listen's request runs on a thread of its own (``minimcp-listen``) that blocks in the
transport until the stream ends. Its frames reach the session like any other server message; the
session hands those tagged with this listen's id to its ``ListenRoute`` (``minimcp.client.listen_route``),
which the iterating thread waits on. Every ending (the server's, the connection's, the session's
close, the block's exit) settles the route, so a waiting iteration always wakes.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from minimcp import jsonrpc
from minimcp.client.era import ListenNotSupportedError
from minimcp.client.listen_route import ListenRoute
from minimcp.client.session import ClientSession
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared import otel
from minimcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from minimcp.types import INTERNAL_ERROR, RequestId, SubscriptionFilter, dump

logger = logging.getLogger("minimcp.client")

#: How long entering ``listen()`` waits for the acknowledgement when the session sets no read timeout.
ACK_TIMEOUT = 30.0
#: How long leaving the block waits for the listen's thread to finish after ending the stream.
END_TIMEOUT = 5.0
#: ``listen-N`` ids, one sequence per process: strings never collide with the session's integer ids.
_listen_ids = itertools.count(1)

#: Called with each event before the iterator returns it (the seam for work that must finish
#: before the consumer reads again).
OnEvent = Callable[[ServerEvent], None]


class SubscriptionLost(RuntimeError):
    """The stream ended without the server's graceful close; listen again and read again."""


class Subscription:
    """One open listen stream: iterate it for typed change events.

    Made by ``listen()`` / ``Client.listen()``. ``next(sub)`` and ``for event in sub`` wait for the
    next event; ``anext(sub)`` does the same, so ported code that awaited it reads unchanged.
    """

    def __init__(self, route: ListenRoute, subscription_id: RequestId, honored: SubscriptionFilter,
                 on_event: OnEvent | None = None) -> None:
        self._route = route
        self._on_event = on_event
        #: The listen request's JSON-RPC id, which tags every frame of the stream.
        self.subscription_id = subscription_id
        #: The part of the requested filter the server agreed to deliver.
        self.honored = honored

    def __iter__(self) -> Subscription:
        return self

    def __next__(self) -> ServerEvent:
        """The next change event; iteration stops when the stream ends gracefully, the block is left
        or :meth:`close` is called.

        Raises ``SubscriptionLost`` when the stream ended any other way.
        """
        return self.next()

    def next(self, timeout: float | None = None) -> ServerEvent:
        """The next change event, waiting at most ``timeout`` seconds (``TimeoutError`` then; the
        subscription stays open). ``with anyio.fail_after(10): event = await anext(sub)`` ports to
        ``event = sub.next(timeout=10)``. Ends as ``__next__`` does, with ``StopIteration``."""
        outcome = self._route.next_event(timeout)
        if outcome is None:
            raise TimeoutError(f"no event on subscription {self.subscription_id!r} within {timeout}s")
        if outcome == "lost":
            raise SubscriptionLost(
                f"subscription {self.subscription_id!r} ended without the server's graceful close; "
                "listen again and read again"
            ) from self._route.error
        if isinstance(outcome, str):
            raise StopIteration
        if self._on_event is not None:
            self._on_event(outcome)  # the event stays pending if this raises: the next call returns it
        self._route.consume(outcome)
        return outcome

    # ``anext(sub)`` calls ``__anext__`` and returns what it returns: the event itself here.
    __anext__ = __next__

    def close(self) -> None:
        """End the iteration from any thread: a ``for event in sub`` loop elsewhere stops, as when the
        ``with`` block is left (which still ends the stream itself and waits for its thread)."""
        self._route.settle("local")


@contextmanager
def listen(
    session: ClientSession,
    *,
    tools_list_changed: bool = False,
    prompts_list_changed: bool = False,
    resources_list_changed: bool = False,
    resource_subscriptions: Sequence[str] = (),
    on_event: OnEvent | None = None,
) -> Iterator[Subscription]:
    """Open one ``subscriptions/listen`` stream on ``session`` (2026-07-28 only).

    Entering returns once the server acknowledged (waiting at most the session's read timeout, or
    ``ACK_TIMEOUT``); leaving ends the stream and waits for its thread. ``on_event`` runs before each
    event is handed to the consumer.

    Raises ``ListenNotSupportedError`` on an older connection, ``MCPError`` when the server refused
    the listen, ``SubscriptionLost`` when the stream ended before its acknowledgement, and
    ``TimeoutError`` when no acknowledgement came in time.
    """
    session.era.check_listen(session)
    if isinstance(resource_subscriptions, str):
        raise TypeError("resource_subscriptions takes a list of URIs, not one string: resource_subscriptions=[uri]")
    wanted = SubscriptionFilter(
        tools_list_changed=tools_list_changed or None,
        prompts_list_changed=prompts_list_changed or None,
        resources_list_changed=resources_list_changed or None,
        resource_subscriptions=list(resource_subscriptions) or None,
    )
    request_id = f"listen-{next(_listen_ids)}"
    route = ListenRoute()
    session.add_listen_route(request_id, route)  # before sending: the acknowledgement cannot outrun it
    params = session.era.stamp(session, {"notifications": dump(wanted)})
    with otel.sending("subscriptions/listen", params, request_id, current=False) as outgoing:
        message = jsonrpc.request(request_id, "subscriptions/listen", outgoing.params)
        driver = threading.Thread(target=_drive, args=(session, message, route, outgoing), name="minimcp-listen",
                                  daemon=True)
        try:
            driver.start()
            timeout = session.read_timeout_seconds or ACK_TIMEOUT
            if not route.wait_acked(timeout):
                raise TimeoutError(f"the server did not acknowledge subscriptions/listen within {timeout}s")
            if route.honored is None:
                raise route.error or SubscriptionLost(f"subscription {request_id!r} ended before it was acknowledged")
            yield Subscription(route, request_id, route.honored, on_event)
        finally:
            route.settle("local")
            if driver.is_alive():
                _end_stream(session, request_id)
                driver.join(END_TIMEOUT)
                if driver.is_alive():
                    logger.warning("the thread of subscription %r did not end within %ss", request_id, END_TIMEOUT)
            session.remove_listen_route(request_id)


def _drive(session: ClientSession, message: Message, route: ListenRoute, outgoing: otel.Outgoing) -> None:
    """Hold the listen request open until its stream ends, then settle the route with how it ended."""
    try:
        answer = session.transport.request(message, headers=session._headers(message["method"], message["params"]),
                                           timeout=None)
        outgoing.answered(answer)
    except MCPError as failure:
        route.settle("lost", failure)
        return
    except Exception as failure:  # the thread's boundary: any failure is the stream's end, reported to the consumer
        logger.debug("subscription %r failed", message["id"], exc_info=True)
        route.settle("lost", MCPError(INTERNAL_ERROR, f"subscription stream failed: {failure}"))
        return
    error = answer.get("error")
    if isinstance(error, dict):
        route.settle("lost", MCPError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")),
                                      error.get("data")))
        return
    route.set_acked(SubscriptionFilter())  # a result is the graceful close, even with no acknowledgement before it
    route.settle("graceful")


def _end_stream(session: ClientSession, request_id: RequestId) -> None:
    """Stop a listen still open: the transport stops waiting, and the server learns the client left
    (over HTTP from the closed stream, elsewhere from ``notifications/cancelled``)."""
    if session.transport.abandon(request_id):
        return
    try:
        session.send_notification("notifications/cancelled", {"requestId": request_id})
    except MCPError:
        logger.debug("could not send notifications/cancelled for subscription %r", request_id)


__all__ = [
    "ListenNotSupportedError",
    "OnEvent",
    "PromptsListChanged",
    "ResourceUpdated",
    "ResourcesListChanged",
    "ServerEvent",
    "Subscription",
    "SubscriptionLost",
    "ToolsListChanged",
    "listen",
]
