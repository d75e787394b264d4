"""Client: the one-liner over a configurable session over a pluggable transport.

``Client(target)`` picks the transport from what it is given, negotiates the protocol era when the
``with`` block is entered (``minimcp.client.era.negotiate``), and turns 2026-07-28 multi-round
requests back into one blocking call by answering each ``InputRequiredResult`` through the same
callbacks that answer a legacy server's questions.

    with Client("http://127.0.0.1:8000/mcp", elicitation_callback=ask) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from minimcp.client.era import check_mode, negotiate
from minimcp.client.extension import ClaimContext, ClientExtension, ResultClaim, fold_extensions
from minimcp.client.session import (
    ClientSession,
    ElicitationFnT,
    ListRootsFnT,
    LoggingFnT,
    IncomingMessage,
    MessageHandlerFnT,
    ProgressFnT,
    SamplingFnT,
)
from minimcp.client.stdio import StdioServerParameters, stdio_client
from minimcp.client.subscriptions import Subscription, listen
from minimcp.client.tasks import TaskHandle
from minimcp.client.caching import CacheConfig, CacheMode, ResponseCache
from minimcp.client.transports import InMemoryTransport, Transport
from minimcp.jsonrpc import MCPError
from minimcp.shared.tasks import CreateTaskResult, GetTaskResult, Task
from minimcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    CompleteResult,
    DiscoverResult,
    EmptyResult,
    GetPromptResult,
    Implementation,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingLevel,
    PromptReference,
    ReadResourceResult,
    Result,
    RequestParamsMeta,
    ResourceTemplateReference,
    SamplingCapability,
    ServerCapabilities,
)

if TYPE_CHECKING:
    import requests.auth

    from minimcp.client.transports.http import Cookies

T = TypeVar("T")
CachedT = TypeVar("CachedT", ListToolsResult, ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult)

#: Backoff for rounds that carry only ``requestState`` (the server is shedding load, not asking).
STATE_ONLY_FIRST_DELAY = 0.05
STATE_ONLY_MAX_DELAY = 0.25


class InputRequiredRoundsExceededError(RuntimeError):
    """The server kept answering ``input_required`` past ``Client(input_required_max_rounds=...)``."""


def _evicting(cache: ResponseCache, handler: MessageHandlerFnT | None) -> MessageHandlerFnT:
    """``handler`` behind the cache's eviction: a change notification first evicts what it makes
    stale, so a callback that lists again gets the new listing."""

    def evict_then_deliver(message: IncomingMessage) -> None:
        if not isinstance(message, Exception):
            cache.evict_for(message)
        if handler is not None:
            handler(message)

    return evict_then_deliver


class Client:
    """A connection to one MCP server; enter it with ``with`` to connect.

    A connected client may be shared by threads; each call blocks only its caller.
    """

    def __init__(
        self,
        server: Any,
        *,
        raise_exceptions: bool = False,
        read_timeout_seconds: float | None = None,
        sampling_callback: SamplingFnT | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        list_roots_callback: ListRootsFnT | None = None,
        logging_callback: LoggingFnT | None = None,
        log_level: LoggingLevel | None = None,
        message_handler: MessageHandlerFnT | None = None,
        client_info: Implementation | None = None,
        mode: str = "auto",
        prior_discover: DiscoverResult | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        input_required_max_rounds: int = 10,
        auth: requests.auth.AuthBase | None = None,
        extensions: Sequence[ClientExtension] | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: Cookies | None = None,
        cache: CacheConfig | None = CacheConfig(),
    ) -> None:
        check_mode(mode)
        folded = fold_extensions(extensions)
        for name, given in (("auth", auth), ("headers", headers), ("cookies", cookies)):
            if given is not None and not isinstance(server, str):
                raise TypeError(f"{name}= goes with HTTP requests, so it needs a URL; give it to your transport instead")
        self.server = server
        self.auth = auth
        self.headers = headers
        self.cookies = cookies
        self.raise_exceptions = raise_exceptions
        self.mode = mode
        self.prior_discover = prior_discover
        self.input_required_max_rounds = input_required_max_rounds
        self.cache = cache
        self._cache = None if cache is None else ResponseCache(
            cache, server, lambda: self._session.protocol_version if self._session is not None else None)
        if self._cache is not None:
            message_handler = _evicting(self._cache, message_handler)
        self._session_options: dict[str, Any] = dict(
            read_timeout_seconds=read_timeout_seconds,
            sampling_callback=sampling_callback,
            sampling_capabilities=sampling_capabilities,
            elicitation_callback=elicitation_callback,
            list_roots_callback=list_roots_callback,
            logging_callback=logging_callback,
            message_handler=message_handler,
            client_info=client_info,
            log_level=log_level,
            extensions=folded.declared,
            result_claims=folded.claims,
            notification_bindings=folded.bindings,
        )
        #: resultType -> the claim that owns it: the session parses a claimed shape, its claim resolves it here.
        self._claims: dict[str, ResultClaim[Any]] = {
            claim.result_type: claim for claims in folded.claims.values() for claim in claims}
        self._session: ClientSession | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def _transport(self) -> Transport:
        target = self.server
        if hasattr(target, "in_memory_endpoint"):
            return InMemoryTransport(target, raise_exceptions=self.raise_exceptions)
        if isinstance(target, str):
            from minimcp.client.transports.http import HttpTransport  # requests loads with the first HTTP client

            return HttpTransport(target, auth=self.auth, headers=self.headers, cookies=self.cookies)
        if isinstance(target, StdioServerParameters):
            return stdio_client(target, errlog=sys.stderr)
        return target

    def __enter__(self) -> Client:
        if self._session is not None:
            raise RuntimeError("Client is already entered; cannot reenter")
        session = ClientSession(self._transport(), **self._session_options)
        self._session = session
        try:
            session.start()
            negotiate(session, self.mode, self.prior_discover)
        except BaseException:
            self._session = None
            session.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    # --- state -----------------------------------------------------------------------------

    @property
    def session(self) -> ClientSession:
        if self._session is None:
            raise RuntimeError("Client must be used within a context manager")
        return self._session

    @property
    def protocol_version(self) -> str | None:
        return self.session.protocol_version

    @property
    def server_info(self) -> Implementation | None:
        return self.session.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        return self.session.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    # --- the input_required loop -----------------------------------------------------------

    def _until_complete(
        self,
        method: str,
        leg: Callable[[Mapping[str, Any] | None, str | None], T | InputRequiredResult],
        input_responses: Mapping[str, Any] | None,
        request_state: str | None,
    ) -> T:
        """Retry ``leg`` with the answers to each round until the result is terminal.

        Every retry is a new request (new id) with the same method, name and arguments; only
        ``request_state`` is carried from round to round, byte for byte.
        """
        session = self.session
        rounds = 0
        delay = STATE_ONLY_FIRST_DELAY
        while True:
            result = leg(input_responses, request_state)
            if not isinstance(result, InputRequiredResult):
                return result
            rounds += 1
            if rounds > self.input_required_max_rounds:
                raise InputRequiredRoundsExceededError(
                    f"Server returned InputRequiredResult for more than {self.input_required_max_rounds} rounds; "
                    "raise input_required_max_rounds on the Client, or use "
                    f"client.session.{method}(..., allow_input_required=True) to drive the loop manually."
                )
            if result.input_requests:
                input_responses = session.fulfil_input_requests(result)
                delay = STATE_ONLY_FIRST_DELAY
            else:
                input_responses = None
                time.sleep(delay)
                delay = min(delay * 2, STATE_ONLY_MAX_DELAY)
            request_state = result.request_state

    # --- methods ---------------------------------------------------------------------------

    def _cached(self, method: str, cursor: str | None, meta: RequestParamsMeta | None, cache_mode: CacheMode,
                send: Callable[[], CachedT], absorb: Callable[[CachedT], CachedT] | None = None) -> CachedT:
        """One of the listings through the response cache (see ``minimcp.client.caching``)."""
        cache = self._cache
        self.session  # a client outside its block raises, never serves what it cached
        if cache is None or cache_mode == "bypass":
            return send()
        if cursor is not None:  # continuation pages are not cached; an expired cursor means the listing changed
            try:
                return send()
            except MCPError as failure:
                if failure.code == INVALID_PARAMS:
                    cache.evict(method)
                raise
        if meta is not None and cache_mode == "use":
            cache_mode = "refresh"  # meta expects a request on the wire: fetch, and replace the entry
        if cache_mode == "use":
            hit = cache.read(method, "")
            if hit is not None:
                return hit if absorb is None else absorb(hit)
        generation = cache.capture(method, "")
        result = send()
        cache.write(method, "", result, generation, cache_mode)
        return result

    def list_tools(self, *, cursor: str | None = None, meta: RequestParamsMeta | None = None,
                   cache_mode: CacheMode = "use") -> ListToolsResult:
        return self._cached("tools/list", cursor, meta, cache_mode,
                            lambda: self.session.list_tools(cursor=cursor, meta=meta),
                            self.session.absorb_tool_listing)

    @overload
    def call_tool(self, name: str, arguments: dict[str, Any] | None = None,
                  read_timeout_seconds: float | None = None, progress_callback: ProgressFnT | None = None, *,
                  input_responses: Mapping[str, Any] | None = None, request_state: str | None = None,
                  meta: RequestParamsMeta | None = None, task: Literal[False] = False) -> CallToolResult: ...

    @overload
    def call_tool(self, name: str, arguments: dict[str, Any] | None = None,
                  read_timeout_seconds: float | None = None, progress_callback: ProgressFnT | None = None, *,
                  input_responses: Mapping[str, Any] | None = None, request_state: str | None = None,
                  meta: RequestParamsMeta | None = None, task: Literal[True]) -> TaskHandle: ...

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
        task: bool = False,
    ) -> CallToolResult | TaskHandle:
        """Call a tool and return its result; with ``task=True``, a ``TaskHandle`` to wait on later.

        A server may run any call as a task (the tasks extension). Without ``task=True`` such a
        call is awaited here, its questions answered through this client's callbacks.

        A result shape claimed by one of this client's ``extensions`` is finished by that claim's
        ``resolve`` on this thread, and its ``CallToolResult`` returned; what ``resolve`` raises
        propagates. ``client.session.call_tool(..., allow_claimed=True)`` returns the shape itself.
        """
        session = self.session
        result = self._until_complete(
            "call_tool",
            lambda responses, state: session.call_tool(
                name, arguments, read_timeout_seconds, progress_callback,
                input_responses=responses, request_state=state, meta=meta, allow_input_required=True, allow_task=task,
                allow_claimed=True,  # a claimed shape ends the rounds: it is resolved below
            ),
            input_responses,
            request_state,
        )
        if not isinstance(result, (CallToolResult, CreateTaskResult)):
            result = self._resolve_claimed(name, result, read_timeout_seconds)
        if not task:
            return result  # type: ignore[return-value]
        if isinstance(result, CreateTaskResult):
            return TaskHandle(session, result)
        return TaskHandle(session, immediate=result)

    def _resolve_claimed(self, name: str, claimed: Result, read_timeout_seconds: float | None) -> CallToolResult:
        """Hand a claimed shape to the claim that owns it (the session parses only the shapes of
        this client's active claims) and check its answer as a direct one is checked."""
        session = self.session
        claim = self._claims[getattr(claimed, "result_type")]  # a claim's model declares its resultType
        final = claim.resolve(claimed, ClaimContext(session=session, tool_name=name,
                                                    read_timeout_seconds=read_timeout_seconds))
        if not isinstance(final, CallToolResult):
            raise TypeError(f"the resolve of the claim on resultType {claim.result_type!r} returned "
                            f"{type(final).__name__}; it must return a CallToolResult")
        session.validate_tool_result(name, final)
        return final

    def task(self, task_id: str) -> TaskHandle:
        """A handle on a task created earlier, perhaps by another connection or before a restart.

        Raises the server's ``MCPError`` (-32602) when the task is unknown, expired or not the caller's.
        """
        state = self.session.send_request("tasks/get", {"taskId": task_id}, GetTaskResult)
        return TaskHandle(self.session, CreateTaskResult.model_validate(state.model_dump(include=set(Task.model_fields))))

    def list_resources(self, *, cursor: str | None = None, meta: RequestParamsMeta | None = None,
                       cache_mode: CacheMode = "use") -> ListResourcesResult:
        return self._cached("resources/list", cursor, meta, cache_mode,
                            lambda: self.session.list_resources(cursor=cursor, meta=meta))

    def list_resource_templates(
        self, *, cursor: str | None = None, meta: RequestParamsMeta | None = None, cache_mode: CacheMode = "use"
    ) -> ListResourceTemplatesResult:
        return self._cached("resources/templates/list", cursor, meta, cache_mode,
                            lambda: self.session.list_resource_templates(cursor=cursor, meta=meta))

    def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: RequestParamsMeta | None = None,
        cache_mode: CacheMode = "use",
    ) -> ReadResourceResult:
        """Read a resource; a fresh cached copy is served without a request. A call resuming rounds
        (``input_responses``/``request_state``) is never cached, nor is a result reached through
        ``input_required`` rounds."""
        session = self.session

        def leg(responses: Mapping[str, Any] | None, state: str | None) -> ReadResourceResult | InputRequiredResult:
            return session.read_resource(uri, input_responses=responses, request_state=state, meta=meta,
                                         allow_input_required=True)

        cache = self._cache
        if cache is None or cache_mode == "bypass" or input_responses is not None or request_state is not None:
            return self._until_complete("read_resource", leg, input_responses, request_state)
        if meta is not None and cache_mode == "use":
            cache_mode = "refresh"
        if cache_mode == "use":
            hit = cache.read("resources/read", uri)
            if hit is not None:
                return hit
        generation = cache.capture("resources/read", uri)
        first = leg(None, None)
        if not isinstance(first, InputRequiredResult):
            cache.write("resources/read", uri, first, generation, cache_mode)
            return first
        if cache_mode == "refresh":
            cache.evict("resources/read", uri)
        answered = [first]  # the first round is in hand: the loop starts from it, not a second request

        def resumed(responses: Mapping[str, Any] | None, state: str | None) -> ReadResourceResult | InputRequiredResult:
            return answered.pop() if answered else leg(responses, state)

        return self._until_complete("read_resource", resumed, None, None)

    def list_prompts(self, *, cursor: str | None = None, meta: RequestParamsMeta | None = None,
                     cache_mode: CacheMode = "use") -> ListPromptsResult:
        return self._cached("prompts/list", cursor, meta, cache_mode,
                            lambda: self.session.list_prompts(cursor=cursor, meta=meta))

    def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        meta: RequestParamsMeta | None = None,
    ) -> GetPromptResult:
        session = self.session
        return self._until_complete(
            "get_prompt",
            lambda responses, state: session.get_prompt(
                name, arguments, input_responses=responses, request_state=state, meta=meta, allow_input_required=True
            ),
            input_responses,
            request_state,
        )

    def complete(
        self,
        ref: PromptReference | ResourceTemplateReference | dict[str, Any],
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> CompleteResult:
        return self.session.complete(ref, argument, context_arguments)

    def send_ping(self, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        """Legacy only (``ping`` does not exist on 2026-07-28)."""
        return self.session.send_ping(meta=meta)

    ping = send_ping

    def set_logging_level(self, level: LoggingLevel, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        """Legacy only; on 2026-07-28 pass ``Client(log_level=...)``, which rides on every request."""
        return self.session.set_logging_level(level, meta=meta)

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
    ) -> AbstractContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream of typed change events (2026-07-28 only)::

            with client.listen(tools_list_changed=True) as sub:
                for event in sub:
                    tools = client.list_tools()  # read again on change

        The keywords are the wire ``SubscriptionFilter``; entering waits for the acknowledgement
        (``sub.honored``). A graceful close ends the loop, a dropped stream raises
        ``SubscriptionLost``. Legacy servers: ``subscribe_resource()`` and ``message_handler``.
        """
        # The cache hears a listen event twice, and needs both: the session queues the event for
        # the iterator first and passes it to the message handler (which evicts) after, so only
        # ``on_event``, run on the iterating thread, evicts before a loop body reads again.
        return listen(self.session, tools_list_changed=tools_list_changed, prompts_list_changed=prompts_list_changed,
                      resources_list_changed=resources_list_changed, resource_subscriptions=resource_subscriptions,
                      on_event=None if self._cache is None else self._cache.evict_for)

    def subscribe_resource(self, uri: str, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.session.subscribe_resource(uri, meta=meta)

    def unsubscribe_resource(self, uri: str, *, meta: RequestParamsMeta | None = None) -> EmptyResult:
        return self.session.unsubscribe_resource(uri, meta=meta)

    def send_progress_notification(self, progress_token: str | int, progress: float, total: float | None = None,
                                   message: str | None = None) -> None:
        """Progress on a request a legacy server sent (see ``ClientSession.send_progress_notification``)."""
        self.session.send_progress_notification(progress_token, progress, total, message)

    def send_roots_list_changed(self) -> None:
        self.session.send_roots_list_changed()


__all__ = ["Client", "InputRequiredRoundsExceededError"]
