"""Connections to one upstream server: opened on demand, pooled, bounded, and failing by name.

A connection serves one proxied call at a time (it is *leased*): everything the upstream sends
on it while the call runs (a question, a log line, progress) belongs to that call, which is the
only way to tell whose a question is on stdio, where nothing on the wire says.

**Whose connection.** Idle connections are kept for the next call made with the same credential
(a :class:`Reach`): the proxy's credential key of the caller (``ProxyServer(credential_key=...)``,
which the ``connection_factory`` receives) and what the upstream's ``credential`` gives for the
caller. A credential is the upstream's own, for every caller (a mapping of headers, or a
``requests`` auth object such as an ``OAuthClientProvider``), or per user: a callable given the
host application's user (``MCPServer.host_user``, the same on the request thread and the worker)
that returns one of those, or ``None`` for the entry's own headers only. Each user's connections
are then made with that user's credential and kept apart from everyone else's; listings are made
with it too, so a user sees what the upstream lists for them. Nothing of the caller's own request
reaches the upstream: a connection sends its entry's headers, its credential, and what the MCP
client itself sends, never the caller's cookies or ``Authorization``. At most ``MAX_POOLS`` keys
keep idle connections; the least recently used key's are closed beyond that.

What goes wrong on the way to the upstream is turned into an ``UpstreamFailure`` naming it (its
name and its URL or command) and saying what to do: down, slow (over the spec's ``timeout``),
answering what is not MCP, or gone in the middle of a call. The upstream's own JSON-RPC error
passes through as itself. A connection that failed, or whose call was abandoned (a cancelled
call, a question handed to a 2026-07-28 client), is closed instead of reused: the upstream may
still be working on that call, and a question it sends later must not reach another caller.

An upstream that could not be reached is not tried again for ``DOWN_FOR`` seconds: calls fail at
once with the same message, so a gateway's other upstreams are served without waiting on it. One
that refused a connection's credential (HTTP 401 or 403) is not: that caller's call fails, saying
so, and everyone else's go on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, Union

import requests
from pydantic import ValidationError

from minimcp.client.cancel import CallCancelled
from minimcp.client.client import Client
from minimcp.client.session import ClientRequestContext, IncomingMessage
from minimcp.client.transports.base import NetworkError, SessionExpired
from minimcp.jsonrpc import MCPError
from minimcp.server.app.proxy.config import ProxyConfigError, UpstreamSpec
from minimcp.types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    ServerCapabilities,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.app.proxy.relay import Relay

logger = logging.getLogger("minimcp.server.proxy")

T = TypeVar("T")

#: Seconds an upstream that could not be reached is left alone: calls fail at once meanwhile.
DOWN_FOR = 2.0
#: Connections to one upstream at once (per credential key); a call beyond waits its ``timeout`` for one.
MAX_CONNECTIONS = 16
#: Credential keys of one upstream that keep idle connections; the least recently used beyond are closed.
MAX_POOLS = 64

#: The answer to an upstream's question when no proxied call is waiting on the connection.
_NOBODY = ErrorData(code=INVALID_REQUEST, message="No client call is waiting on this connection to answer")


class UpstreamFailure(MCPError):
    """The proxy got no usable answer from an upstream; ``data["upstream"]`` names it."""

    def __init__(self, spec: UpstreamSpec, code: int, what: str) -> None:
        super().__init__(code, f"Upstream {spec.name!r} ({spec.where}) {what}", {"upstream": spec.name})


def unreachable(spec: UpstreamSpec, cause: str) -> UpstreamFailure:
    return UpstreamFailure(spec, INTERNAL_ERROR, f"is unreachable: {cause}; check that it is running and that the "
                                                 "proxy's configuration points at it")


def classify(spec: UpstreamSpec, method: str, failure: Exception) -> Exception:
    """What the caller gets for ``failure`` met calling ``method`` upstream: the upstream's own
    JSON-RPC error as itself, else an ``UpstreamFailure`` saying which upstream and what went wrong."""
    if isinstance(failure, UpstreamFailure):
        return failure
    if isinstance(failure, MCPError) and failure.code == REQUEST_TIMEOUT \
            and failure.message == f"Request '{method}' timed out":  # the client's own words, not the upstream's
        return UpstreamFailure(spec, REQUEST_TIMEOUT, f"did not answer {method} within {spec.timeout:g} s; it "
                                                      "may be overloaded: try again, or raise its timeout")
    if isinstance(failure, (NetworkError, SessionExpired)):
        return unreachable(spec, failure.message)
    if isinstance(failure, MCPError):
        if failure.code == CONNECTION_CLOSED:
            return UpstreamFailure(spec, CONNECTION_CLOSED, f"closed the connection during {method} (its process "
                                                            "exited, or the server went away); try again")
        return failure  # the upstream's own error
    if isinstance(failure, (requests.ConnectionError, ConnectionError)):
        return unreachable(spec, str(failure) or type(failure).__name__)
    if isinstance(failure, (ValidationError, ValueError, requests.RequestException, OSError, RuntimeError)):
        cause = str(failure).partition("\n")[0][:300] or type(failure).__name__
        return UpstreamFailure(spec, INTERNAL_ERROR, f"answered {method} with something that is not MCP ({cause})")
    return failure


#: What an upstream is reached with besides its entry's headers: headers, a ``requests`` auth object, or nothing.
Credential = Union[Mapping[str, str], requests.auth.AuthBase, None]
#: An upstream's credential: the same for every caller, or ``user -> Credential`` (the host's user, ``None`` for nobody).
Credentials = Union[Credential, Callable[[Any], Credential]]


@dataclass(frozen=True)
class Reach:
    """Whose connections these are: the proxy's credential ``key`` of the caller and the
    credential they are made with. Equal reaches share a pool; an auth object counts by identity
    (the pool's connections hold it, so its id is not reused while the key is in use), so a
    per-user credential gives each user the same auth object every time. The credential stays
    out of ``repr``: a reach in a log line names no token."""

    key: Hashable = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth_id: int | None = None
    auth: requests.auth.AuthBase | None = field(default=None, compare=False, repr=False)


class _Pool:
    """The connections of one ``Reach``: ``slots`` bounds those in use, ``idle`` keeps the rest;
    ``holders`` counts the leases waiting or running (a pool with none and nothing idle is dropped).
    Guarded by ``Upstream._lock``, except ``slots``, a semaphore of its own."""

    def __init__(self, size: int) -> None:
        self.slots = threading.BoundedSemaphore(size)
        self.idle: list[UpstreamConnection] = []
        self.holders = 0


def _refused_credential(failure: Exception) -> int | None:
    """The HTTP status (401, 403) with which an upstream refused a connection's credential, if it did."""
    data = failure.error.data if isinstance(failure, MCPError) else None
    status = data.get("status") if isinstance(data, dict) else None
    return status if status in (401, 403) else None


class UpstreamConnection:
    """One connected ``Client`` to the upstream; its questions go to the ``relay`` of the call
    that leased it (set and cleared by the lease, read by the client's callback threads)."""

    def __init__(self, upstream: Upstream, reach: Reach) -> None:
        self.upstream = upstream
        self.reach = reach
        self.key = reach.key
        self.relay: Relay | None = None
        #: Set when this connection must not serve another call (a failure, an abandoned call).
        self.broken = False
        spec = upstream.spec
        reach_options: dict[str, Any] = {}
        if isinstance(spec.target, str):
            headers = {**spec.headers, **dict(reach.headers)}
            if headers:
                reach_options["headers"] = headers
            if reach.auth is not None:
                reach_options["auth"] = reach.auth
        self.client = upstream.connection_factory(spec, reach.key, dict(
            mode=spec.mode, read_timeout_seconds=spec.connect_timeout, cache=None, log_level="debug",
            elicitation_callback=self._elicit, sampling_callback=self._sample, list_roots_callback=self._roots,
            logging_callback=self._log, message_handler=self._notified, **reach_options))

    def open(self) -> None:
        """Connect, bounded by the spec's ``connect_timeout``; calls are then bounded by its ``timeout``."""
        client = self.client
        client.__enter__()
        client.session.read_timeout_seconds = self.upstream.spec.timeout
        self.upstream.learned(client.server_capabilities)

    def close(self) -> None:
        try:
            self.client.__exit__(None, None, None)
        except Exception:  # closing a connection that already failed may fail again; nothing is waiting on it
            logger.debug("closing a connection to upstream %r failed", self.upstream.name, exc_info=True)

    # --- what the upstream sends, handed to the call holding the lease ----------------------------
    def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | ErrorData:
        relay = self.relay
        if relay is None:
            return _NOBODY
        return relay.ask(self, method, params)

    def _elicit(self, _: ClientRequestContext,
                params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult | ErrorData:
        answer = self._ask("elicitation/create", dump(params))
        return answer if isinstance(answer, ErrorData) else ElicitResult.model_validate(answer)

    def _sample(self, _: ClientRequestContext,
                params: CreateMessageRequestParams) -> CreateMessageResult | CreateMessageResultWithTools | ErrorData:
        answer = self._ask("sampling/createMessage", dump(params))
        if isinstance(answer, ErrorData):
            return answer
        if params.tools:
            return CreateMessageResultWithTools.model_validate(answer)
        return CreateMessageResult.model_validate(answer)

    def _roots(self, _: ClientRequestContext) -> ListRootsResult | ErrorData:
        answer = self._ask("roots/list", {})
        return answer if isinstance(answer, ErrorData) else ListRootsResult.model_validate(answer)

    def _log(self, params: LoggingMessageNotificationParams) -> None:
        relay = self.relay
        if relay is not None:
            relay.log(params)

    def _notified(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            return
        listener = self.upstream.on_notification
        if listener is not None:
            listener(self.upstream, message)


def open_client(spec: UpstreamSpec, key: Hashable, options: dict[str, Any]) -> Client:
    """The default connection factory: a ``Client`` to the spec's target; ``key`` (a caller's
    credential key) is for factories that sign each caller in on their own."""
    return Client(spec.target, **options)


#: ``(spec, credential key, Client keywords) -> Client``: how a connection to an upstream is made.
ConnectionFactory = Callable[[UpstreamSpec, Hashable, dict[str, Any]], Client]
#: ``(upstream, notification)``: what the proxy does with a notification no call is waiting for.
NotificationListener = Callable[["Upstream", Any], None]


class Upstream:
    """The connections to one upstream server, pooled per credential (``Reach``).

    ``credential``: what every connection is made with besides the spec's headers, or a callable
    of the user (``user()``, the host's user of the current call) giving it per user; see the
    module docstring.
    """

    def __init__(self, spec: UpstreamSpec, *, connection_factory: ConnectionFactory = open_client,
                 max_connections: int = MAX_CONNECTIONS, on_notification: NotificationListener | None = None,
                 credential: Credentials = None, user: Callable[[], Any] = lambda: None) -> None:
        if credential is not None and not isinstance(spec.target, str):
            raise ProxyConfigError(f"upstream {spec.name!r} is not reached over HTTP, so it takes no credentials; "
                                   "give a command its credential in its env")
        self.spec = spec
        self.connection_factory = connection_factory
        self.on_notification = on_notification
        self.max_connections = max_connections
        self.credential = credential
        self.user = user
        # _lock guards _pools (in least recently used order), _down and _capabilities.
        self._lock = threading.Lock()
        self._pools: dict[Reach, _Pool] = {}
        self._down: tuple[float, UpstreamFailure] | None = None
        self._capabilities: ServerCapabilities | None = None
        self._closed = False
        # _subscribing guards _listener (the connection resource subscriptions are made on) and
        # _subscribed (the URIs subscribed on it); held across the subscribe request, bounded by its timeout.
        self._subscribing = threading.Lock()
        self._listener: UpstreamConnection | None = None
        self._subscribed: set[str] = set()

    def own_reach(self) -> Reach | None:
        """The reach of what the proxy asks on its own behalf, for no caller (its listen upstream):
        the gateway's credential, if any; ``None`` where the credential is a user's, as the proxy
        then has none of its own to reach the upstream with."""
        given = self.credential
        if given is None or isinstance(given, (Mapping, requests.auth.AuthBase)):
            return self.reach()
        return None

    def reach(self, key: Hashable = None) -> Reach:
        """Whose connection the current call needs: ``key`` (the proxy's credential key of the
        caller) and the credential the upstream gives the current user. What a per-user
        credential raises fails the request it is needed for, a listing included: for a user who
        has none, give ``None`` (the upstream then answers as to a caller without one)."""
        given = self.credential
        if given is not None and not isinstance(given, (Mapping, requests.auth.AuthBase)):
            given = given(self.user())
        if given is None:
            return Reach(key)
        if isinstance(given, requests.auth.AuthBase):
            return Reach(key, auth_id=id(given), auth=given)
        if isinstance(given, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in given.items()):
            return Reach(key, tuple(sorted(given.items())))
        raise UpstreamFailure(self.spec, INTERNAL_ERROR,
                              f"was given a credential that gave a {type(given).__name__}: the proxy's credentials= must "
                              "give a mapping of header names to strings, a requests auth object (an "
                              "OAuthClientProvider), or None")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def capabilities(self) -> ServerCapabilities | None:
        """What the upstream declared on the last connection made (``None`` before the first)."""
        with self._lock:
            return self._capabilities

    def learned(self, capabilities: ServerCapabilities | None) -> None:
        with self._lock:
            self._capabilities = capabilities

    def call(self, method: str, operation: Callable[[UpstreamConnection], T], relay: Relay | None = None,
             key: Hashable = None) -> T:
        """Run ``operation`` on a leased connection (``key``: the caller's credential key, or the
        ``Reach`` already found); failures come back as ``classify`` says."""
        with self.lease(method, relay, key) as connection:
            try:
                return operation(connection)
            except CallCancelled:
                connection.broken = True
                raise
            except Exception as failure:
                answer = classify(self.spec, method, failure)
                if isinstance(answer, UpstreamFailure) or not isinstance(answer, MCPError):
                    connection.broken = True
                if answer is failure:
                    raise
                raise answer from failure
            except BaseException:  # a question for a 2026-07-28 client: the call was abandoned
                connection.broken = True
                raise

    @contextmanager
    def lease(self, method: str, relay: Relay | None = None, key: Hashable = None) -> Iterator[UpstreamConnection]:
        """A connection for one call made with the caller's credential (``key``: the caller's
        credential key, or the ``Reach`` already found), its questions going to ``relay``;
        returned to the pool after, unless it broke."""
        reach = key if isinstance(key, Reach) else self.reach(key)
        pool = self._hold(reach)
        try:
            if not pool.slots.acquire(timeout=self.spec.timeout):
                raise UpstreamFailure(self.spec, REQUEST_TIMEOUT,
                                      f"had all {self.max_connections} of its connections busy for "
                                      f"{self.spec.timeout:g} s; {method} was not sent: try again, or lower the load")
            connection: UpstreamConnection | None = None
            try:
                connection = self._idle(pool) or self._open(reach)
                connection.relay = relay
                yield connection
            finally:
                if connection is not None:
                    connection.relay = None
                    self._give_back(pool, connection)
                pool.slots.release()
        finally:
            self._let_go(reach, pool)

    def _hold(self, reach: Reach) -> _Pool:
        with self._lock:
            if self._closed:
                raise UpstreamFailure(self.spec, INTERNAL_ERROR, "is closed: the proxy is shutting down")
            pool = self._pools.pop(reach, None) or _Pool(self.max_connections)
            self._pools[reach] = pool  # last: the most recently used
            pool.holders += 1
            return pool

    def _let_go(self, reach: Reach, pool: _Pool) -> None:
        """The lease is over: a pool nobody holds with nothing idle is dropped, and beyond
        ``MAX_POOLS`` the least recently used idle ones are closed."""
        closing: list[UpstreamConnection] = []
        with self._lock:
            pool.holders -= 1
            if pool.holders == 0 and not pool.idle and self._pools.get(reach) is pool:
                del self._pools[reach]
            excess = len(self._pools) - MAX_POOLS
            for stale, kept in list(self._pools.items()):
                if excess <= 0:
                    break
                if kept.holders == 0:
                    closing += kept.idle
                    del self._pools[stale]
                    excess -= 1
        for connection in closing:
            connection.close()

    def _idle(self, pool: _Pool) -> UpstreamConnection | None:
        with self._lock:
            return pool.idle.pop() if pool.idle else None

    def _open(self, reach: Reach) -> UpstreamConnection:
        with self._lock:
            down = self._down
        if down is not None and time.monotonic() < down[0]:
            raise down[1]
        connection = UpstreamConnection(self, reach)
        try:
            connection.open()
        except Exception as failed:
            connection.close()
            status = _refused_credential(failed)
            if status is not None:  # this credential's failure, not the upstream's: nobody else's calls wait
                raise UpstreamFailure(self.spec, INTERNAL_ERROR,
                                      f"refused the credential it was reached with (HTTP {status}): it is missing, "
                                      "expired or revoked, or not one this upstream issued") from failed
            answer = classify(self.spec, "initialize", failed)
            if not isinstance(answer, UpstreamFailure):
                answer = unreachable(self.spec, f"{type(failed).__name__}: {failed}")
            elif answer.code == REQUEST_TIMEOUT:
                answer = unreachable(self.spec, f"it did not answer within {self.spec.connect_timeout:g} s of connecting")
            with self._lock:
                self._down = (time.monotonic() + DOWN_FOR, answer)
            raise answer from failed
        with self._lock:
            self._down = None
        return connection

    def _give_back(self, pool: _Pool, connection: UpstreamConnection) -> None:
        with self._lock:
            keep = not connection.broken and not self._closed
            if keep:
                pool.idle.append(connection)
        if not keep:
            connection.close()

    def subscribe(self, uri: str) -> None:
        """Hear ``uri``'s updates from now on, on a connection kept for that alone (a pooled one
        may be closed at any time); once per URI. The updates go to ``on_notification``."""
        with self._subscribing:
            if uri in self._subscribed:
                return
            listener = self._listener
            try:
                if listener is None or listener.broken:
                    listener = self._listener = self._open(self.reach())
                listener.client.subscribe_resource(uri)
            except Exception as failure:
                if listener is not None:
                    listener.broken = True
                answer = classify(self.spec, "resources/subscribe", failure)
                if answer is failure:
                    raise
                raise answer from failure
            self._subscribed.add(uri)

    def close(self) -> None:
        """Close the idle connections; those in use close when their call ends."""
        with self._lock:
            self._closed = True
            idle = [connection for pool in self._pools.values() for connection in pool.idle]
            for pool in self._pools.values():
                pool.idle.clear()
        with self._subscribing:
            listener, self._listener = self._listener, None
        for connection in idle + ([listener] if listener is not None else []):
            connection.close()
