"""The two protocol eras as objects: every rule that differs between them has its home here.

A legacy connection (opened by ``initialize``, 2024-11-05 to 2025-11-25) and a 2026-07-28 request
(self-contained, its version in ``_meta``) get one of the two era objects when the transport
classifies them, and the core asks the object instead of branching on a flag:

- asking the client: ``questions`` and ``rounds`` pick the strategy (pushed as a server-to-client
  request, or replayed from ``input_required`` rounds), ``body_questions`` whether a tool body may
  ask, ``ask_back`` whether the connection can push requests at all;
- errors: ``unexpected`` (what the client learns of a failure nobody anticipated), ``admit``
  (the pre-``initialize`` gate), ``bad_answer``, ``error_answer`` (whether an in-process client
  gets the handler's own exception);
- the wire: ``finish`` (``resultType``, caching hints, ``serverInfo``), ``url_elicitation``
  (``elicitationId``), ``change_notifications`` (the ``listChanged``/``subscribe`` capabilities),
  ``advertises_extensions``;
- where a message goes: ``channel`` (a related request's stream, or the standalone channel),
  ``log_stream``, ``send_elicit_complete``, ``log_by_default``;
- the HTTP edge: ``http_sessions`` (whether ``Mcp-Session-Id`` applies), ``error_statuses`` (an
  error answer's status by its code, or 200), ``resumable`` (SSE event ids and ``Last-Event-ID``).
"""

from __future__ import annotations

import copy
import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import ValidationError

from minimcp.jsonrpc import InProcessError, MCPError, Message, error_from
from minimcp.server.core.questions import AskClient, NoQuestions, Questions
from minimcp.server.core.rounds import RoundBody, run_round, seal_own_state
from minimcp.server.core.sealing import RequestStateSecurity
from minimcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from minimcp.types.methods import EraName
from minimcp.types import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSIONS,
    CacheableResult,
    ClientCapabilities,
    Implementation,
    InputRequiredResult,
    RequestId,
)

if TYPE_CHECKING:
    from minimcp.server.core.context import ServerRequestContext, ServerSession
    from minimcp.server.core.outbox import Outbox
    from minimcp.server.core.initialization import NotificationOptions
    from minimcp.server.core.served import ServingServer
    from minimcp.server.core.sessions import Connection
    from minimcp.shared.transport_context import TransportContext

logger = logging.getLogger("minimcp.server.session")

#: What a 2026-07-28 ``input_required`` elicitation keeps of a resolver model's schema.
_INPUT_REQUEST_SCHEMA_KEYS = ("type", "properties", "required")

#: The ``(clientCapabilities, clientInfo)`` pairs that validated, by the name and version the
#: client gave itself: a client sends the same pair with every request, and a repeat is taken raw.
#: Found by name and version, then compared whole, as the JSON values they were decoded from (where
#: ``1`` and ``true`` are equal, and so validate alike). Bounded, since clients choose them: names
#: (emptied when full), pairs per name (the oldest dropped), each pair's text. A name's pairs are a
#: tuple replaced whole, so readers need no lock. Only validity is kept: each connection still makes
#: models of its own.
_VALID_DECLARATIONS: dict[tuple[str | None, str | None], tuple[tuple[Any, Any], ...]] = {}
_MAX_DECLARING_CLIENTS = 256
_MAX_PAIRS_PER_CLIENT = 4
_MAX_DECLARATION_TEXT = 4096


def _declarer(info: Any) -> tuple[str | None, str | None]:
    """The ``(name, version)`` a ``clientInfo`` gives, ``None`` for either that is not a string."""
    if not isinstance(info, dict):
        return None, None
    name, version = info.get("name"), info.get("version")
    return name if isinstance(name, str) else None, version if isinstance(version, str) else None


def _declared(message: Message) -> tuple[Any, Any]:
    """The ``clientCapabilities`` and ``clientInfo`` of a message's ``_meta``, as they came (``None``
    where there is no such object: the ladder refuses the message then)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return (meta.get(META_CLIENT_CAPABILITIES), meta.get(META_CLIENT_INFO)) if isinstance(meta, dict) else (None, None)


def _validated_before(capabilities: Any, info: Any) -> bool:
    """Whether an equal pair validated before (so this one would too, and may be taken raw)."""
    for known_capabilities, known_info in _VALID_DECLARATIONS.get(_declarer(info), ()):
        if known_capabilities == capabilities and known_info == info:
            return True
    return False


def _remember(capabilities: Any, info: Any) -> None:
    """Keep a pair that validated (a copy: the request's own values are its handlers')."""
    if len(repr(capabilities)) + len(repr(info)) > _MAX_DECLARATION_TEXT:
        return
    declarer = _declarer(info)
    if declarer not in _VALID_DECLARATIONS and len(_VALID_DECLARATIONS) >= _MAX_DECLARING_CLIENTS:
        _VALID_DECLARATIONS.clear()
    kept = _VALID_DECLARATIONS.get(declarer, ())[-(_MAX_PAIRS_PER_CLIENT - 1):]
    _VALID_DECLARATIONS[declarer] = (*kept, copy.deepcopy((capabilities, info)))


#: The first legacy revision whose clients expect priming events and resume with ``Last-Event-ID``.
RESUMABLE_SINCE = "2025-11-25"


class Era(ABC):
    """The rules of one protocol era; stateless, so one instance of each serves every request."""

    name: str
    legacy: bool
    #: The era's name in the method table (``Method.eras``).
    table_key: EraName
    ask_back: bool
    log_by_default: bool
    #: Whether the capabilities carry ``extensions`` (SEP-2133): the 2025-11-25 schema has no such member.
    advertises_extensions: bool
    #: The protocol versions of this era, oldest first.
    versions: tuple[str, ...]
    #: The newest of ``versions``: what a connection speaks when nobody asked for another.
    latest: str
    #: Whether a connection's requests wait for a handshake (``admit``): a 2026-07-28 request
    #: carries its own declarations, so the core asks ``admit`` only where this is ``True``.
    handshake: bool

    # --- which era, which connection -------------------------------------------------------------
    def speaks(self, version: object) -> bool:
        """Whether ``version`` is one of this era's."""
        return version in self.versions

    @abstractmethod
    def connection(self, server: ServingServer | None, message: Message | None = None,
                   headers: Mapping[str, str] | None = None) -> Connection:
        """A new connection for ``message`` (``headers``: its HTTP headers, ``None`` off HTTP); raises
        ``MCPError`` for a message this era refuses to describe."""

    @abstractmethod
    def on_stream(self, server: ServingServer, stream: Connection, message: Message) -> Connection:
        """The connection a request on an ordered stream (stdio, in memory) is served on; ``stream``
        is the stream's own legacy session, which also tracks every call in flight."""

    # --- asking the client -----------------------------------------------------------------------
    @abstractmethod
    def questions(self, session: ServerSession, request_id: RequestId | None) -> Questions:
        """How a question asked outside ``rounds`` (a completion, a listen, a plain handler) travels."""

    @abstractmethod
    def rounds(self, ctx: ServerRequestContext[Any, Any], security: RequestStateSecurity, audience: str | None,
               run: RoundBody, asks: bool = True) -> Any:
        """Run a handler that may ask: directly (legacy), or as one 2026-07-28 round whose open
        questions become an ``input_required`` result with a sealed ``requestState``. ``asks``:
        whether it can ask at all (``False``: nothing it runs has a ``Context`` to ask with)."""

    @abstractmethod
    def body_questions(self, elicit_replay: bool) -> bool:
        """Whether a tool body (``ctx.elicit``) may ask; ``elicit_replay`` is the server's opt-in to
        re-running a body on 2026-07-28."""

    # --- errors ----------------------------------------------------------------------------------
    @abstractmethod
    def admit(self, connection: Connection, method: str) -> None:
        """Refuse a request this connection may not make yet (asked where ``handshake``)."""

    @abstractmethod
    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        """The error a client gets for an exception no handler anticipated."""

    @abstractmethod
    def bad_answer(self, exc: ValueError, asker: str) -> NoReturn:
        """Raise the error for a client answer resolver ``asker`` cannot use (``exc`` says why)."""

    @abstractmethod
    def error_answer(self, request_id: RequestId, exc: MCPError, transport: TransportContext) -> Message:
        """The error response for a handler's ``MCPError``."""

    # --- the wire --------------------------------------------------------------------------------
    @abstractmethod
    def finish(self, result: Any, wire: dict[str, Any], server_info: dict[str, Any]) -> None:
        """Decorate (or refuse) a handler's result in wire form, in place."""

    @abstractmethod
    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        """The ``elicitation/create`` params of a URL question."""

    @abstractmethod
    def resolver_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The ``requestedSchema`` a resolver's ``Elicit`` question carries, from its model's form
        schema (``ctx.elicit`` sends the form schema whole in both eras)."""

    @abstractmethod
    def change_notifications(self, handlers: Collection[str],
                             options: NotificationOptions) -> tuple[bool, bool, bool, bool]:
        """The advertised ``(tools, prompts, resources) listChanged`` and ``resources.subscribe`` flags."""

    # --- where a message goes --------------------------------------------------------------------
    @abstractmethod
    def channel(self, connection: Connection, related_request_id: RequestId | None) -> Outbox | None:
        """Where a message that is not on its own request's stream goes, if anywhere."""

    @abstractmethod
    def log_stream(self, related_request_id: RequestId | None, request_id: RequestId | None) -> RequestId | None:
        """The request whose stream a protocol log message of request ``request_id`` rides."""

    @abstractmethod
    def send_elicit_complete(self, session: ServerSession, elicitation_id: str,
                             related_request_id: RequestId | None) -> None:
        """Tell the client a URL elicitation finished, where the era has a way to."""

    # --- HTTP edge rules (asked by edges/http/exchange.py) ----------------------------------------
    #: Whether a request belongs to a session that ``initialize`` opened (``Mcp-Session-Id``).
    http_sessions: bool
    #: Whether an error answer's HTTP status follows its JSON-RPC code (else 200, the error in the body).
    error_statuses: bool

    @abstractmethod
    def resumable(self, connection: Connection) -> bool:
        """Whether this connection's SSE answers get event ids and can be resumed with ``Last-Event-ID``."""


class LegacyEra(Era):
    """2024-11-05 to 2025-11-25: a session, server-to-client requests, the official SDK's error parity."""

    name = "legacy"
    legacy = True
    table_key = "legacy"
    handshake = True
    ask_back = True
    log_by_default = True
    advertises_extensions = False
    versions = HANDSHAKE_PROTOCOL_VERSIONS
    latest = LATEST_HANDSHAKE_VERSION

    # --- which era, which connection -------------------------------------------------------------
    def connection(self, server: ServingServer | None, message: Message | None = None,
                   headers: Mapping[str, str] | None = None) -> Connection:
        """A session about to ``initialize``: the handshake fills it in."""
        return _connection_type()(server, protocol_version=self.latest, era=self)

    def on_stream(self, server: ServingServer, stream: Connection, message: Message) -> Connection:
        return stream  # the stream is the session

    def negotiate(self, requested: object) -> str:
        """The version an ``initialize`` asking for ``requested`` settles on: that one if we speak
        it, else our latest (the client then decides whether to go on)."""
        return requested if isinstance(requested, str) and self.speaks(requested) else self.latest

    def questions(self, session: ServerSession, request_id: RequestId | None) -> Questions:
        return AskClient(session, request_id)

    def rounds(self, ctx: ServerRequestContext[Any, Any], security: RequestStateSecurity, audience: str | None,
               run: RoundBody, asks: bool = True) -> Any:
        return run(self.questions(ctx.session, ctx.request_id), None, None)

    def body_questions(self, elicit_replay: bool) -> bool:
        return True

    def admit(self, connection: Connection, method: str) -> None:
        # Gated until initialize is answered, not until notifications/initialized: the specification
        # asks the client to wait for the initialize response only, and the official SDK serves a
        # request that arrives in between.
        if not connection.initialize_accepted and method not in ("initialize", "ping"):
            raise MCPError(INVALID_REQUEST, f"Received {method} before initialize; send initialize first")

    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        return MCPError(0, str(exc))  # what the official SDK sends, for wire parity

    def bad_answer(self, exc: ValueError, asker: str) -> NoReturn:
        raise exc

    def error_answer(self, request_id: RequestId, exc: MCPError, transport: TransportContext) -> Message:
        return error_from(request_id, exc)  # the official in-memory client reads legacy errors off the wire

    def finish(self, result: Any, wire: dict[str, Any], server_info: dict[str, Any]) -> None:
        if isinstance(result, InputRequiredResult) or (isinstance(wire, dict)
                                                       and wire.get("resultType") == "input_required"):
            raise MCPError(INTERNAL_ERROR, "Handler returned an invalid result")
        if wire.get("resultType") == "complete":  # the models' 2026-07-28 default
            del wire["resultType"]
        if isinstance(result, CacheableResult):  # a task's own ttlMs, its lifetime, stays
            wire.pop("ttlMs", None)
            wire.pop("cacheScope", None)

    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        return {**params, "elicitationId": elicitation_id}

    def resolver_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return schema

    def change_notifications(self, handlers: Collection[str],
                             options: NotificationOptions) -> tuple[bool, bool, bool, bool]:
        return (options.tools_changed, options.prompts_changed, options.resources_changed,
                "resources/subscribe" in handlers)

    def channel(self, connection: Connection, related_request_id: RequestId | None) -> Outbox | None:
        return connection.channel(related_request_id)

    def log_stream(self, related_request_id: RequestId | None, request_id: RequestId | None) -> RequestId | None:
        return related_request_id

    def send_elicit_complete(self, session: ServerSession, elicitation_id: str,
                             related_request_id: RequestId | None) -> None:
        session.send_notification("notifications/elicitation/complete", related_request_id,
                                  {"elicitationId": elicitation_id})

    # --- HTTP edge rules ---------------------------------------------------------------------------
    http_sessions = True
    error_statuses = False

    def resumable(self, connection: Connection) -> bool:
        # Older clients may not expect the empty priming event; a session-less one has nothing to resume.
        return connection.id is not None and connection.protocol_version >= RESUMABLE_SINCE


class ModernEra(Era):
    """2026-07-28: self-contained requests, ``input_required`` rounds, sanitized internal errors."""

    name = "2026-07-28"
    legacy = False
    table_key = "modern"
    handshake = False
    ask_back = False
    log_by_default = False
    advertises_extensions = True
    versions = MODERN_PROTOCOL_VERSIONS
    latest = MODERN_PROTOCOL_VERSIONS[-1]

    # --- which era, which connection -------------------------------------------------------------
    def connection(self, server: ServingServer | None, message: Message | None = None,
                   headers: Mapping[str, str] | None = None) -> Connection:
        """The request described by its envelope, run through the ladder (over HTTP, with its
        routing headers); the method's existence is checked when it runs, inside the middleware
        chain, and a ``tools/call``'s ``Mcp-Param-*`` headers by the HTTP edge.
        Without a ``message`` (an in-process call, ``mcp.call_tool``) nothing is declared."""
        connection_type = _connection_type()
        if message is None:
            return connection_type(server, protocol_version=self.latest, era=self)
        # Over HTTP the message was decoded from JSON, so each value is a JSON value: a pair equal
        # to one that validated before validates again, and is taken raw. Asked before the ladder,
        # of what the ladder will find in ``_meta``, so the ladder is the last step it hands on to.
        decoded = headers is not None
        seen = decoded and _validated_before(*_declared(message))
        route = classify_inbound_request(message, headers=headers, supported_modern_versions=self.versions)
        if isinstance(route, InboundLadderRejection):
            raise MCPError(route.code, route.message, route.data)
        if not isinstance(route.client_capabilities, dict):
            raise MCPError(INVALID_PARAMS, f"_meta must carry '{META_CLIENT_CAPABILITIES}' as an object")
        meta = message["params"]["_meta"]
        log_level = meta.get(META_LOG_LEVEL)
        if log_level is not None and log_level not in _log_levels():
            raise MCPError(INVALID_PARAMS, f"Invalid log level in _meta: {log_level!r}")
        capabilities, info = route.client_capabilities, route.client_info
        if seen:
            return connection_type(server, protocol_version=route.protocol_version, era=self, log_level=log_level,
                                   declared=(capabilities, info))
        try:
            client_capabilities = ClientCapabilities.model_validate(capabilities)
            client_info = Implementation.model_validate(info) if isinstance(info, dict) else None
        except ValidationError:
            raise MCPError(INVALID_PARAMS, "Invalid clientCapabilities or clientInfo in _meta") from None
        if decoded:
            _remember(capabilities, info)
        return connection_type(server, protocol_version=route.protocol_version, client_capabilities=client_capabilities,
                               client_info=client_info, era=self, log_level=log_level)

    def on_stream(self, server: ServingServer, stream: Connection, message: Message) -> Connection:
        """A fresh connection per request, seeing what the stream's driver gave it (its lifespan
        state, whether internal errors are shown)."""
        connection = self.connection(server, message)
        connection.expose_errors = stream.expose_errors
        connection.lifespan_state = stream.lifespan_state
        return connection

    def questions(self, session: ServerSession, request_id: RequestId | None) -> Questions:
        return NoQuestions()

    def rounds(self, ctx: ServerRequestContext[Any, Any], security: RequestStateSecurity, audience: str | None,
               run: RoundBody, asks: bool = True) -> Any:
        params = ctx.params or {}
        if asks or params.get("inputResponses") is not None or params.get("requestState") is not None:
            return run_round(ctx, security, audience, run)
        # Nothing to replay and nothing will be asked: no round is opened (nor a binding made)
        # unless the handler answers input_required itself, with a state of its own to seal.
        result = run(NoQuestions(), None, None)
        return seal_own_state(ctx, security, audience, result) if isinstance(result, InputRequiredResult) else result

    def body_questions(self, elicit_replay: bool) -> bool:
        return elicit_replay

    def admit(self, connection: Connection, method: str) -> None:
        return None

    def unexpected(self, exc: BaseException, expose: bool) -> MCPError:
        return MCPError(INTERNAL_ERROR, str(exc) if expose else "Internal server error")

    def bad_answer(self, exc: ValueError, asker: str) -> NoReturn:
        text = str(exc).removeprefix("Received ")
        raise type(exc)(f"Resolver '{asker}' received {text}") from None

    def error_answer(self, request_id: RequestId, exc: MCPError, transport: TransportContext) -> Message:
        if transport.kind == "memory":
            return InProcessError(request_id, exc)
        return error_from(request_id, exc)

    def finish(self, result: Any, wire: dict[str, Any], server_info: dict[str, Any]) -> None:
        wire.setdefault("resultType", "complete")
        wire.setdefault("_meta", {}).setdefault(META_SERVER_INFO, server_info)

    def url_elicitation(self, params: dict[str, Any], elicitation_id: str) -> dict[str, Any]:
        return params

    def resolver_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        # The official input_required request keeps the spec's shape only: no model title or docstring.
        return {key: schema[key] for key in _INPUT_REQUEST_SCHEMA_KEYS if key in schema}

    def change_notifications(self, handlers: Collection[str],
                             options: NotificationOptions) -> tuple[bool, bool, bool, bool]:
        listen = "subscriptions/listen" in handlers  # change notifications travel on listens only
        return listen, listen, listen, listen

    def channel(self, connection: Connection, related_request_id: RequestId | None) -> Outbox | None:
        return None  # nothing leaves a 2026-07-28 request except on its own stream

    def log_stream(self, related_request_id: RequestId | None, request_id: RequestId | None) -> RequestId | None:
        return request_id

    def send_elicit_complete(self, session: ServerSession, elicitation_id: str,
                             related_request_id: RequestId | None) -> None:
        logger.debug("send_elicit_complete(%r) ignored: 2026-07-28 has no completion notification", elicitation_id)

    # --- HTTP edge rules ---------------------------------------------------------------------------
    http_sessions = False
    error_statuses = True

    def resumable(self, connection: Connection) -> bool:
        return False  # a broken 2026-07-28 stream is simply re-issued: no ids, nothing to resume against


LEGACY = LegacyEra()
MODERN = ModernEra()


def era_of_version(protocol_version: str | None) -> Era:
    """The era a negotiated (or requested) protocol version belongs to."""
    return MODERN if MODERN.speaks(protocol_version) else LEGACY


def _exists_everywhere(method: str, era: Era) -> bool:
    return True


def era_of_message(message: Message, header_version: str | None = None,
                   exists_in: Callable[[str, Era], bool] = _exists_everywhere) -> Era:
    """The era an incoming message belongs to, for every transport (protocol.md §1.2): 2026-07-28
    when it says so in ``_meta``, or its ``MCP-Protocol-Version`` header (``header_version``, HTTP
    only) names a version outside the handshake's, or its method is one legacy does not have
    (``exists_in(method, era)``: the method table's say); legacy otherwise."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
        return MODERN
    if header_version is not None and not LEGACY.speaks(header_version):
        return MODERN
    method = message.get("method")
    if isinstance(method, str) and not exists_in(method, LEGACY):
        return MODERN
    return LEGACY



def arrival(server: ServingServer, message: Message, header_version: str | None, routing: Mapping[str, str] | None,
            exists_in: Callable[[str, Era], bool] = _exists_everywhere) -> tuple[Era, Connection | None]:
    """The era ``message`` belongs to (``era_of_message``) and, for a self-contained 2026-07-28
    message, its connection, described by its envelope and ``routing`` headers
    (``ModernEra.connection``; a legacy message's is its session's, which the transport looks up)."""
    era = era_of_message(message, header_version, exists_in)
    return era, None if era.http_sessions else era.connection(server, message, routing)

# sessions.py gives its connections these eras, so it is imported when first needed, not at the top;
# cached, since a 2026-07-28 request builds a connection each (an import statement costs a lookup
# under the import lock every time).
@functools.cache
def _connection_type() -> type[Connection]:
    from minimcp.server.core.sessions import Connection

    return Connection


@functools.cache
def _log_levels() -> Collection[str]:
    from minimcp.server.core.sessions import LOG_LEVELS

    return LOG_LEVELS
