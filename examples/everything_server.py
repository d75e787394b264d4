"""The conformance fixture server: every tool, resource, template and prompt the official MCP
conformance harness exercises, on one dual-era Streamable HTTP endpoint.

Run ``python examples/everything_server.py --port 3001`` and point the harness at
``http://localhost:3001/mcp`` (see ``.ci/conformance``). The names, their order and their
behaviour follow ``protocol.md`` §5.1; the harness checks them literally.

Tools that need something from the client (sampling, elicitation, roots) work on both eras
through one helper, ``_gather``: on a legacy (2025-11-25) connection it sends server-to-client
requests on the call's own SSE stream and blocks until they are answered; on a 2026-07-28 request
it returns a hand-built ``InputRequiredResult`` and reads the answers from the retry. Raw
``requestedSchema`` dicts are used where the harness checks a shape a pydantic model cannot
express exactly (SEP-1034 defaults, SEP-1330 enum variants). The requests themselves are dicts as
well, which ``InputRequiredResult`` validates into request models: mypy sees only the models'
type, hence the ``# type: ignore[arg-type]`` where they are handed over.

The tasks extension's scenarios (``tasks-*``, run without a version pin) call ``greet``,
``slow_compute``, ``failing_job``, ``protocol_error_job``, ``confirm_delete``, ``multi_input`` and
``test_tool_with_task``: ordinary ``def`` tools registered with ``task=True`` or ``task="required"``.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from minimcp import MCPError
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Audio, Context, Elicit, Image, Resolve, UserMessage
from minimcp.server.mcpserver.exceptions import ToolError
from minimcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    CallToolResult,
    ClientCapabilities,
    Completion,
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    ListRootsResult,
    PromptMessage,
    SamplingCapability,
    TextContent,
    TextResourceContents,
)

#: A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
#: A WAV header with no samples: the smallest valid audio/wav payload.
WAV = base64.b64decode("UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=")

#: The schema ``json-schema-2020-12`` expects back from ``tools/list`` byte for byte.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

mcp: MCPServer[Any] = MCPServer("minimcp-everything", version="0.1.0")


# --- helpers -----------------------------------------------------------------------------------
def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _is_modern(ctx: Context) -> bool:
    """Whether this request is 2026-07-28 (stateless: questions travel as ``input_required``)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _form(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An ``elicitation/create`` input request for a flat form."""
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}}}


def _sampling(prompt: str) -> dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100}}


ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}


def _gather(ctx: Context, requests: dict[str, dict[str, Any]], state: str | None = None) -> (
    dict[str, Any] | InputRequiredResult
):
    """The client's answers to ``requests``, keyed like them, on either era.

    Legacy: each request goes to the client on this call's stream, in order, and the worker waits.
    2026-07-28: the answers come from this round's ``inputResponses``; when one is missing (or the
    round does not carry ``state`` back) the caller gets the ``InputRequiredResult`` to return.
    An answer is the raw result on a legacy connection and a result model (``ctx.input_responses``)
    on a 2026-07-28 one; the callers' ``model_validate`` reads either.
    """
    if not _is_modern(ctx):
        related = ctx.request_context.request_id
        return {key: ctx.session.send_request(request["method"], request["params"], related_request_id=related)
                for key, request in requests.items()}
    responses = ctx.input_responses or {}
    if all(key in responses for key in requests) and ctx.request_state == state:
        return {key: responses[key] for key in requests}
    return InputRequiredResult(input_requests=requests, request_state=state)  # type: ignore[arg-type]


def _sampled_text(response: Any) -> str:
    content = CreateMessageResult.model_validate(response).content
    return content.text if isinstance(content, TextContent) else str(content)


# --- tools (listed in this order) ---------------------------------------------------------------
@mcp.tool()
def test_simple_text() -> CallToolResult:
    """Returns one text block."""
    return _text("This is a simple text response for testing.")


@mcp.tool()
def test_image_content() -> Image:
    """Returns one PNG image block."""
    return Image(data=PNG, format="png")


@mcp.tool()
def test_audio_content() -> Audio:
    """Returns one WAV audio block."""
    return Audio(data=WAV, format="wav")


@mcp.tool()
def test_embedded_resource() -> CallToolResult:
    """Returns one embedded text resource."""
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."))])


@mcp.tool()
def test_multiple_content_types() -> CallToolResult:
    """Returns text, an image and an embedded JSON resource in one result."""
    return CallToolResult(content=[
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}')),
    ])


@mcp.tool()
def test_tool_with_logging(ctx: Context) -> CallToolResult:
    """Sends three info log messages while it runs (as far as the client opted in)."""
    for index, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if index:
            time.sleep(0.05)
        ctx.info(text)
    return _text("Tool with logging executed successfully")


@mcp.tool()
def test_tool_with_progress(ctx: Context) -> CallToolResult:
    """Reports progress 0, 50, 100 of 100 against the caller's token and returns that token."""
    for index, progress in enumerate((0, 50, 100)):
        if index:
            time.sleep(0.05)
        ctx.report_progress(progress, 100)
    token = (ctx.request_context.meta or {}).get("progressToken")
    return _text(str(token))


@mcp.tool()
def test_error_handling() -> CallToolResult:
    """Fails as a tool (``isError``), not as a protocol error."""
    return CallToolResult(content=[TextContent(
        type="text", text="This tool intentionally returns an error for testing")], is_error=True)


@mcp.tool()
def test_sampling(prompt: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the client's model to answer ``prompt``."""
    answers = _gather(ctx, {"sampling": _sampling(prompt)})
    if isinstance(answers, InputRequiredResult):
        return answers
    return _text(f"LLM response: {_sampled_text(answers['sampling'])}")


@mcp.tool()
def test_elicitation(message: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the user for a username and an email address."""
    request = _form(message, {"username": {"type": "string"}, "email": {"type": "string"}}, ["username", "email"])
    answers = _gather(ctx, {"user_info": request})
    if isinstance(answers, InputRequiredResult):
        return answers
    result = ElicitResult.model_validate(answers["user_info"])
    return _text(f"User response: action={result.action}, content={json.dumps(result.content or {})}")


@mcp.tool()
def test_elicitation_sep1034_defaults(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks with a form whose every field carries a default (SEP-1034)."""
    request = _form("Please review and update the form fields with defaults", {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    }, [])
    answers = _gather(ctx, {"defaults": request})
    if isinstance(answers, InputRequiredResult):
        return answers
    result = ElicitResult.model_validate(answers["defaults"])
    return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")


@mcp.tool()
def test_elicitation_sep1330_enums(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks with one field of each enum variant (SEP-1330)."""
    options = ["option1", "option2", "option3"]
    titled = [{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
              {"const": "value3", "title": "Third Option"}]
    request = _form("Please select options from the enum fields", {
        "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
        "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": titled},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                          "items": {"type": "string", "enum": options}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1,
                        "maxItems": 3, "items": {"anyOf": titled}},
    }, [])
    answers = _gather(ctx, {"enums": request})
    if isinstance(answers, InputRequiredResult):
        return answers
    result = ElicitResult.model_validate(answers["enums"])
    return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")


@mcp.tool()
def test_reconnection(ctx: Context) -> CallToolResult:
    """Closes its SSE stream before answering, so the client must resume with ``Last-Event-ID``."""
    ctx.close_sse_stream()
    time.sleep(0.1)
    return _text("Reconnection test completed successfully")


def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None,
                             contactMethod: str | None = None, phone: str | None = None,  # noqa: N803
                             email: str | None = None) -> CallToolResult:
    """Advertises a JSON Schema 2020-12 input schema ($defs, $anchor, composition, conditionals)."""
    return _text(f"JSON Schema 2020-12 tool called for {name or 'anonymous'}")


mcp.add_tool(json_schema_2020_12_tool)
# The advertised schema is the fixture itself: 2020-12 keywords a signature cannot express.
mcp.get_tool("json_schema_2020_12_tool").parameters = JSON_SCHEMA_2020_12  # type: ignore[union-attr]


@mcp.tool()
def test_x_mcp_header(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})] = "") -> CallToolResult:
    """Echoes ``region``, which travels in the ``Mcp-Param-Region`` header too."""
    return _text(f"region={region}")


@mcp.tool()
def test_missing_capability(ctx: Context) -> CallToolResult:
    """Needs the sampling capability: fails with -32021 for a client that did not declare it."""
    if not ctx.session.check_client_capability(ClientCapabilities(sampling=SamplingCapability())):
        raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, "Client did not declare the sampling capability",
                       {"requiredCapabilities": {"sampling": {}}})
    return _text("Sampling capability present")


@mcp.tool()
def test_streaming_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks one form question; on 2026-07-28 through ``input_required``, never a request frame."""
    answers = _gather(ctx, {"confirmation": _form("Please confirm to continue", {"ok": {"type": "boolean"}}, ["ok"])})
    if isinstance(answers, InputRequiredResult):
        return answers
    result = ElicitResult.model_validate(answers["confirmation"])
    return _text(f"Elicitation completed: action={result.action}")


@mcp.tool()
def test_logging_tool(ctx: Context) -> CallToolResult:
    """Logs at info level; only a client that asked for logs receives them."""
    ctx.info("Logging tool executed")
    return _text("Logging tool completed")


@mcp.tool()
def test_trigger_tool_change(ctx: Context) -> CallToolResult:
    """Announces a tools list change (the list itself stays the same)."""
    ctx.notify_tools_changed()
    return _text("Tool list change notification sent")


@mcp.tool()
def test_trigger_prompt_change(ctx: Context) -> CallToolResult:
    """Announces a prompts list change (the list itself stays the same)."""
    ctx.notify_prompts_changed()
    return _text("Prompt list change notification sent")


class _Name(BaseModel):
    name: str


@mcp.tool()
def test_input_required_result_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks for the user's name under the key ``user_name``."""
    request = _form("What is your name?", {"name": {"type": "string"}}, ["name"])
    answers = _gather(ctx, {"user_name": request})
    if isinstance(answers, InputRequiredResult):
        return answers
    try:
        result = ElicitResult.model_validate(answers["user_name"])
        name = _Name.model_validate(result.content or {}).name
    except ValidationError:
        raise MCPError(-32602, "inputResponses['user_name'] is not an accepted elicitation with a name") from None
    return _text(f"Hello, {name}!")


@mcp.tool()
def test_input_required_result_sampling(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the client's model a question under the key ``capital_question``."""
    answers = _gather(ctx, {"capital_question": _sampling("What is the capital of France?")})
    if isinstance(answers, InputRequiredResult):
        return answers
    return _text(f"The model answered: {_sampled_text(answers['capital_question'])}")


@mcp.tool()
def test_input_required_result_list_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks for the client's roots under the key ``client_roots``."""
    answers = _gather(ctx, {"client_roots": ROOTS})
    if isinstance(answers, InputRequiredResult):
        return answers
    roots = ListRootsResult.model_validate(answers["client_roots"]).roots
    return _text(f"Found {len(roots)} root(s)")


@mcp.tool()
def test_input_required_result_request_state(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks for confirmation and carries a ``requestState`` the retry must echo."""
    answers = _gather(ctx, {"confirm": _form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])},
                      state="awaiting-confirmation")
    if isinstance(answers, InputRequiredResult):
        return answers
    return _text("Confirmed: state-ok")


@mcp.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks for an elicitation, a sampling and the roots in one round."""
    answers = _gather(ctx, {
        "user_name": _form("What is your name?", {"name": {"type": "string"}}, ["name"]),
        "greeting": _sampling("Write a one-line greeting."),
        "client_roots": ROOTS,
    }, state="multiple-inputs")
    if isinstance(answers, InputRequiredResult):
        return answers
    roots = ListRootsResult.model_validate(answers["client_roots"]).roots
    return _text(f"Received all inputs: greeting={_sampled_text(answers['greeting'])!r}, roots={len(roots)}")


@mcp.tool()
def test_input_required_result_multi_round(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Two rounds: a name, then a favourite colour; anything unexpected restarts at the name."""
    step1 = {"step1": _form("Step 1: what is your name?", {"name": {"type": "string"}}, ["name"])}
    step2 = {"step2": _form("Step 2: what is your favourite colour?", {"color": {"type": "string"}}, ["color"])}
    if not _is_modern(ctx):
        answers = _gather(ctx, {**step1, **step2})
        return _text(f"Completed both rounds: {json.dumps(answers)}")
    responses = ctx.input_responses or {}
    if ctx.request_state == "round-2" and "step2" in responses:
        return _text("Completed both rounds")
    if ctx.request_state == "round-1" and "step1" in responses:
        return InputRequiredResult(input_requests=step2, request_state="round-2")  # type: ignore[arg-type]
    return InputRequiredResult(input_requests=step1, request_state="round-1")  # type: ignore[arg-type]


@mcp.tool()
def test_input_required_result_tampered_state(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Carries an integrity-protected ``requestState``; a modified one is refused by the server."""
    answers = _gather(ctx, {"confirm": _form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])},
                      state="tamper-proof")
    if isinstance(answers, InputRequiredResult):
        return answers
    return _text("State verified")


@mcp.tool()
def test_input_required_result_capabilities(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks only for what the client declared (elicitation and/or sampling); completes without asking otherwise."""
    declared = ctx.client_capabilities
    requests: dict[str, dict[str, Any]] = {}
    if declared.elicitation is not None:
        requests["user_name"] = _form("What is your name?", {"name": {"type": "string"}}, ["name"])
    if declared.sampling is not None:
        requests["capital_question"] = _sampling("What is the capital of France?")
    if not requests:
        return _text("No input capability declared; completed without asking")
    answers = _gather(ctx, requests, state="capabilities")
    if isinstance(answers, InputRequiredResult):
        return answers
    return _text(f"Completed with {', '.join(sorted(answers))}")


# --- the tasks extension (io.modelcontextprotocol/tasks) -------------------------------------------
@mcp.tool()
def greet(name: str) -> str:
    """Greets by name; an ordinary call, never a task."""
    return f"Hello, {name}!"


@mcp.tool(task=True)
def slow_compute(seconds: float, ctx: Context, label: str = "") -> str:
    """Works for ``seconds`` seconds as a task, stopping early when the task is cancelled."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return f"Computed {label or 'result'} in {seconds:g}s"


@mcp.tool(task="required")
def failing_job() -> str:
    """Runs only as a task, and ends in a tool error after a second."""
    time.sleep(1.0)
    raise ToolError("The job failed: the input could not be processed")


@mcp.tool(task=True)
def protocol_error_job() -> str:
    """Fails as a task with a JSON-RPC error, not a tool error."""
    raise MCPError(-32603, "The job's worker lost its connection to the backend")


class _Confirm(BaseModel):
    confirm: bool


@mcp.tool(task=True)
def confirm_delete(filename: str, ctx: Context) -> str:
    """Asks (as a task) whether to delete ``filename``; the question waits in ``inputRequests``."""
    answer = ctx.elicit(f"Delete {filename}?", _Confirm)
    if answer.action == "accept" and answer.data.confirm:
        return f"Deleted {filename}"
    return f"Kept {filename}"


@mcp.tool(task=True)
def multi_input(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks two questions at once (a hand-built ``InputRequiredResult``); they may be answered one by one."""
    questions = {
        "first": _form("First: your name?", {"name": {"type": "string"}}, ["name"]),
        "second": _form("Second: confirm?", {"confirm": {"type": "boolean"}}, ["confirm"]),
    }
    answers = ctx.input_responses or {}
    if not all(key in answers for key in questions):
        return InputRequiredResult(input_requests=questions)  # type: ignore[arg-type]
    return _text(f"Received {', '.join(sorted(questions))}")


def _ask_name() -> Elicit[_Name]:
    return Elicit("What is your name?", _Name)


@mcp.tool(task="required")
def test_tool_with_task(person: Annotated[_Name, Resolve(_ask_name)]) -> str:
    """Asks for a name before the task exists (an ``input_required`` round), then greets as a task."""
    return f"Hello, {person.name}! (from a task)"


# --- resources -----------------------------------------------------------------------------------
@mcp.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", description="A static PNG image",
              mime_type="image/png")
def static_binary() -> bytes:
    return PNG


@mcp.resource("test://watched-resource", name="watched-resource", description="A resource clients may subscribe to",
              mime_type="text/plain")
def watched_resource() -> str:
    return "Watched resource content."


@mcp.resource("test://template/{id}/data", name="template-data", description="Data for one id",
              mime_type="application/json")
def template_data(id: str) -> str:  # noqa: A002 - the template variable is called id
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# --- prompts -------------------------------------------------------------------------------------
@mcp.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(arg1: Annotated[str, Field(description="First test argument")],
                               arg2: Annotated[str, Field(description="Second test argument")]) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],  # noqa: N803
) -> list[UserMessage]:
    """A prompt that embeds a resource."""
    return [
        UserMessage(EmbeddedResource(type="resource", resource=TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."))),
        UserMessage("Please process the embedded resource above."),
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt that carries an image."""
    return [UserMessage(Image(data=PNG, format="png")), UserMessage("Please analyze the image above.")]


@mcp.prompt()
def test_input_required_result_prompt(ctx: Context) -> GetPromptResult | InputRequiredResult:
    """Asks for context before rendering (2026-07-28 input_required on prompts/get)."""
    answers = _gather(ctx, {"user_context": _form("What context should the prompt use?",
                                                  {"context": {"type": "string"}}, ["context"])})
    if isinstance(answers, InputRequiredResult):
        return answers
    content = ElicitResult.model_validate(answers["user_context"]).content or {}
    return GetPromptResult(messages=[PromptMessage(role="user", content=TextContent(
        type="text", text=f"Prompt rendered with context: {content.get('context', '')}"))])


# --- completion ----------------------------------------------------------------------------------
@mcp.completion()
def complete(ref: Any, argument: Any, context: Any) -> Completion:
    """Suggests values for ``test_prompt_with_arguments``' arguments that start with what was typed."""
    values = [v for v in ("paris", "park", "party", "test-value") if v.startswith(argument.value or "")]
    return Completion(values=values, total=len(values), has_more=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=3001)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    mcp.run(transport="streamable-http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
