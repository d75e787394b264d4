"""The client side of the official MCP conformance harness, written against ``minimcp.Client`` only.

The harness starts a mock server per scenario and runs this program with the server's URL as the
last argument, the scenario in ``MCP_CONFORMANCE_SCENARIO``, the wire version in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and scenario data in ``MCP_CONFORMANCE_CONTEXT``::

    conformance client --command "python examples/conformance_client.py" --scenario tools_call

Each scenario is one function below; the checks live in the mock server, so a scenario passes
when this program makes the right requests and exits 0.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    HANDSHAKE_PROTOCOL_VERSIONS,
    ListRootsResult,
    Root,
    TextContent,
)

logger = logging.getLogger("conformance-client")


def accept_with_defaults(
    context: ClientRequestContext, params: ElicitRequestFormParams | ElicitRequestURLParams
) -> ElicitResult:
    """A user who accepts without touching a field: every default the form offers is submitted."""
    if isinstance(params, ElicitRequestURLParams):
        return ElicitResult(action="accept")
    properties = params.requested_schema.get("properties", {})
    content = {name: field["default"] for name, field in properties.items() if "default" in field}
    return ElicitResult(action="accept", content=content)


def fixed_sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="This is a test response"), model="conformance-model",
        stop_reason="endTurn",
    )


def one_root(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///workspace", name="Workspace")])


def list_only(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()


def tools_call(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()
    logger.info("%s", client.call_tool("add_numbers", {"a": 5, "b": 3}).content)


def call_each(*calls: tuple[str, dict[str, Any]]) -> Callable[[Client, dict[str, Any]], None]:
    """List tools, then make these calls in order."""

    def scenario(client: Client, ctx: dict[str, Any]) -> None:
        client.list_tools()
        for name, arguments in calls:
            logger.info("%s -> %s", name, client.call_tool(name, arguments).content)

    return scenario


def standard_headers(client: Client, ctx: dict[str, Any]) -> None:
    for tool in client.list_tools().tools:
        client.call_tool(tool.name, {})
    for resource in client.list_resources().resources:
        client.read_resource(resource.uri)
    for prompt in client.list_prompts().prompts:
        client.get_prompt(prompt.name, {})


def custom_headers(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()
    for call in ctx.get("toolCalls", []):
        client.call_tool(call["name"], call.get("arguments"))


def invalid_tool_headers(client: Client, ctx: dict[str, Any]) -> None:
    for tool in client.list_tools().tools:
        stub = {name: "us-east-1" for name in tool.input_schema.get("properties", {})}
        client.call_tool(tool.name, stub)


def schema_preservation(client: Client, ctx: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in client.list_tools().tools}
    schema = tools["json_schema_2020_12_tool"].input_schema
    client.call_tool("json_schema_echo", {"schema": schema})


SCENARIOS: dict[str, Callable[[Client, dict[str, Any]], None]] = {
    "initialize": list_only,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": call_each(("test_client_elicitation_defaults", {})),
    "sse-retry": call_each(("test_reconnection", {})),
    "request-metadata": call_each(),
    "sep-2322-client-request-state": call_each(
        ("test_mrtr_echo_state", {}), ("test_mrtr_unrelated", {}), ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ),
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_preservation,
}


def mode_for(version: str | None) -> str:
    """Legacy versions shake hands; a pinned 2026-07-28 sends no probe (several legacy mocks
    answer any unknown method with ``{}``, which must not be mistaken for a discover result)."""
    if version is None:
        return "auto"
    return "legacy" if version in HANDSHAKE_PROTOCOL_VERSIONS else version


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    url = sys.argv[-1]
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    run = SCENARIOS.get(scenario)
    if run is None:
        logger.error("No handler for scenario %r", scenario)
        return 1
    with Client(
        url,
        mode=mode_for(version),
        elicitation_callback=accept_with_defaults,
        sampling_callback=fixed_sample,
        list_roots_callback=one_root,
    ) as client:
        run(client, ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
