"""The MCP methods as data: one row per method, read by every layer that treats methods differently.

This module owns what the protocol says about each method, as ``mcp.types.methods`` does
officially: its params and result models, the eras it exists in, and the facts the layers act on,
each a column. The dispatcher reads ``eras``, ``worker`` and ``stream``; the low-level ``Server``
the ``params`` a handler's arguments are validated against and the ``capability`` serving it
advertises; the request-state rounds ``asks`` and ``target``; the 2026-07-28 headers ``target``
(``Mcp-Name``); the caches ``cacheable`` (a result model with ``ttlMs``/``cacheScope``) and
``evicted_by``; the tasks extension ``extension`` (its methods are the rows naming it). A new method is a row here plus its handler.

It must not know how any of that is done: no era objects, sessions, transports, headers or
caches, only the names the layers look up. An era is named here (``"legacy"``, ``"modern"``) and
an era object answers ``exists_in`` through its ``legacy`` flag, so the table imports nothing but
the models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, TypeGuard

from pydantic import BaseModel

from minimcp.types import (
    CacheableResult,
    CallToolRequestParams,
    CallToolResult,
    CancelledNotificationParams,
    CompleteRequestParams,
    CompleteResult,
    DiscoverResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
    ProgressNotificationParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)

#: The extension identifier of the tasks extension (SEP-2663), as declared under ``capabilities.extensions``.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

EraName = Literal["legacy", "modern"]
BOTH: Final[frozenset[EraName]] = frozenset({"legacy", "modern"})
LEGACY_ONLY: Final[frozenset[EraName]] = frozenset({"legacy"})
MODERN_ONLY: Final[frozenset[EraName]] = frozenset({"modern"})


class _Era(Protocol):
    """What the table needs of an era object: its name here, which side of the 2026-07-28 line."""

    @property
    def table_key(self) -> EraName: ...


@dataclass(frozen=True)
class Method:
    """What the protocol says about one method (a request unless it sits in ``NOTIFICATIONS``)."""

    name: str
    #: The model a handler's params are validated against before it runs.
    params: type[BaseModel] = RequestParams
    #: The model of a complete answer (``None``: the tree reads none, as for the tasks extension's).
    result: type[BaseModel] | None = None
    eras: frozenset[EraName] = BOTH
    #: Runs user code that may block, so it goes to the pool; the others are answered inline.
    worker: bool = False
    #: Answers with a stream of notifications that stays open (no response until it ends).
    stream: bool = False
    #: May ask the client while it runs: a legacy server-to-client request, a 2026-07-28
    #: ``input_required`` round (its ``requestState`` is bound to the method and its target).
    asks: bool = False
    #: The params field naming what the request acts on: what ``Mcp-Name`` repeats, what a sealed
    #: ``requestState`` is bound to and what keys a cached result.
    target: str | None = None
    #: The ``ServerCapabilities`` member a server serving this method advertises.
    capability: str | None = None
    #: The extension the method belongs to (``None``: the protocol itself defines it): the tasks
    #: extension's methods are the rows naming it.
    extension: str | None = None
    #: The server notifications after which a cached result of this method is stale.
    evicted_by: tuple[str, ...] = ()

    def exists_in(self, era: _Era) -> bool:
        """Whether the protocol has this method in ``era`` (an era object)."""
        return era.table_key in self.eras

    @property
    def cacheable(self) -> bool:
        """Whether a 2026-07-28 result carries ``ttlMs``/``cacheScope``: its model says so."""
        return self.result is not None and issubclass(self.result, CacheableResult)

    @property
    def listing(self) -> bool:
        """Whether the result is a page of a listing, which may differ by who asks."""
        return self.result is not None and issubclass(self.result, PaginatedResult)


_TOOLS_CHANGED = "notifications/tools/list_changed"
_PROMPTS_CHANGED = "notifications/prompts/list_changed"
_RESOURCES_CHANGED = "notifications/resources/list_changed"
_RESOURCE_UPDATED = "notifications/resources/updated"

_M = Method
#: The requests a client sends and a server serves.
_REQUESTS: Final = (
    # name                        params                            result / eras / facts
    _M("initialize",               InitializeRequestParams,          InitializeResult, LEGACY_ONLY),
    _M("ping",                     RequestParams,                    EmptyResult, LEGACY_ONLY),
    _M("server/discover",          RequestParams,                    DiscoverResult, MODERN_ONLY),
    _M("tools/list",               PaginatedRequestParams,           ListToolsResult, capability="tools",
       evicted_by=(_TOOLS_CHANGED,)),
    _M("tools/call",               CallToolRequestParams,            CallToolResult, worker=True, asks=True,
       target="name"),
    _M("resources/list",           PaginatedRequestParams,           ListResourcesResult, capability="resources",
       evicted_by=(_RESOURCES_CHANGED,)),
    _M("resources/templates/list", PaginatedRequestParams,           ListResourceTemplatesResult,
       evicted_by=(_RESOURCES_CHANGED,)),
    _M("resources/read",           ReadResourceRequestParams,        ReadResourceResult, worker=True, asks=True,
       target="uri", evicted_by=(_RESOURCE_UPDATED,)),
    _M("resources/subscribe",      SubscribeRequestParams,           EmptyResult, LEGACY_ONLY),
    _M("resources/unsubscribe",    UnsubscribeRequestParams,         EmptyResult, LEGACY_ONLY),
    _M("prompts/list",             PaginatedRequestParams,           ListPromptsResult, capability="prompts",
       evicted_by=(_PROMPTS_CHANGED,)),
    _M("prompts/get",              GetPromptRequestParams,           GetPromptResult, worker=True, asks=True,
       target="name"),
    _M("completion/complete",      CompleteRequestParams,            CompleteResult, capability="completions"),
    _M("subscriptions/listen",     SubscriptionsListenRequestParams, SubscriptionsListenResult, MODERN_ONLY,
       stream=True),
    _M("logging/setLevel",         SetLevelRequestParams,            EmptyResult, LEGACY_ONLY, capability="logging"),
    # The tasks extension: answered from the task store, never on a worker.
    _M("tasks/get",                RequestParams,                    target="taskId", extension=TASKS_EXTENSION),
    _M("tasks/update",             RequestParams,                    target="taskId", extension=TASKS_EXTENSION),
    _M("tasks/cancel",             RequestParams,                    target="taskId", extension=TASKS_EXTENSION),
)

#: The notifications a client sends and a server may handle.
_NOTIFICATIONS: Final = (
    _M("notifications/initialized",        NotificationParams,          eras=LEGACY_ONLY),
    _M("notifications/cancelled",          CancelledNotificationParams),
    _M("notifications/progress",           ProgressNotificationParams,  eras=LEGACY_ONLY),
    _M("notifications/roots/list_changed", NotificationParams,          eras=LEGACY_ONLY),
)

#: Client-to-server requests by name.
METHODS: Final[Mapping[str, Method]] = MappingProxyType({row.name: row for row in _REQUESTS})
#: Client-to-server notifications by name.
NOTIFICATIONS: Final[Mapping[str, Method]] = MappingProxyType({row.name: row for row in _NOTIFICATIONS})

#: The request methods the protocol itself defines (an extension may not bind one).
SPEC_CLIENT_METHODS: Final[frozenset[str]] = frozenset(row.name for row in _REQUESTS if row.extension is None)
SPEC_CLIENT_NOTIFICATION_METHODS: Final[frozenset[str]] = frozenset(NOTIFICATIONS)

CacheableMethod = Literal[
    "prompts/list", "resources/list", "resources/read", "resources/templates/list", "server/discover", "tools/list",
]
"""The methods whose results carry ``ttlMs``/``cacheScope``, for type checkers; a test holds it
equal to ``CACHEABLE_METHODS``, which the rows decide."""
CACHEABLE_METHODS: Final[frozenset[str]] = frozenset(row.name for row in _REQUESTS if row.cacheable)

#: The methods whose result may be ``input_required`` (2026-07-28's way of asking the client).
INPUT_REQUIRED_METHODS: Final[frozenset[str]] = frozenset(row.name for row in _REQUESTS if row.asks)


def is_input_required(result: object) -> TypeGuard[InputRequiredResult | dict[str, Any]]:
    """Whether ``result`` is an ``input_required`` interim result, as a model or in wire form."""
    if isinstance(result, InputRequiredResult):
        return True
    return isinstance(result, Mapping) and result.get("resultType") == "input_required"


__all__ = [
    "BOTH",
    "CACHEABLE_METHODS",
    "INPUT_REQUIRED_METHODS",
    "LEGACY_ONLY",
    "METHODS",
    "MODERN_ONLY",
    "NOTIFICATIONS",
    "SPEC_CLIENT_METHODS",
    "SPEC_CLIENT_NOTIFICATION_METHODS",
    "TASKS_EXTENSION",
    "CacheableMethod",
    "EraName",
    "Method",
    "is_input_required",
]
