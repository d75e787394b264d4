"""ClientSession: one request, one response, over any transport, in either protocol era.

What this file owns: request ids, stamping each request for its era (2026-07-28 ``_meta`` and
HTTP headers; the negotiated ``MCP-Protocol-Version`` after a legacy handshake), the one retry a
``-32022`` earns, answering the server's questions through the user's callbacks, and routing
notifications to ``message_handler``, ``logging_callback`` and progress callbacks. What it does
not do: choose the era (that is :class:`~minimcp.client.Client`'s negotiation) or loop over
``input_required`` rounds (also the Client's; here a round is returned when asked for with
``allow_input_required=True``).

Server questions reach the session two ways, and one function answers both: as server-to-client
requests on a legacy connection (:meth:`ClientSession._on_message`), and as the ``inputRequests``
of an ``InputRequiredResult`` on 2026-07-28 (:meth:`ClientSession.fulfil_input_requests`). They
differ only in what a failing callback does: on legacy its exception is the server's problem
(answered as error code 0), on 2026-07-28 it is the caller's (it propagates).
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, Union, cast

from pydantic import BaseModel, ValidationError

from minimcp import jsonrpc
from minimcp._version import __version__
from minimcp.client.bindings import BindingObserver, NotificationBinding
from minimcp.client.cancel import covered
from minimcp.client.claims import ClaimedShape, UnexpectedClaimedResult, index_claims
from minimcp.shared.inbound import encoded_header, header_parameters
from minimcp.client.era import LEGACY, MODERN, ClientEra, client_era
from minimcp.client.listen_route import ListenRoute
from minimcp.client.output_schema import output_validator
from minimcp.client.tasks import TaskHandle
from minimcp.client.transports import SessionExpired, Transport, timed_out
from minimcp.jsonrpc import MCPError, Message
from minimcp.shared import otel
from minimcp.shared.tasks import TASK_RESULT_TYPE, TASKS_EXTENSION, CreateTaskResult
from minimcp.types import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    LATEST_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    CallToolRequestParams,
    CallToolResult,
    PaginatedRequestParams,
    ClientCapabilities,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    DiscoverResult,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    ErrorData,
    FormElicitationCapability,
    GetPromptResult,
    Implementation,
    InitializeResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    PromptReference,
    ReadResourceResult,
    Result,
    RequestId,
    RequestParamsMeta,
    ResourceTemplateReference,
    RootsCapability,
    SamplingCapability,
    ServerNotification,
    Tool,
    ServerCapabilities,
    UrlElicitationCapability,
    dump,
    parse_elicit_params,
    parse_server_notification,
)

logger = logging.getLogger("minimcp.client")

ResultT = TypeVar("ResultT", bound=BaseModel)

#: What ``message_handler`` receives: a server notification, or an exception met while reading.
IncomingMessage: TypeAlias = Union[ServerNotification, Exception]


@dataclass(kw_only=True)
class ClientRequestContext:
    """Passed to every callback that answers a server question.

    ``request_id`` is the server's JSON-RPC id on a legacy connection and the ``inputRequests``
    key on 2026-07-28.
    """

    session: ClientSession
    request_id: RequestId
    meta: RequestParamsMeta | None = None


ElicitationFnT = Callable[
    [ClientRequestContext, "ElicitRequestFormParams | ElicitRequestURLParams"], "ElicitResult | ErrorData"
]
SamplingFnT = Callable[
    [ClientRequestContext, CreateMessageRequestParams], "CreateMessageResult | CreateMessageResultWithTools | ErrorData"
]
ListRootsFnT = Callable[[ClientRequestContext], "ListRootsResult | ErrorData"]
LoggingFnT = Callable[[LoggingMessageNotificationParams], None]
MessageHandlerFnT = Callable[[IncomingMessage], None]
ProgressFnT = Callable[[float, "float | None", "str | None"], None]

#: How many pages of ``tools/list`` a client reads looking for one tool's new definition.
MAX_LIST_PAGES = 100
_UNSUPPORTED = {
    "elicitation/create": "Elicitation not supported",
    "sampling/createMessage": "Sampling not supported",
    "roots/list": "List roots not supported",
}
# Constructed, not validated: validating would build ErrorData's validator at import.
_INVALID_RESULT = ErrorData.model_construct(code=INTERNAL_ERROR, message="Client callback returned an invalid result")


def _with_meta(params: dict[str, Any], meta: RequestParamsMeta | None) -> dict[str, Any]:
    """``params`` with the caller's ``_meta``, when there is one."""
    if meta:
        params["_meta"] = dict(meta)
    return params


def _mcp_name(request: BaseModel, method: str, params: Mapping[str, Any] | None) -> str | None:
    """The ``Mcp-Name`` a request model's ``name_param`` names in its wire ``params``; a
    ``ValueError`` when the params lack that string, as the official client fails loud."""
    key = getattr(type(request), "name_param", None)
    if key is None:
        return None
    name = (params or {}).get(key)
    if not isinstance(name, str):
        raise ValueError(f"{method} requires params[{key!r}] for Mcp-Name")
    return name


def _default_client_info() -> Implementation:
    return Implementation(name="minimcp", version=__version__)


class ClientSession:
    """Requests and their answers over one transport; safe to share between threads.

    Usually reached as ``client.session``; use it directly to drive multi-round requests by hand
    (``allow_input_required=True``) or to keep the ``discover_result`` for a later pinned client.
    """

    def __init__(
        self,
        read_stream: Transport,
        write_stream: Transport | None = None,
        read_timeout_seconds: float | None = None,
        sampling_callback: SamplingFnT | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        list_roots_callback: ListRootsFnT | None = None,
        logging_callback: LoggingFnT | None = None,
        message_handler: MessageHandlerFnT | None = None,
        client_info: Implementation | None = None,
        *,
        log_level: LoggingLevel | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        result_claims: Mapping[str, Sequence[ClaimedShape]] | None = None,
        notification_bindings: Sequence[NotificationBinding[Any]] | None = None,
    ) -> None:
        """``ClientSession(read, write)`` as the official SDK spells it, from ``with stdio_client(...)
        as (read, write)``; both ends are one transport here, so ``ClientSession(transport)`` is the
        same thing."""
        if write_stream is not None and write_stream is not read_stream:
            raise TypeError(
                "ClientSession(read, write) takes the two ends one transport yielded "
                "(`with stdio_client(params) as (read, write):`), or a single transport"
            )
        self.transport = read_stream
        self.read_timeout_seconds = read_timeout_seconds
        self._sampling_callback = sampling_callback
        self._sampling_capabilities = sampling_capabilities
        self._elicitation_callback = elicitation_callback
        self._list_roots_callback = list_roots_callback
        self._logging_callback = logging_callback
        self._message_handler = message_handler
        self.client_info = client_info or _default_client_info()
        #: The extensions declared beside tasks' (identifier -> settings); ``Client(extensions=...)`` fills it.
        self.extensions = dict(extensions or {})
        #: Identifier -> the result claims of that extension, read-only after construction.
        self._result_claims = index_claims(result_claims, self.extensions)
        #: Vendor notification method -> the observer running its binding's handler.
        self._observers: dict[str, BindingObserver] = {}
        for binding in notification_bindings or ():
            if binding.method in self._observers:
                raise ValueError(f"duplicate notification binding for method {binding.method!r}")
            self._observers[binding.method] = BindingObserver(binding)
        self.log_level = log_level
        self.protocol_version: str | None = None
        self.initialize_result: InitializeResult | None = None
        self.discover_result: DiscoverResult | None = None
        # next() on itertools.count is atomic under the GIL: ids stay unique across threads.
        self._ids = itertools.count(1)
        # Guards _progress (token -> callback), _tools (name -> last listed definition plus its
        # x-mcp-header map) and _listens (open subscriptions/listen id -> its route); all are
        # written by callers and read by reader threads.
        self._lock = threading.Lock()
        self._progress: dict[RequestId, ProgressFnT] = {}
        self._tools: dict[str, tuple[Tool, dict[str, str]]] = {}
        self._listens: dict[RequestId, ListenRoute] = {}

    # --- what we declare -----------------------------------------------------------------

    @property
    def capabilities(self) -> ClientCapabilities:
        """Registering is declaring: each callback given adds its capability, nothing else does."""
        return ClientCapabilities(
            elicitation=ElicitationCapability(form=FormElicitationCapability(), url=UrlElicitationCapability())
            if self._elicitation_callback is not None
            else None,
            sampling=(self._sampling_capabilities or SamplingCapability()) if self._sampling_callback is not None else None,
            roots=RootsCapability(list_changed=True) if self._list_roots_callback is not None else None,
            # call_tool awaits a task, so any client takes one
            extensions={TASKS_EXTENSION: {}, **self._declared_extensions()},
        )

    def _declared_extensions(self) -> dict[str, dict[str, Any]]:
        """An extension that claims result shapes is declared only where one of its claims is
        active, so a server never sends this connection a shape it would refuse."""
        version = self.protocol_version
        return {identifier: settings for identifier, settings in self.extensions.items()
                if identifier not in self._result_claims
                or any(claim.active_at(version) for claim in self._result_claims[identifier])}

    def active_claim(self, result_type: Any) -> ClaimedShape | None:
        """The claim that owns ``result_type`` on this connection (none on a legacy one)."""
        version = self.protocol_version
        for claims in self._result_claims.values():
            for claim in claims:
                if claim.result_type == result_type and claim.active_at(version):
                    return claim
        return None

    @property
    def era(self) -> ClientEra:
        """The rules of the negotiated era (``minimcp.client.era``)."""
        return client_era(self.protocol_version)

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        known = self.initialize_result or self.discover_result
        return known.capabilities if known is not None else None

    @property
    def server_info(self) -> Implementation | None:
        if self.initialize_result is not None:
            return self.initialize_result.server_info
        if self.discover_result is None:
            return None
        raw = (self.discover_result.meta or {}).get(META_SERVER_INFO) or (self.discover_result.model_extra or {}).get(
            "serverInfo"
        )
        try:
            return Implementation.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    @property
    def instructions(self) -> str | None:
        known = self.initialize_result or self.discover_result
        return known.instructions if known is not None else None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.transport.connect(self._on_message)

    def close(self) -> None:
        with self._lock:
            routes, self._listens = list(self._listens.values()), {}
        for route in routes:  # their iterations end with SubscriptionLost, not a wait for frames that never come
            route.settle("lost", jsonrpc.connection_closed())
        for observer in self._observers.values():
            observer.close()
        self.transport.close()

    def __enter__(self) -> ClientSession:
        """Connect; the handshake is still yours to make (``session.initialize()``), as officially."""
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def initialize(self) -> InitializeResult:
        """The legacy handshake: ``initialize``, ``notifications/initialized``, standalone stream."""
        self.protocol_version = None
        raw = self._exchange(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": dump(self.capabilities),
                "clientInfo": dump(self.client_info),
            },
        )
        result = InitializeResult.model_validate(raw)
        self.adopt(result)
        self.send_notification("notifications/initialized")
        self.transport.listen(headers=self._headers(None, None))
        return result

    def discover(self) -> DiscoverResult:
        """Probe with ``server/discover`` and settle on the newest modern version both sides speak.

        Raises ``MCPError`` for any error answer and ``ValidationError`` for a result that is not a
        ``DiscoverResult`` (several legacy servers answer unknown methods with ``{}``); the era is
        left as it was either way (unset, before a handshake) so that the caller can fall back to
        the handshake. A ``-32022`` naming a modern version we speak earns one more probe at it.
        """
        try:
            raw = self.send_discover(LATEST_PROTOCOL_VERSION)
        except MCPError as refused:
            supported = refused.data.get("supported") if isinstance(refused.data, dict) else None
            version = MODERN.common(supported) if refused.code == UNSUPPORTED_PROTOCOL_VERSION else None
            if version is None:
                raise
            raw = self.send_discover(version)
        result = DiscoverResult.model_validate(raw)
        self.adopt(result)
        return result

    def send_discover(self, version: str) -> dict[str, Any]:
        """One ``server/discover`` stamped at ``version``, and its raw result: the probe ``discover()``
        sends, with nothing adopted (``adopt()`` does that) and no retry."""
        return self._exchange("server/discover", {}, version=version)

    def adopt(self, result: InitializeResult | DiscoverResult) -> None:
        """Speak as ``result`` says, with no traffic: an ``initialize`` answer's version, or the
        newest modern version a ``server/discover`` answer shares with this client (``MCPError``
        when it shares none). The other kind of result is forgotten."""
        if isinstance(result, DiscoverResult):
            self.protocol_version = MODERN.settle(result.supported_versions)
            self.discover_result, self.initialize_result = result, None
        else:
            self.protocol_version = LEGACY.settle(result.protocol_version)
            self.initialize_result, self.discover_result = result, None

    def use_version(self, version: str, prior_discover: DiscoverResult | None = None) -> None:
        """Speak ``version`` from the first request on, with no traffic to find out; without a
        ``prior_discover`` the server's capabilities are taken to be empty, as officially."""
        self.protocol_version = version
        self.discover_result = prior_discover or DiscoverResult(supported_versions=[version],
                                                                capabilities=ServerCapabilities())

    # --- one exchange ----------------------------------------------------------------------

    def _headers(self, method: str | None, params: Mapping[str, Any] | None,
                 version: str | None = None, name: str | None = None) -> dict[str, str]:
        """HTTP request headers at ``version`` (by default the negotiated one; other transports
        ignore them); ``method`` is ``None`` for what is not a request (the standalone GET, our
        answers to the server). ``name`` is a custom request's ``Mcp-Name`` (``Request.name_param``),
        sent in either era, as officially; a core method's own target wins."""
        version = version or self.protocol_version
        headers: dict[str, str] = {}
        if version is not None:
            headers["MCP-Protocol-Version"] = version
            if method is not None:
                headers.update(client_era(version).request_headers(self, method, params))
        if name is not None:
            headers.setdefault("Mcp-Name", encoded_header(name) or "")
        return headers

    def header_parameters(self, tool_name: Any) -> dict[str, str]:
        """Which arguments of ``tool_name`` travel as ``Mcp-Param-*`` headers, as its last listing
        said (``{}`` for a tool never listed): the headers a 2026-07-28 ``tools/call`` carries."""
        with self._lock:
            known = self._tools.get(tool_name)
        return known[1] if known else {}

    def _exchange(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        progress_callback: ProgressFnT | None = None,
        version: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its ``result`` dict; a JSON-RPC error raises ``MCPError``.

        On 2026-07-28 a ``-32022`` naming a version we speak earns exactly one retry with it, and a
        ``-32020`` on ``tools/call`` one retry after listing the tools again, when the listing changed
        which arguments travel as ``Mcp-Param-*`` headers (the tool was redefined since we last
        listed, or never listed). ``version`` stamps this request at a version of its own (a
        probe), leaving the negotiated one, which other threads' requests read, untouched, and
        earns no retry.
        """
        retried: set[int] = set()
        restarted = False
        while True:
            request_id = next(self._ids)
            era = self.era if version is None else client_era(version)
            stamped = era.stamp(self, params, version)
            if progress_callback is not None:
                stamped = {**stamped, "_meta": {**(stamped.get("_meta") or {}), "progressToken": request_id}}
                with self._lock:
                    self._progress[request_id] = progress_callback
            try:
                with otel.sending(method, stamped, request_id) as outgoing, \
                        covered(functools.partial(self._stop, request_id)):
                    answer = self.transport.request(
                        jsonrpc.request(request_id, method, outgoing.params),
                        headers=self._headers(method, stamped, version, name),
                        timeout=timeout if timeout is not None else self.read_timeout_seconds,
                    )
                    outgoing.answered(answer)
            except SessionExpired as lost:
                if not lost.restartable or not era.session_expired(self, restarted):
                    raise
                restarted = True
                continue
            except MCPError as failed:
                if failed.code == REQUEST_TIMEOUT:  # the transport gave up on it, closing it where it can
                    self._cancel(request_id, closed=getattr(self.transport, "closes_abandoned", False))
                raise
            finally:
                if progress_callback is not None:
                    with self._lock:
                        self._progress.pop(request_id, None)
            error = answer.get("error")
            if error is None:
                result = answer.get("result")
                return result if isinstance(result, dict) else {}
            failure = jsonrpc.failure_of(answer)
            if version is None and era.retry(self, failure, method, params, retried):
                continue
            raise failure

    def relearn_headers(self, tool_name: Any) -> bool:
        """List the tools again; whether ``tool_name``'s ``Mcp-Param-*`` headers changed (a ``-32020``
        on its call earns a retry only then: the tool was redefined since we last listed, or never
        listed). A listing that fails counts as no change."""
        with self._lock:
            before = self._tools.get(tool_name)
        cursor: str | None = None
        try:
            for _ in range(MAX_LIST_PAGES):
                page = self.list_tools(cursor=cursor)
                cursor = page.next_cursor
                if cursor is None or any(tool.name == tool_name for tool in page.tools):
                    break
        except MCPError:
            return False
        with self._lock:
            after = self._tools.get(tool_name)
        return after is not None and (before is None or before[1] != after[1])

    def _cancel(self, request_id: int, reason: str = "timed out", *, closed: bool) -> None:
        """Tell the server to stop a request we gave up on; best effort, the wait already failed.
        ``closed``: its own exchange was closed, which in 2026-07-28 is the cancellation itself
        (over HTTP the server treats the hang-up so, and takes no notifications); in legacy a
        disconnect is no cancellation, so ``notifications/cancelled`` goes all the same."""
        if closed and self.era.cancels_by_closing:
            return
        try:
            self.send_notification("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except MCPError:
            logger.debug("could not send notifications/cancelled for request %s", request_id)

    def _stop(self, request_id: int) -> None:
        """A ``CancelScope`` covering the request was cancelled: stop waiting, ending its exchange
        where the transport can, and tell the server as the era says."""
        self._cancel(request_id, "cancelled", closed=self.transport.abandon(request_id))

    def send_request(
        self,
        request: str | BaseModel,
        params: dict[str, Any] | type[ResultT] | None = None,
        result_type: type[ResultT] | float | None = None,
        *,
        timeout: float | None = None,
        request_read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> ResultT:
        """Any request, its result validated as ``result_type``.

        Two spellings: ``send_request("tools/list", {...}, ListToolsResult)``, or the official
        ``send_request(types.ListToolsRequest(...), ListToolsResult, request_read_timeout_seconds)``
        with a request model, whose second argument may also come as ``result_type=``.
        """
        model: Any
        name: str | None = None
        if isinstance(request, BaseModel):
            wire = dump(request)
            method, body = wire["method"], wire.get("params")
            name = _mcp_name(request, method, body)
            # The official order is (request, result_type, request_read_timeout_seconds).
            model, positional_timeout = (result_type, None) if params is None else (params, result_type)
            if positional_timeout is not None:
                if isinstance(positional_timeout, bool) or not isinstance(positional_timeout, (int, float)):
                    raise TypeError("send_request(request_model, ResultType, request_read_timeout_seconds): "
                                    f"the third argument is a timeout in seconds, not {positional_timeout!r}")
                if request_read_timeout_seconds is None:
                    request_read_timeout_seconds = positional_timeout
        else:
            method, body, model = request, params, result_type
        if not isinstance(model, type) or not isinstance(body, (dict, type(None))):
            raise TypeError("send_request takes (method, params, result_type) or (request_model, result_type)")
        if timeout is None:
            timeout = request_read_timeout_seconds
        raw = self._exchange(method, body or {}, timeout=timeout, progress_callback=progress_callback, name=name)
        return cast("type[ResultT]", model).model_validate(raw)

    def send_notification(self, notification: str | BaseModel, params: dict[str, Any] | None = None) -> None:
        """A notification by method name and params, or as the official notification model."""
        if isinstance(notification, BaseModel):
            wire = dump(notification)
            method, params = wire["method"], wire.get("params")
        else:
            method = notification
        self.transport.send(jsonrpc.notification(method, params), headers=self._headers(method, params))

    # --- requests --------------------------------------------------------------------------

    @staticmethod
    def _paged(
        cursor: str | None, meta: RequestParamsMeta | None, given: PaginatedRequestParams | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = dump(given) if given is not None else {}
        if cursor is not None:
            params["cursor"] = cursor
        return _with_meta(params, meta)

    @staticmethod
    def _round(
        params: dict[str, Any], input_responses: Mapping[str, Any] | None, request_state: str | None,
        meta: RequestParamsMeta | None,
    ) -> dict[str, Any]:
        if input_responses is not None:
            params["inputResponses"] = {
                key: dump(value) if isinstance(value, BaseModel) else value for key, value in input_responses.items()
            }
        if request_state is not None:
            params["requestState"] = request_state
        return _with_meta(params, meta)

    @staticmethod
    def _terminal(raw: dict[str, Any], model: type[ResultT], method: str, allow_input_required: bool) -> ResultT | InputRequiredResult:
        result_type = raw.get("resultType")
        if result_type == "input_required":
            result = InputRequiredResult.model_validate(raw)
            if not allow_input_required:
                raise RuntimeError(
                    "Server returned InputRequiredResult; pass allow_input_required=True to receive it and retry "
                    f"{method}(..., input_responses=..., request_state=result.request_state)."
                )
            return result
        if result_type not in (None, "complete"):
            raise MCPError(INTERNAL_ERROR, f"Server returned a result of unknown resultType {result_type!r}")
        return model.model_validate(raw)

    def list_tools(
        self,
        *,
        cursor: str | None = None,
        meta: RequestParamsMeta | None = None,
        params: PaginatedRequestParams | None = None,
    ) -> ListToolsResult:
        """List tools, dropping (with a warning) any whose ``x-mcp-header`` annotations are invalid:
        a client must never call those."""
        return self.absorb_tool_listing(
            self.send_request("tools/list", self._paged(cursor, meta, params), ListToolsResult))

    def absorb_tool_listing(self, result: ListToolsResult) -> ListToolsResult:
        """Learn each listed tool's definition and ``Mcp-Param-*`` headers (for later calls), and
        drop the tools a client must not call; a listing served from a cache goes through here too."""
        kept = []
        for tool in result.tools:
            try:
                headers = header_parameters(tool.input_schema)
            except ValueError as invalid:
                logger.warning("Ignoring tool %r: invalid x-mcp-header annotation: %s", tool.name, invalid)
                continue
            kept.append(tool)
            with self._lock:
                self._tools[tool.name] = (tool, headers)
        result.tools = kept
        return result

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: RequestParamsMeta | None = None,
        allow_input_required: bool = False,
        allow_task: bool = False,
        allow_claimed: bool = False,
        validate_output: bool = True,
    ) -> CallToolResult | InputRequiredResult | CreateTaskResult | Result:
        """Call a tool. A server may answer with a task (the tasks extension): ``allow_task=True``
        returns its ``CreateTaskResult``; otherwise the task is awaited here and its result returned.

        On 2026-07-28 an answer whose ``resultType`` a claim of this session owns is validated as
        the claim's model and returned with ``allow_claimed=True``; otherwise it raises
        ``UnexpectedClaimedResult`` carrying it (``Client.call_tool`` resolves it instead).

        ``validate_output=False`` skips checking structured content against the tool's output
        schema: for a caller that only hands the result on (a proxy), whose own client checks it."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            if not isinstance(arguments, dict):  # a mapping becomes a dict; anything else is refused
                # before sending, with the official SDK's ValidationError
                arguments = CallToolRequestParams.model_validate(params | {"arguments": arguments}).arguments
            params["arguments"] = arguments
        raw = self._exchange(
            "tools/call",
            self._round(params, input_responses, request_state, meta),
            timeout=read_timeout_seconds,
            progress_callback=progress_callback,
        )
        result: CallToolResult | InputRequiredResult
        result_type = raw.get("resultType")
        claim = self.active_claim(result_type)
        if claim is not None:
            claimed = claim.model.model_validate(raw)
            if not allow_claimed:
                raise UnexpectedClaimedResult(claimed)
            return claimed
        if result_type == TASK_RESULT_TYPE:
            created = CreateTaskResult.model_validate(raw)
            if allow_task:
                return created
            result = self._await_task(created, read_timeout_seconds)
        elif result_type in (None, "complete", "input_required"):
            result = self._terminal(raw, CallToolResult, "call_tool", allow_input_required)
        else:
            result = self._unclaimed(raw)
        if isinstance(result, CallToolResult) and validate_output:
            self.validate_tool_result(name, result)
        return result

    @staticmethod
    def _unclaimed(raw: dict[str, Any]) -> CallToolResult:
        """A ``resultType`` that no active claim owns is read as the core shape, as the official
        client reads it: a ``CallToolResult`` keeping that ``resultType`` when the answer has the
        ``content`` the wire requires, the same ``ValidationError`` as there when it has not."""
        if "content" not in raw:
            raise ValidationError.from_exception_data(
                "CallToolResult", [{"type": "missing", "loc": ("content",), "input": raw}])
        return CallToolResult.model_validate(raw)

    def _await_task(self, created: CreateTaskResult, timeout: float | None) -> CallToolResult:
        """A task the server made of a plain ``call_tool``, awaited as that call's answer: bounded by
        the call's read timeout as any answer is, and cancelled when it runs out, as a timed-out
        request is (without a read timeout, by the task's TTL)."""
        handle = TaskHandle(self, created)
        try:
            return handle.result(timeout if timeout is not None else self.read_timeout_seconds)
        except TimeoutError:
            try:
                handle.cancel()
            except MCPError:
                logger.debug("could not cancel task %s after its call timed out", handle.task_id, exc_info=True)
            raise timed_out("tools/call") from None

    def validate_tool_result(self, name: str, result: CallToolResult) -> None:
        """A tool that declares an output schema must return structured content that fits it
        (``RuntimeError`` when not); an ``isError`` result is not checked."""
        if result.is_error:
            return
        with self._lock:
            known = self._tools.get(name)
        if known is None:
            try:
                self.list_tools()
            except MCPError:
                return
            with self._lock:
                known = self._tools.get(name)
        schema = known[0].output_schema if known else None
        if schema is None:
            return
        if result.structured_content is None:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        problem = output_validator(name, schema).problem(result.structured_content)
        if problem is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {problem}")

    def list_resources(
        self,
        *,
        cursor: str | None = None,
        meta: RequestParamsMeta | None = None,
        params: PaginatedRequestParams | None = None,
    ) -> ListResourcesResult:
        return self.send_request("resources/list", self._paged(cursor, meta, params), ListResourcesResult)

    def list_resource_templates(
        self,
        *,
        cursor: str | None = None,
        meta: RequestParamsMeta | None = None,
        params: PaginatedRequestParams | None = None,
    ) -> ListResourceTemplatesResult:
        return self.send_request("resources/templates/list", self._paged(cursor, meta, params), ListResourceTemplatesResult)

    def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: RequestParamsMeta | None = None,
        allow_input_required: bool = False,
    ) -> ReadResourceResult | InputRequiredResult:
        raw = self._exchange("resources/read", self._round({"uri": str(uri)}, input_responses, request_state, meta))
        return self._terminal(raw, ReadResourceResult, "read_resource", allow_input_required)

    def list_prompts(
        self,
        *,
        cursor: str | None = None,
        meta: RequestParamsMeta | None = None,
        params: PaginatedRequestParams | None = None,
    ) -> ListPromptsResult:
        return self.send_request("prompts/list", self._paged(cursor, meta, params), ListPromptsResult)

    def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: RequestParamsMeta | None = None,
        allow_input_required: bool = False,
    ) -> GetPromptResult | InputRequiredResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        raw = self._exchange("prompts/get", self._round(params, input_responses, request_state, meta))
        return self._terminal(raw, GetPromptResult, "get_prompt", allow_input_required)

    def complete(
        self,
        ref: PromptReference | ResourceTemplateReference | dict[str, Any],
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> CompleteResult:
        params: dict[str, Any] = {"ref": dump(ref) if isinstance(ref, BaseModel) else ref, "argument": argument}
        if context_arguments is not None:
            params["context"] = {"arguments": context_arguments}
        return self.send_request("completion/complete", params, CompleteResult)

    def send_ping(self, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.send_request("ping", _with_meta({}, meta), EmptyResult)

    def set_logging_level(self, level: LoggingLevel, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.send_request("logging/setLevel", _with_meta({"level": level}, meta), EmptyResult)

    def subscribe_resource(self, uri: str, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.send_request("resources/subscribe", _with_meta({"uri": str(uri)}, meta), EmptyResult)

    def unsubscribe_resource(self, uri: str, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.send_request("resources/unsubscribe", _with_meta({"uri": str(uri)}, meta), EmptyResult)

    def send_progress_notification(self, progress_token: str | int, progress: float, total: float | None = None,
                                   message: str | None = None, *, meta: RequestParamsMeta | None = None) -> None:
        """Progress on a request the server sent, for the server's ``progressToken`` (a legacy
        server's question; from 2026-07-28 on, progress flows from server to client only)."""
        params = {"progressToken": progress_token, "progress": progress, "total": total, "message": message}
        self.send_notification("notifications/progress",
                               _with_meta({k: v for k, v in params.items() if v is not None}, meta))

    def send_roots_list_changed(self) -> None:
        self.send_notification("notifications/roots/list_changed")

    # --- answering the server ----------------------------------------------------------------

    def fulfil_input_requests(self, result: InputRequiredResult) -> dict[str, dict[str, Any]]:
        """Answer every ``inputRequests`` entry, in the server's order, on this thread.

        A callback's ``ErrorData`` (or the refusal given when no callback is registered) raises
        ``MCPError``; a callback's exception propagates unchanged.
        """
        responses: dict[str, dict[str, Any]] = {}
        for key, request in (result.input_requests or {}).items():
            wire = dump(request)
            params = wire.get("params") or {}
            context = ClientRequestContext(session=self, request_id=key, meta=params.get("_meta"))
            outcome = self._answer(wire["method"], params, context)
            if isinstance(outcome, ErrorData):
                raise MCPError.from_error_data(outcome)
            responses[key] = outcome
        return responses

    def dispatch_input_request(self, ctx: ClientRequestContext, request: BaseModel) -> BaseModel | ErrorData:
        """One server question (``ElicitRequest``, ``CreateMessageRequest`` or ``ListRootsRequest``)
        through this client's callbacks, as the official session routes it: the callback's result,
        or the ``ErrorData`` it (or a missing callback) answered. Callback exceptions propagate."""
        wire = dump(request)
        return self._callback_answer(wire["method"], wire.get("params") or {}, ctx)

    def _answer(self, method: str, params: dict[str, Any], context: ClientRequestContext) -> dict[str, Any] | ErrorData:
        """The wire answer to one server question; callback exceptions propagate."""
        if method == "ping":
            return {}
        outcome = self._callback_answer(method, params, context)
        return outcome if isinstance(outcome, ErrorData) else dump(outcome)

    def _callback_answer(self, method: str, params: dict[str, Any], context: ClientRequestContext) -> BaseModel | ErrorData:
        if method not in _UNSUPPORTED:
            return ErrorData(code=METHOD_NOT_FOUND, message="Method not found")
        # One shape for the three questions: each callback takes the context and its parsed params.
        callback: Callable[..., object] | None
        args: tuple[BaseModel, ...]
        answer_types: tuple[type[BaseModel], ...]
        try:
            if method == "elicitation/create":
                callback, args, answer_types = self._elicitation_callback, (parse_elicit_params(params),), (ElicitResult,)
            elif method == "sampling/createMessage":
                callback, args = self._sampling_callback, (CreateMessageRequestParams.model_validate(params),)
                answer_types = (CreateMessageResult, CreateMessageResultWithTools)
            else:
                callback, args, answer_types = self._list_roots_callback, (), (ListRootsResult,)
        except ValidationError:
            return ErrorData(code=INVALID_PARAMS, message="Invalid request parameters")
        if callback is None:
            return ErrorData(code=INVALID_REQUEST, message=_UNSUPPORTED[method])
        outcome = callback(context, *args)
        if isinstance(outcome, ErrorData):
            return outcome
        if not isinstance(outcome, answer_types):
            return _INVALID_RESULT
        return outcome

    def _on_message(self, message: Message) -> None:
        """Every server message that is not the answer to one of our requests."""
        try:
            if "id" in message:
                self._answer_server_request(message)
            else:
                self._on_notification(message)
        except Exception as exc:  # a handler must not kill the thread that reads the connection
            logger.exception("Failed to handle a server message")
            self._deliver(exc)

    def _answer_server_request(self, message: Message) -> None:
        params = message.get("params") or {}
        context = ClientRequestContext(session=self, request_id=message["id"], meta=params.get("_meta"))
        try:
            outcome = self._answer(message["method"], params, context)
        except Exception as exc:  # the official wire behaviour: the server learns the text, code 0
            outcome = ErrorData(code=0, message=str(exc))
        if isinstance(outcome, ErrorData):
            reply = jsonrpc.error(message["id"], outcome.code, outcome.message, outcome.data)
        else:
            reply = jsonrpc.result(message["id"], outcome)
        self.transport.send(reply, headers=self._headers(None, None))

    def add_listen_route(self, request_id: RequestId, route: ListenRoute) -> None:
        """Hand the frames tagged with ``request_id`` (a ``subscriptions/listen``) to ``route``."""
        with self._lock:
            self._listens[request_id] = route

    def remove_listen_route(self, request_id: RequestId) -> None:
        with self._lock:
            self._listens.pop(request_id, None)

    def _to_listen(self, message: Message) -> bool:
        """Give a frame of an open listen stream to its route; ``True`` when the route consumed it
        (the acknowledgement), so it goes no further."""
        params = message.get("params")
        if not isinstance(params, dict):
            return False
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if not isinstance(subscription, (str, int)):
            return False
        with self._lock:
            route = self._listens.get(subscription)
        return route is not None and route.receive(message["method"], params)

    def _on_notification(self, message: Message) -> None:
        if self._to_listen(message):
            return
        if message.get("method") == "notifications/progress" and self.protocol_version is not None \
                and self.era.direct_progress(self):
            self._direct_progress(message.get("params"))
            return
        try:
            notification = parse_server_notification(message)
        except ValidationError as invalid:
            self._deliver(invalid)
            return
        if notification is None:  # not the protocol's: a binding of an extension may observe it
            observer = self._observers.get(message.get("method"))  # type: ignore[arg-type]
            if observer is None:
                logger.debug("Ignoring unknown notification %r", message.get("method"))
            else:
                observer.receive(message.get("params"))
            return
        if notification.method == "notifications/progress":
            params = notification.params
            with self._lock:
                callback = self._progress.get(params.progress_token)
            if callback is not None:
                callback(params.progress, params.total, params.message)
        elif notification.method == "notifications/message" and self._logging_callback is not None:
            self._logging_callback(notification.params)
        self._deliver(notification)

    def _direct_progress(self, params: Any) -> None:
        """Progress handed to its request's callback as sent, and to no one else."""
        if not isinstance(params, dict):
            return
        token = params.get("progressToken")
        if not isinstance(token, (str, int)):
            return
        with self._lock:
            callback = self._progress.get(token)
        if callback is not None:
            # as the server sent them (see era.direct_progress); an in-process server always sends progress
            callback(params.get("progress"), params.get("total"), params.get("message"))  # type: ignore[arg-type]

    def _deliver(self, item: IncomingMessage) -> None:
        if self._message_handler is not None:
            self._message_handler(item)


__all__ = [
    "ClientRequestContext",
    "ClientSession",
    "ElicitationFnT",
    "IncomingMessage",
    "ListRootsFnT",
    "LoggingFnT",
    "MessageHandlerFnT",
    "ProgressFnT",
    "SamplingFnT",
]
