"""One upstream's tools, resources, templates and prompts, as the proxy offers them.

A :class:`Mirror` lists what its upstream offers when first asked, keeps the listing (one per
credential: a user whose credential is their own sees what the upstream lists for them) until the
upstream says that list changed (or ``LIST_TTL`` passes: a 2026-07-28 upstream tells only the
clients that listen), under the upstream's own names: a gateway of several mounts one proxy per
upstream, and ``MCPServer.mount``'s rule of names is the only one. A call is forwarded by name even
when it was never listed: the upstream says whether the tool exists, and a down upstream is named
as such.

A mirrored tool (:class:`MirroredTool`) publishes the upstream's definition as it is (its input
and output schemas, annotations, ``_meta``) and hands the arguments on unvalidated: the upstream
validates them, and its error reaches the client as itself.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel

from minimcp.jsonrpc import MCPError
from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.proxy.relay import forward
from minimcp.server.app.proxy.upstream import Reach, Upstream, UpstreamConnection
from minimcp.server.app.tools import Tool
from minimcp.server.core.rounds import InputRequired
from minimcp.shared.inbound import annotates_headers
from minimcp.shared.tasks import CreateTaskResult, declares_tasks
from minimcp.types import (
    META_CLIENT_CAPABILITIES,
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    InputRequiredResult,
    ReadResourceResult,
    dump,
)
from minimcp.types import Prompt as PromptDefinition
from minimcp.types import Resource as ResourceDefinition
from minimcp.types import ResourceTemplate as TemplateDefinition
from minimcp.types import Tool as ToolDefinition

logger = logging.getLogger("minimcp.server.proxy")

#: Seconds a listing of an upstream is served from memory at most.
LIST_TTL = 30.0
#: Pages of one upstream listing read at most.
MAX_PAGES = 100
#: Tools never listed but called (forwarded by name) whose mirrored tool is kept for the next call.
MAX_UNLISTED = 256
#: Listings kept at once (one per method and credential); the oldest is dropped beyond.
MAX_LISTINGS = 512

#: ``(arguments, ctx) -> result``: what a mirrored tool does with a call.
ToolCall = Callable[[dict[str, Any], "Context | None"], Any]


def _relay(arguments: dict[str, Any], ctx: Context) -> Any:
    """The signature every mirrored tool is read from (a Context, the arguments as one object)."""
    raise AssertionError("a mirrored tool invokes its own call")


class MirroredTool(Tool):
    """A tool whose schema and body are an upstream's (see the module docstring)."""

    _prototype: MirroredTool | None = None
    _prototype_lock = threading.Lock()
    _call: ToolCall
    _definition: ToolDefinition

    @classmethod
    def of(cls, definition: ToolDefinition, call: ToolCall) -> MirroredTool:
        """A mirrored tool publishing ``definition``; copied from one prototype, so that no
        arguments model is built per tool (a listing of hundreds mirrors each)."""
        with cls._prototype_lock:
            if cls._prototype is None:
                cls._prototype = cls(_relay, name="mirrored", structured_output=False)
            tool = copy.copy(cls._prototype)
        tool.name = definition.name
        tool.title = definition.title
        tool.description = definition.description or ""
        tool.annotations = definition.annotations
        tool.icons = definition.icons
        tool.meta = definition.meta
        tool.parameters = definition.input_schema
        tool.header_routed = annotates_headers(definition.input_schema)
        tool._definition = definition
        tool._call = call
        return tool

    def definition(self) -> ToolDefinition:
        return self._definition

    def prepare(self, arguments: dict[str, Any] | None, ctx: Context | None) -> dict[str, Any]:
        return {"arguments": dict(arguments or {})}

    def invoke(self, values: dict[str, Any], ctx: Context | None, wire: bool = False) -> Any:
        """The upstream's answer as it came: a result (an ``isError`` one too), a round for the
        client, or a task. ``MCPError`` (the upstream's own, or one naming it) fails the request."""
        try:
            return self._call(values["arguments"], ctx)
        except (MCPError, InputRequired):
            raise
        except Exception as exc:
            raise self._failure(exc) from exc


def _declares_tasks(ctx: Context) -> bool:
    rc = ctx.request_context
    return declares_tasks(rc.session.client_capabilities) or \
        declares_tasks((rc.meta or {}).get(META_CLIENT_CAPABILITIES) or {})


class Mirror:
    """What one upstream offers, under its own names."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        # _lock guards _listed ((method, reach) -> (when, items)), _tools (listed, by name) and _unlisted.
        self._lock = threading.Lock()
        self._listed: dict[tuple[str, Reach], tuple[float, list[Any]]] = {}
        self._tools: dict[str, MirroredTool] = {}
        self._unlisted: dict[str, MirroredTool] = {}
        #: ``ctx -> key``: whose credential a call travels with (``ProxyServer(credential_key=...)``).
        self.credential_key: Callable[[Context], Hashable] | None = None

    def _key(self, ctx: Context | None) -> Hashable:
        return self.credential_key(ctx) if ctx is not None and self.credential_key is not None else None

    # --- listings ------------------------------------------------------------------------------------
    def forget(self, method: str | None = None) -> None:
        """Drop a listing (all of them for ``None``): the upstream said it changed."""
        with self._lock:
            for listed in [listed for listed in self._listed if method is None or listed[0] == method]:
                del self._listed[listed]

    def _listing(self, method: str, page: Callable[[UpstreamConnection, str | None], Any],
                 items: Callable[[Any], list[Any]]) -> list[Any]:
        reach = self.upstream.reach()
        with self._lock:
            cached = self._listed.get((method, reach))
        if cached is not None and time.monotonic() - cached[0] < LIST_TTL:
            return cached[1]

        def read(connection: UpstreamConnection) -> list[Any]:
            found: list[Any] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                result = page(connection, cursor)
                found.extend(items(result))
                cursor = result.next_cursor
                if not cursor:
                    break
            return found

        listed = self.upstream.call(method, read, key=reach)
        with self._lock:
            self._listed.pop((method, reach), None)
            self._listed[(method, reach)] = (time.monotonic(), listed)
            while len(self._listed) > MAX_LISTINGS:
                del self._listed[next(iter(self._listed))]
        return listed

    def tools(self) -> list[ToolDefinition]:
        definitions: list[ToolDefinition] = self._listing(
            "tools/list", lambda c, cursor: c.client.session.list_tools(cursor=cursor), lambda page: page.tools)
        with self._lock:
            known = self._tools
            self._tools = {d.name: known[d.name] if d.name in known and known[d.name].definition() == d
                           else MirroredTool.of(d, self._tool_call(d.name)) for d in definitions}
        return definitions

    def tool(self, name: str) -> MirroredTool:
        """The mirrored tool ``name`` stands for, listed or not (the upstream says whether it exists)."""
        with self._lock:
            tool = self._tools.get(name) or self._unlisted.get(name)
            if tool is not None:
                return tool
        tool = MirroredTool.of(ToolDefinition(name=name, input_schema={"type": "object"}), self._tool_call(name))
        with self._lock:
            if len(self._unlisted) < MAX_UNLISTED:
                self._unlisted[name] = tool
        return tool

    def _tool_call(self, name: str) -> ToolCall:
        upstream = self.upstream

        def call(arguments: dict[str, Any], ctx: Context | None) -> Any:
            task = ctx is not None and _declares_tasks(ctx)

            def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
                return connection.client.session.call_tool(
                    name, arguments, None, progress, input_responses=responses, request_state=state,
                    allow_input_required=True, allow_task=task, validate_output=False)

            result = forward(upstream, "tools/call", ctx, leg, self._key(ctx))
            if isinstance(result, CreateTaskResult):
                return result.model_copy(update={"task_id": f"{upstream.name}/{result.task_id}"})
            if isinstance(result, (CallToolResult, InputRequiredResult)):
                return result
            raise ToolError(f"Upstream {upstream.name!r} answered tools/call with a {type(result).__name__}")

        return call

    def resources(self) -> list[ResourceDefinition]:
        return self._listing("resources/list", lambda c, cursor: c.client.session.list_resources(cursor=cursor),
                             lambda page: page.resources)

    def templates(self) -> list[TemplateDefinition]:
        return self._listing("resources/templates/list",
                             lambda c, cursor: c.client.session.list_resource_templates(cursor=cursor),
                             lambda page: page.resource_templates)

    def read(self, uri: str, ctx: Context | None) -> ReadResourceResult | InputRequiredResult:
        def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
            return connection.client.session.read_resource(uri, input_responses=responses, request_state=state,
                                                           allow_input_required=True)

        result: ReadResourceResult | InputRequiredResult = forward(self.upstream, "resources/read", ctx, leg,
                                                                       self._key(ctx))
        return result

    def prompts(self) -> list[PromptDefinition]:
        return self._listing("prompts/list", lambda c, cursor: c.client.session.list_prompts(cursor=cursor),
                             lambda page: page.prompts)

    def prompt(self, name: str, arguments: dict[str, str] | None,
               ctx: Context | None) -> GetPromptResult | InputRequiredResult:
        def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
            return connection.client.session.get_prompt(name, arguments, input_responses=responses,
                                                        request_state=state, allow_input_required=True)

        result: GetPromptResult | InputRequiredResult = forward(self.upstream, "prompts/get", ctx, leg,
                                                                   self._key(ctx))
        return result

    def complete(self, ref: Any, argument: Any, context: Any, ctx: Context | None) -> CompleteResult:
        """The upstream's completion of a prompt's or template's argument."""
        wire_ref = dump(ref) if isinstance(ref, BaseModel) else ref
        wire_argument = dump(argument) if isinstance(argument, BaseModel) else argument
        arguments = getattr(context, "arguments", None) if context is not None else None

        def leg(connection: UpstreamConnection, responses: Any, state: Any, progress: Any) -> Any:
            return connection.client.session.complete(wire_ref, wire_argument, arguments)

        result: CompleteResult = forward(self.upstream, "completion/complete", ctx, leg, self._key(ctx))
        return result
