"""One client for several servers: their tools, resources and prompts in one place.

``ClientSessionGroup`` is the official SDK's, synchronous: connect to each server (stdio, the
deprecated HTTP+SSE, Streamable HTTP), and call a tool by name without caring which server has
it. Two servers offering the same name is an error unless ``component_name_hook`` renames them
(``lambda name, info: f"{info.name}.{name}"``). Each server is a legacy session (``initialize``),
as in the official group.

    with ClientSessionGroup() as group:
        group.connect_to_server(StdioServerParameters(command="python", args=["weather.py"]))
        group.connect_to_server(StreamableHttpParameters(url="http://127.0.0.1:8000/mcp"))
        print(group.call_tool("forecast", {"city": "Oslo"}).content)

Threads: the group's tables are guarded by one lock, so threads may call tools through a group
while another connects or disconnects a server.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeAlias

from pydantic import BaseModel, Field

from minimcp.client.session import (
    ClientSession,
    ElicitationFnT,
    ListRootsFnT,
    LoggingFnT,
    MessageHandlerFnT,
    ProgressFnT,
    SamplingFnT,
)
from minimcp.client.stdio import StdioServerParameters, stdio_client
from minimcp.client.sse import sse_client
from minimcp.client.transports import DEFAULT_MAX_SSE_EVENT_SIZE, HttpTransport, Transport
from minimcp.jsonrpc import MCPError
from minimcp.types import INVALID_PARAMS, Implementation, Prompt, RequestParamsMeta, Resource, Tool

logger = logging.getLogger("minimcp.client")


class SseServerParameters(BaseModel):
    """A server on the deprecated HTTP+SSE transport."""

    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 5.0
    sse_read_timeout: float = 300.0


class StreamableHttpParameters(BaseModel):
    """A server on Streamable HTTP."""

    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 30.0
    sse_read_timeout: float = 300.0
    terminate_on_close: bool = True
    max_sse_event_size: int | None = Field(default=DEFAULT_MAX_SSE_EVENT_SIZE, gt=0)


ServerParameters: TypeAlias = StdioServerParameters | SseServerParameters | StreamableHttpParameters


@dataclass
class ClientSessionParameters:
    """What each session of the group is built with (its callbacks answer that server's questions)."""

    read_timeout_seconds: float | None = None
    sampling_callback: SamplingFnT | None = None
    elicitation_callback: ElicitationFnT | None = None
    list_roots_callback: ListRootsFnT | None = None
    logging_callback: LoggingFnT | None = None
    message_handler: MessageHandlerFnT | None = None
    client_info: Implementation | None = None


@dataclass
class _Components:
    """The group-level names one session contributed, so that disconnecting removes exactly those."""

    prompts: set[str]
    resources: set[str]
    tools: set[str]


ComponentNameHook: TypeAlias = Callable[[str, Implementation], str]


def _transport(server: ServerParameters) -> Transport:
    if isinstance(server, StdioServerParameters):
        return stdio_client(server)
    if isinstance(server, SseServerParameters):
        return sse_client(server.url, headers=server.headers, timeout=server.timeout,
                          sse_read_timeout=server.sse_read_timeout)
    headers = {str(name): str(value) for name, value in (server.headers or {}).items()}
    return HttpTransport(server.url, terminate_on_close=server.terminate_on_close,
                         max_sse_event_size=server.max_sse_event_size, headers=headers,
                         timeout=(server.timeout, server.sse_read_timeout))


class ClientSessionGroup:
    """Sessions to several servers, their tools, resources and prompts gathered by name."""

    def __init__(self, exit_stack: contextlib.ExitStack | None = None,
                 component_name_hook: ComponentNameHook | None = None) -> None:
        self._owns_exit_stack = exit_stack is None
        self._exit_stack = exit_stack or contextlib.ExitStack()
        self._component_name_hook = component_name_hook
        # Guards every table below: sessions may be connected, disconnected and used from any thread.
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._prompts: dict[str, Prompt] = {}
        self._sessions: dict[ClientSession, _Components] = {}
        self._tool_to_session: dict[str, ClientSession] = {}
        self._session_stacks: dict[ClientSession, contextlib.ExitStack] = {}

    def __enter__(self) -> ClientSessionGroup:
        if self._owns_exit_stack:
            self._exit_stack.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._owns_exit_stack:
            self._exit_stack.close()
        with self._lock:
            stacks, self._session_stacks = list(self._session_stacks.values()), {}
        for stack in stacks:
            stack.close()

    @property
    def sessions(self) -> list[ClientSession]:
        with self._lock:
            return list(self._sessions)

    @property
    def tools(self) -> dict[str, Tool]:
        with self._lock:
            return dict(self._tools)

    @property
    def resources(self) -> dict[str, Resource]:
        with self._lock:
            return dict(self._resources)

    @property
    def prompts(self) -> dict[str, Prompt]:
        with self._lock:
            return dict(self._prompts)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None,
                  progress_callback: ProgressFnT | None = None, *, input_responses: Mapping[str, Any] | None = None,
                  request_state: str | None = None, meta: RequestParamsMeta | None = None,
                  allow_input_required: bool = False) -> Any:
        """Call the tool the group knows as ``name`` on the server that has it."""
        with self._lock:
            session = self._tool_to_session.get(name)
            tool = self._tools.get(name)
        if session is None or tool is None:
            raise MCPError(INVALID_PARAMS, f"No server in this group has a tool named {name!r}")
        return session.call_tool(tool.name, arguments, read_timeout_seconds, progress_callback,
                                 input_responses=input_responses, request_state=request_state, meta=meta,
                                 allow_input_required=allow_input_required)

    def connect_to_server(self, server_params: ServerParameters,
                          session_params: ClientSessionParameters | None = None) -> ClientSession:
        """Start a session with one more server and gather what it offers."""
        server_info, session = self._establish_session(server_params, session_params or ClientSessionParameters())
        return self.connect_with_session(server_info, session)

    def connect_with_session(self, server_info: Implementation, session: ClientSession) -> ClientSession:
        """Gather what an already initialized ``session`` offers (the group does not close it)."""
        self._aggregate_components(server_info, session)
        return session

    def disconnect_from_server(self, session: ClientSession) -> None:
        with self._lock:
            components = self._sessions.pop(session, None)
            stack = self._session_stacks.pop(session, None)
            if components is None and stack is None:
                raise MCPError(INVALID_PARAMS, "Provided session is not managed or already disconnected.")
            if components is not None:
                for name in components.prompts:
                    self._prompts.pop(name, None)
                for name in components.resources:
                    self._resources.pop(name, None)
                for name in components.tools:
                    self._tools.pop(name, None)
                    self._tool_to_session.pop(name, None)
        if stack is not None:
            stack.close()

    def _establish_session(self, server_params: ServerParameters,
                           session_params: ClientSessionParameters) -> tuple[Implementation, ClientSession]:
        stack = contextlib.ExitStack()
        try:
            session = stack.enter_context(ClientSession(
                _transport(server_params),
                read_timeout_seconds=session_params.read_timeout_seconds,
                sampling_callback=session_params.sampling_callback,
                elicitation_callback=session_params.elicitation_callback,
                list_roots_callback=session_params.list_roots_callback,
                logging_callback=session_params.logging_callback,
                message_handler=session_params.message_handler,
                client_info=session_params.client_info,
            ))
            result = session.initialize()
        except BaseException:
            stack.close()
            raise
        with self._lock:
            self._session_stacks[session] = stack
        return result.server_info, session

    def _aggregate_components(self, server_info: Implementation, session: ClientSession) -> None:
        """List what ``session`` offers and add it under the group's names; a name another server
        already uses refuses the whole server, leaving the group as it was."""
        prompts = self._gather("prompts", lambda: session.list_prompts().prompts, server_info)
        resources = self._gather("resources", lambda: session.list_resources().resources, server_info)
        tools = self._gather("tools", lambda: session.list_tools().tools, server_info)
        with self._lock:
            for kind, found, known in (("prompts", prompts, self._prompts), ("resources", resources, self._resources),
                                       ("tools", tools, self._tools)):
                clash = found.keys() & known.keys()
                if clash:
                    raise MCPError(INVALID_PARAMS, f"{clash} already exist in group {kind}.")
            self._sessions[session] = _Components(set(prompts), set(resources), set(tools))
            self._prompts.update(prompts)
            self._resources.update(resources)
            self._tools.update(tools)
            self._tool_to_session.update(dict.fromkeys(tools, session))

    def _gather(self, kind: str, listing: Callable[[], list[Any]], server_info: Implementation) -> dict[str, Any]:
        try:
            return {self._component_name(item.name, server_info): item for item in listing()}
        except MCPError as err:
            logger.warning("Could not fetch %s: %s", kind, err)
            return {}

    def _component_name(self, name: str, server_info: Implementation) -> str:
        return self._component_name_hook(name, server_info) if self._component_name_hook else name


__all__ = ["ClientSessionGroup", "ClientSessionParameters", "ServerParameters", "SseServerParameters",
           "StreamableHttpParameters"]
