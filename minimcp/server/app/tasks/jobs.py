"""What a task's body needs to run in another process (a task executor's worker), as JSON.

A body run on this process's own threads keeps the objects of the request that created it: the
tool, its validated values, the connection. A body handed to an executor (``TaskExecutor``) may run
in any process, long after the web process that created it has gone, so the task's record carries
the job as plain data instead:

- the tool's name, found again in the server the worker imported;
- the arguments as the client sent them, validated again where the body runs (the same model gives
  the same values, and nothing but JSON has to travel);
- the values the tool's resolvers settled on the ``tools/call`` rounds, dumped by their parameter's
  type and validated back by it;
- the protocol version and the client's capabilities, which a body's questions are gated on exactly
  as in the process that created the task, and the request's ``_meta``;
- who called (the transport's principal and kind).

Nothing else of the HTTP request travels: no headers, no access token (a secret has no place in a
shared store), no host user. A body that needs one of them takes what it needs as an argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from minimcp.jsonrpc import MCPError
from minimcp.server.core.sessions import Connection
from minimcp.shared.transport_context import TransportContext
from minimcp.types import INTERNAL_ERROR, ClientCapabilities, dump

if TYPE_CHECKING:
    from minimcp.server.app.tools import Tool


def job_of(tool: Tool, arguments: dict[str, Any] | None, values: dict[str, Any], connection: Connection,
           transport: TransportContext, meta: dict[str, Any] | None) -> dict[str, Any]:
    """The job of one task: ``values`` are what ``tool.prepare`` made of ``arguments``."""
    resolved: dict[str, Any] = {}
    for name, (annotation, _) in (tool.graph.params if tool.graph else {}).items():
        try:
            resolved[name] = TypeAdapter(annotation).dump_python(values[name], mode="json")
        except (PydanticSerializationError, ValueError, TypeError) as unfit:
            raise MCPError(INTERNAL_ERROR, f"Tool '{tool.name}' runs on a task executor, but the value of its "
                                           f"parameter '{name}' cannot travel there as JSON ({unfit}); make its "
                                           "resolver return JSON-able data") from None
    return {"tool": tool.name, "arguments": arguments or {}, "resolved": resolved,
            "protocolVersion": connection.protocol_version, "capabilities": dump(connection.client_capabilities),
            "meta": meta, "principal": transport.principal, "kind": transport.kind}


def values_of(tool: Tool, job: dict[str, Any]) -> dict[str, Any]:
    """The body's parameters again, where it runs. They were valid when the task was created, so a
    failure here means the tool changed meanwhile (a deploy): the task fails, to be started again."""
    params = tool.graph.params if tool.graph else {}
    try:
        validated = tool.arguments.model_validate(job["arguments"])
        values = {name: getattr(validated, field) for name, field in tool.argument_names}
        for name, (annotation, _) in params.items():
            values[name] = TypeAdapter(annotation).validate_python(job["resolved"][name])
    except (ValidationError, KeyError) as unfit:
        raise MCPError(INTERNAL_ERROR, f"Tool '{tool.name}' no longer takes what this task was created with "
                                       f"({unfit}); start the task again") from None
    return values


def connection_of(job: dict[str, Any]) -> Connection:
    """A connection standing for the creating request's: its version and the client's declarations."""
    return Connection(protocol_version=job["protocolVersion"],
                      client_capabilities=ClientCapabilities.model_validate(job["capabilities"]))


def transport_of(job: dict[str, Any]) -> TransportContext:
    """The creating request's transport as far as it travels: who called, and how (no way back to them)."""
    return TransportContext(kind=job["kind"], can_send_request=False, principal=job["principal"])
