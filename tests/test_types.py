"""Tests for minimcp.types: the spec's example messages round-trip, plus targeted wire rules."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import AnyUrl, BaseModel, TypeAdapter, ValidationError

from minimcp import types
from minimcp.types import (
    CacheableResult,
    CallToolResult,
    ClientCapabilities,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    FormElicitationCapability,
    InputRequiredResult,
    ListRootsResult,
    PrimitiveSchemaDefinition,
    Root,
    SamplingCapability,
    SamplingToolsCapability,
    ServerCapabilities,
    TextContent,
    Tool,
    UrlElicitationCapability,
    dump,
    parse_elicit_params,
    parse_input_response,
    parse_server_notification,
)

# --- The spec's examples ------------------------------------------------------------------------

#: The specification's own example messages (``examples/<Type>/*.json`` in its repository), copied
#: into the project so that a fresh clone tests against them.
SPEC_EXAMPLES = Path(__file__).resolve().parent / "data" / "spec-examples" / "2026-07-28"


def _example_params() -> list[Any]:
    files = sorted(SPEC_EXAMPLES.glob("*/*.json"))
    assert files, f"no spec examples under {SPEC_EXAMPLES}"
    return [pytest.param(f, id=f"{f.parent.name}/{f.name}") for f in files]


# --- How each example type is checked ----------------------------------------------------------

# Type aliases (dicts of models) rather than models: validated with a TypeAdapter.
ALIASES: dict[str, Any] = {
    "InputRequests": types.InputRequests,
    "InputResponses": types.InputResponses,
}

# Bare JSON-RPC error objects: checked with ErrorData, and the code against our constant.
BARE_ERRORS = {
    "ParseError": types.PARSE_ERROR,
    "InvalidParamsError": types.INVALID_PARAMS,
    "MethodNotFoundError": types.METHOD_NOT_FOUND,
    "InternalError": types.INTERNAL_ERROR,
}

# JSON-RPC error envelopes have no model here (minimcp.jsonrpc keeps envelopes as dicts): their
# `error` part is checked with ErrorData, its code against our constant, its data with the model.
ERROR_ENVELOPES: dict[str, tuple[int, type[BaseModel] | None]] = {
    "HeaderMismatchError": (types.HEADER_MISMATCH, None),
    "MissingRequiredClientCapabilityError": (
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        types.MissingRequiredClientCapabilityErrorData,
    ),
    "UnsupportedProtocolVersionError": (
        types.UNSUPPORTED_PROTOCOL_VERSION,
        types.UnsupportedProtocolVersionErrorData,
    ),
}


def _result_envelope_model(type_name: str) -> type[BaseModel] | None:
    """``FooResultResponse`` is a JSON-RPC envelope whose ``result`` is a ``FooResult``."""
    if not type_name.endswith("ResultResponse"):
        return None
    model = getattr(types, type_name.removesuffix("Response"), None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _direct_model(type_name: str, data: Any) -> type[BaseModel] | None:
    model = getattr(types, type_name, None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    # The schema's one CreateMessageResult is two models here (as in the official SDK): answers
    # with tool use or a list of blocks are CreateMessageResultWithTools.
    if model is CreateMessageResult and isinstance(data.get("content"), list):
        return CreateMessageResultWithTools
    return model


def _with_filled_defaults(model: type[BaseModel], data: Any) -> Any:
    """``data`` plus the defaults our models write out explicitly.

    The wire fields with non-None defaults that dump always emits: ``CallToolResult.isError``
    (False), an elicitation's ``mode`` ("form": a missing mode MUST be read as form), and the
    official defaults ``resultType`` "complete" on the core results and ``ttlMs`` 0 /
    ``cacheScope`` "private" on the cacheable ones.
    """
    expected = copy.deepcopy(data)
    if model is CallToolResult:
        expected.setdefault("isError", False)
    if isinstance(expected, dict) and model.model_fields.get("result_type") is not None \
            and model.model_fields["result_type"].default == "complete":
        expected.setdefault("resultType", "complete")
    if isinstance(expected, dict) and issubclass(model, CacheableResult):
        expected.setdefault("ttlMs", 0)
        expected.setdefault("cacheScope", "private")

    def fill_mode(value: Any) -> None:
        if isinstance(value, dict):
            params = value.get("params")
            if value.get("method") == "elicitation/create" and isinstance(params, dict):
                params.setdefault("mode", "form")
            for item in value.values():
                fill_mode(item)
        elif isinstance(value, list):
            for item in value:
                fill_mode(item)

    fill_mode(expected)
    return expected


def _check_round_trip(model: type[BaseModel], data: Any) -> BaseModel:
    instance = model.model_validate(data)
    assert type(instance) is model
    assert dump(instance) == _with_filled_defaults(model, data)
    return instance


@pytest.mark.parametrize("path", _example_params())
def test_spec_example_round_trips(path: Path) -> None:
    type_name = path.parent.name
    data = json.loads(path.read_text(encoding="utf-8"))

    if type_name in ALIASES:
        adapter = TypeAdapter(ALIASES[type_name])
        value = adapter.validate_python(data)
        assert adapter.dump_python(value, by_alias=True, exclude_none=True, mode="json") == data
    elif type_name in BARE_ERRORS:
        assert _check_round_trip(ErrorData, data).code == BARE_ERRORS[type_name]
    elif type_name in ERROR_ENVELOPES:
        code, data_model = ERROR_ENVELOPES[type_name]
        assert data["jsonrpc"] == "2.0"
        error = _check_round_trip(ErrorData, data["error"])
        assert error.code == code
        if data_model is not None:
            _check_round_trip(data_model, error.data)
    elif (model := _result_envelope_model(type_name)) is not None:
        assert data["jsonrpc"] == "2.0" and "id" in data
        if data["result"].get("resultType") == "input_required":
            model = InputRequiredResult
        _check_round_trip(model, data["result"])
    elif (model := _direct_model(type_name, data)) is not None:
        _check_round_trip(model, data)
    else:
        pytest.fail(f"no model and no rule for example type {type_name!r}: add one")


# --- Naming: snake_case attributes, camelCase wire, _meta -------------------------------------


def test_snake_case_attributes_dump_as_camel_case() -> None:
    result = CallToolResult(
        content=[TextContent(text="hi")], structured_content={"a_b": 1}, is_error=True
    )
    assert dump(result) == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"a_b": 1},
        "isError": True,
    }


def test_camel_case_wire_validates_into_snake_case_attributes() -> None:
    result = InputRequiredResult.model_validate(
        {"resultType": "input_required", "requestState": "s", "inputRequests": {}}
    )
    assert (result.result_type, result.request_state, result.input_requests) == (
        "input_required",
        "s",
        {},
    )


def test_snake_case_keys_are_accepted_on_input_too() -> None:
    params = ElicitRequestURLParams.model_validate(
        {"message": "m", "url": "https://x.example", "elicitation_id": "e1"}
    )
    assert params.elicitation_id == "e1"
    assert dump(params)["elicitationId"] == "e1"


def test_meta_is_the_wire_key_meta_and_its_keys_are_untouched() -> None:
    wire = {
        "_meta": {types.META_PROTOCOL_VERSION: "2026-07-28", "progressToken": 7},
        "name": "t",
        "arguments": {"some_arg": 1},
    }
    params = types.CallToolRequestParams.model_validate(wire)
    assert params.meta == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "progressToken": 7,
    }
    assert dump(params) == wire
    assert dump(TextContent(text="x", meta={"k_k": 1})) == {
        "type": "text",
        "text": "x",
        "_meta": {"k_k": 1},
    }


def test_unknown_fields_are_kept_as_they_came() -> None:
    wire = {
        "name": "t",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"},
        "some_snake_key": 1,
        "annotations": {"readOnlyHint": True, "vendorHint": "x"},
    }
    tool = Tool.model_validate(wire)
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert dump(tool) == wire


def test_none_fields_are_left_off_the_wire() -> None:
    result = types.InitializeResult(
        protocol_version="2025-11-25",
        capabilities=ServerCapabilities(),
        server_info=types.Implementation(name="s", version="1"),
    )
    assert dump(result) == {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"},
    }


def test_cacheable_and_paginated_fields() -> None:
    result = types.ListToolsResult(
        tools=[], next_cursor="c", ttl_ms=0, cache_scope="private", result_type="complete"
    )
    assert dump(result) == {
        "tools": [],
        "nextCursor": "c",
        "ttlMs": 0,
        "cacheScope": "private",
        "resultType": "complete",
    }
    with pytest.raises(ValidationError):
        types.ListToolsResult(tools=[], cache_scope="shared")
    with pytest.raises(ValidationError):
        types.ReadResourceResult(contents=[], ttl_ms=-1)


# --- Tool schemas pass through untouched -------------------------------------------------------


def test_tool_schemas_pass_through_byte_for_byte() -> None:
    input_schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"Region": {"type": "string", "x-mcp-header": "Region"}},
        "properties": {
            "region": {"$ref": "#/$defs/Region"},
            "snake_case_name": {"type": "integer", "additionalProperties": False},
        },
        "required": ["region"],
    }
    output_schema = {"type": "array", "items": {"type": "number"}}
    tool = Tool(name="t", input_schema=input_schema, output_schema=output_schema)
    wire = dump(tool)
    assert json.dumps(wire["inputSchema"]) == json.dumps(input_schema)
    assert wire["outputSchema"] == output_schema
    assert json.dumps(dump(Tool.model_validate(wire))["inputSchema"]) == json.dumps(input_schema)


# --- Content ---------------------------------------------------------------------------------


def test_content_blocks_are_discriminated_by_type() -> None:
    result = CallToolResult.model_validate(
        {
            "content": [
                {"type": "text", "text": "t"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
                {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}},
            ]
        }
    )
    assert [type(block).__name__ for block in result.content] == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
    ]
    assert isinstance(result.content[4].resource, types.BlobResourceContents)
    with pytest.raises(ValidationError):
        CallToolResult.model_validate({"content": [{"type": "video", "data": "AA=="}]})
    with pytest.raises(ValidationError):
        CallToolResult.model_validate({"content": [{"type": "text"}]})


def test_call_tool_result_defaults() -> None:
    result = CallToolResult()
    assert (result.content, result.structured_content, result.is_error) == ([], None, False)
    assert dump(result) == {"resultType": "complete", "content": [], "isError": False}


def test_a_complete_result_model_refuses_an_input_required_answer() -> None:
    with pytest.raises(ValidationError, match="is an InputRequiredResult, not CallToolResult"):
        CallToolResult.model_validate({"resultType": "input_required", "requestState": "s"})


# --- Capabilities ----------------------------------------------------------------------------


def test_empty_capability_objects_dump_as_empty_objects() -> None:
    caps = ClientCapabilities(
        elicitation=ElicitationCapability(
            form=FormElicitationCapability(), url=UrlElicitationCapability()
        )
    )
    assert dump(caps) == {"elicitation": {"form": {}, "url": {}}}
    sampling = SamplingCapability(tools=SamplingToolsCapability())
    assert dump(ClientCapabilities(sampling=sampling)) == {"sampling": {"tools": {}}}
    assert dump(ClientCapabilities(elicitation=ElicitationCapability())) == {"elicitation": {}}
    assert dump(ClientCapabilities(roots=types.RootsCapability(list_changed=True))) == {
        "roots": {"listChanged": True}
    }
    assert dump(
        ServerCapabilities(
            tools=types.ToolsCapability(),
            logging=types.LoggingCapability(),
            completions=types.CompletionsCapability(),
            prompts=types.PromptsCapability(list_changed=True),
        )
    ) == {"tools": {}, "logging": {}, "completions": {}, "prompts": {"listChanged": True}}
    assert dump(ClientCapabilities()) == {}


# --- Elicitation -----------------------------------------------------------------------------

ALTERNATIVE_DATE_SCHEMA = {
    "properties": {
        "accept_alternative": {
            "description": "Try another date?",
            "title": "Accept Alternative",
            "type": "boolean",
        },
        "date": {
            "default": "2025-12-26",
            "description": "Alternative date (YYYY-MM-DD)",
            "title": "Date",
            "type": "string",
        },
    },
    "required": ["accept_alternative"],
    "title": "AlternativeDate",
    "type": "object",
}


def test_requested_schema_passes_through_untouched() -> None:
    params = ElicitRequestFormParams(
        message="No tables that day.", requested_schema=ALTERNATIVE_DATE_SCHEMA
    )
    wire = dump(params)
    assert wire == {
        "mode": "form",
        "message": "No tables that day.",
        "requestedSchema": ALTERNATIVE_DATE_SCHEMA,
    }
    assert json.dumps(wire["requestedSchema"]) == json.dumps(ALTERNATIVE_DATE_SCHEMA)
    assert parse_elicit_params(wire).requested_schema == ALTERNATIVE_DATE_SCHEMA


def test_elicit_params_union_is_discriminated_by_mode() -> None:
    form = parse_elicit_params({"mode": "form", "message": "m", "requestedSchema": {}})
    url = parse_elicit_params({"mode": "url", "message": "m", "url": "https://pay.example/x"})
    assert isinstance(form, ElicitRequestFormParams)
    assert isinstance(url, ElicitRequestURLParams)
    assert url.elicitation_id is None
    assert dump(url) == {"mode": "url", "message": "m", "url": "https://pay.example/x"}
    with pytest.raises(ValidationError):
        parse_elicit_params({"mode": "carrier-pigeon", "message": "m"})
    with pytest.raises(ValidationError):
        parse_elicit_params({"mode": "url", "message": "m"})


def test_missing_mode_is_form_mode() -> None:
    params = parse_elicit_params({"message": "m", "requestedSchema": {"type": "object"}})
    assert isinstance(params, ElicitRequestFormParams) and params.mode == "form"
    request = ElicitRequest.model_validate(
        {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}}
    )
    assert isinstance(request.params, ElicitRequestFormParams)
    assert dump(request)["params"]["mode"] == "form"


def test_elicit_request_accepts_model_instances() -> None:
    url = ElicitRequestURLParams(message="m", url="https://x.example", elicitation_id="e")
    assert ElicitRequest(params=url).params is url
    form = ElicitRequestFormParams(message="m", requested_schema={})
    assert isinstance(ElicitRequest(params=form).params, ElicitRequestFormParams)


def test_elicit_result_actions_and_content() -> None:
    result = ElicitResult(
        action="accept", content={"s": "x", "i": 1, "f": 1.5, "b": True, "l": ["a"], "n": None}
    )
    # exclude_none drops None *fields*; a None inside the content dict is data and stays.
    assert dump(result) == {
        "action": "accept",
        "content": {"s": "x", "i": 1, "f": 1.5, "b": True, "l": ["a"], "n": None},
    }
    assert result.content is not None and result.content["b"] is True
    assert dump(ElicitResult(action="decline")) == {"action": "decline"}
    with pytest.raises(ValidationError):
        ElicitResult(action="maybe")
    with pytest.raises(ValidationError):
        ElicitResult.model_validate({"action": "accept", "content": {"nested": {"a": 1}}})


def test_elicit_complete_notification() -> None:
    note = types.ElicitCompleteNotification(
        params=types.ElicitCompleteNotificationParams(elicitation_id="e1")
    )
    assert dump(note) == {
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "e1"},
    }


@pytest.mark.parametrize(
    ("schema", "model"),
    [
        ({"type": "string", "format": "date"}, types.StringSchema),
        ({"type": "integer", "minimum": 1}, types.NumberSchema),
        ({"type": "boolean", "default": True}, types.BooleanSchema),
        ({"type": "string", "enum": ["a", "b"]}, types.UntitledSingleSelectEnumSchema),
        (
            {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
            types.TitledSingleSelectEnumSchema,
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            types.UntitledMultiSelectEnumSchema,
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
            types.TitledMultiSelectEnumSchema,
        ),
        (
            {"type": "string", "enum": ["a"], "enumNames": ["A"]},
            types.LegacyTitledEnumSchema,
        ),
    ],
)
def test_primitive_schema_definition_picks_the_variant(
    schema: dict[str, Any], model: type[BaseModel]
) -> None:
    adapter = TypeAdapter(PrimitiveSchemaDefinition)
    value = adapter.validate_python(schema)
    assert type(value) is model
    assert dump(value) == schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "uuid"},
        {"$ref": "#/$defs/Address"},
        {"type": "object", "properties": {}},
        {"type": "array", "items": {"type": "string"}},
        {"type": ["string", "null"]},
    ],
)
def test_primitive_schema_definition_rejects_non_primitives(schema: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(PrimitiveSchemaDefinition).validate_python(schema)


# --- Multi-round-trip --------------------------------------------------------------------------


def test_input_required_result_needs_requests_or_state() -> None:
    with pytest.raises(ValidationError) as excinfo:
        InputRequiredResult()
    assert "InputRequiredResult requires at least one of input_requests or request_state" in str(
        excinfo.value
    )
    assert isinstance(excinfo.value, ValueError)
    assert dump(InputRequiredResult(request_state="s")) == {
        "resultType": "input_required",
        "requestState": "s",
    }
    with pytest.raises(ValidationError):
        InputRequiredResult.model_validate({"resultType": "complete", "requestState": "s"})


def test_input_requests_are_discriminated_by_method() -> None:
    result = InputRequiredResult(
        input_requests={
            "a": types.ListRootsRequest(),
            "b": ElicitRequest(params=ElicitRequestFormParams(message="m", requested_schema={})),
        }
    )
    wire = dump(result)
    assert wire == {
        "resultType": "input_required",
        "inputRequests": {
            "a": {"method": "roots/list"},
            "b": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "m", "requestedSchema": {}},
            },
        },
    }
    again = InputRequiredResult.model_validate(wire)
    assert again.input_requests is not None
    assert isinstance(again.input_requests["a"], types.ListRootsRequest)
    with pytest.raises(ValidationError):
        InputRequiredResult.model_validate({"inputRequests": {"x": {"method": "tools/call"}}})


def test_input_responses_are_parsed_by_the_method_they_answer() -> None:
    sampled = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    with_tools = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "1", "name": "f", "input": {}}],
        "model": "m",
        "stopReason": "toolUse",
    }
    assert type(parse_input_response("sampling/createMessage", sampled)) is CreateMessageResult
    assert (
        type(parse_input_response("sampling/createMessage", with_tools))
        is CreateMessageResultWithTools
    )
    roots = parse_input_response("roots/list", {"roots": [{"uri": "file:///r"}]})
    assert isinstance(roots, ListRootsResult)
    assert type(parse_input_response("elicitation/create", {"action": "cancel"})) is ElicitResult
    with pytest.raises(ValidationError):
        parse_input_response("elicitation/create", sampled)
    with pytest.raises(KeyError):
        parse_input_response("tools/call", {})


def test_input_responses_on_a_retry() -> None:
    params = types.CallToolRequestParams.model_validate(
        {
            "name": "book_table",
            "inputResponses": {"q": {"action": "accept", "content": {"date": "2025-12-26"}}},
            "requestState": "opaque",
        }
    )
    assert params.input_responses is not None
    assert isinstance(params.input_responses["q"], ElicitResult)
    assert params.request_state == "opaque"


# --- Sampling and roots ----------------------------------------------------------------------


def test_create_message_result_takes_one_basic_block_only() -> None:
    tool_use = {"type": "tool_use", "id": "1", "name": "f", "input": {}}
    for content in ([tool_use], tool_use):
        with pytest.raises(ValidationError):
            CreateMessageResult.model_validate(
                {"role": "assistant", "content": content, "model": "m"}
            )
    result = CreateMessageResultWithTools.model_validate(
        {"role": "assistant", "content": tool_use, "model": "m"}
    )
    assert isinstance(result.content, types.ToolUseContent)


def test_sampling_message_content_is_a_block_or_a_list() -> None:
    single = types.SamplingMessage(role="user", content=TextContent(text="hi"))
    listed = types.SamplingMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    )
    assert isinstance(single.content, TextContent)
    assert isinstance(listed.content, list) and len(listed.content) == 2
    with pytest.raises(ValidationError):
        types.SamplingMessage(role="system", content=TextContent(text="hi"))


def test_root_uri_is_kept_as_a_string() -> None:
    root = Root(uri=AnyUrl("file:///home/user/project"), name="p")
    assert root.uri == "file:///home/user/project"
    assert dump(Root(uri="file:///tmp/x")) == {"uri": "file:///tmp/x"}


# --- Notifications ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "model"),
    [
        (
            {"method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}},
            types.ProgressNotification,
        ),
        (
            {"method": "notifications/message", "params": {"level": "info", "data": "x"}},
            types.LoggingMessageNotification,
        ),
        (
            {"method": "notifications/cancelled", "params": {"requestId": 3}},
            types.CancelledNotification,
        ),
        (
            {"method": "notifications/resources/updated", "params": {"uri": "file:///a"}},
            types.ResourceUpdatedNotification,
        ),
        ({"method": "notifications/resources/list_changed"}, types.ResourceListChangedNotification),
        ({"method": "notifications/tools/list_changed"}, types.ToolListChangedNotification),
        ({"method": "notifications/prompts/list_changed"}, types.PromptListChangedNotification),
        (
            {"method": "notifications/elicitation/complete", "params": {"elicitationId": "e"}},
            types.ElicitCompleteNotification,
        ),
        (
            {
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": True}},
            },
            types.SubscriptionsAcknowledgedNotification,
        ),
    ],
)
def test_parse_server_notification(wire: dict[str, Any], model: type[BaseModel]) -> None:
    note = parse_server_notification(wire)
    assert type(note) is model
    assert dump(note) == wire


def test_parse_server_notification_unknown_or_malformed() -> None:
    assert parse_server_notification({"method": "notifications/unheard_of", "params": {}}) is None
    assert parse_server_notification({"method": "notifications/initialized"}) is None
    assert parse_server_notification({"params": {}}) is None
    with pytest.raises(ValidationError):
        parse_server_notification({"method": "notifications/message", "params": {"level": "loud"}})


def test_request_ids_and_progress_tokens_keep_their_type() -> None:
    assert types.CancelledNotificationParams(request_id=3).request_id == 3
    assert types.CancelledNotificationParams(request_id="3").request_id == "3"
    params = types.ProgressNotificationParams(progress_token="t", progress=1, total=2)
    assert dump(params) == {"progressToken": "t", "progress": 1.0, "total": 2.0}


# --- Constants -------------------------------------------------------------------------------


def test_constants() -> None:
    assert {
        name: getattr(types, name)
        for name in (
            "PARSE_ERROR",
            "INVALID_REQUEST",
            "METHOD_NOT_FOUND",
            "INVALID_PARAMS",
            "INTERNAL_ERROR",
            "CONNECTION_CLOSED",
            "REQUEST_TIMEOUT",
            "RESOURCE_NOT_FOUND",
            "HEADER_MISMATCH",
            "MISSING_REQUIRED_CLIENT_CAPABILITY",
            "UNSUPPORTED_PROTOCOL_VERSION",
            "URL_ELICITATION_REQUIRED",
        )
    } == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "CONNECTION_CLOSED": -32000,
        "REQUEST_TIMEOUT": -32001,
        "RESOURCE_NOT_FOUND": -32002,
        "HEADER_MISMATCH": -32020,
        "MISSING_REQUIRED_CLIENT_CAPABILITY": -32021,
        "UNSUPPORTED_PROTOCOL_VERSION": -32022,
        "URL_ELICITATION_REQUIRED": -32042,
    }
    assert types.LATEST_PROTOCOL_VERSION == "2026-07-28"
    assert types.HANDSHAKE_PROTOCOL_VERSIONS == (
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
    )
    assert types.MODERN_PROTOCOL_VERSIONS == ("2026-07-28",)
    assert types.LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert [
        types.META_PROTOCOL_VERSION,
        types.META_CLIENT_CAPABILITIES,
        types.META_CLIENT_INFO,
        types.META_LOG_LEVEL,
        types.META_SERVER_INFO,
        types.META_SUBSCRIPTION_ID,
    ] == [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/logLevel",
        "io.modelcontextprotocol/serverInfo",
        "io.modelcontextprotocol/subscriptionId",
    ]


def test_error_data() -> None:
    error = ErrorData(code=types.INVALID_PARAMS, message="bad", data={"reason": "x"})
    assert dump(error) == {"code": -32602, "message": "bad", "data": {"reason": "x"}}
    assert dump(ErrorData(code=0, message="boom")) == {"code": 0, "message": "boom"}
    with pytest.raises(ValidationError):
        ErrorData.model_validate({"message": "no code"})


def test_dump_is_model_dump_and_honours_an_override() -> None:
    """``dump`` calls the serializer directly, as ``model_dump`` would; a model that overrides
    ``model_dump`` still gets its own."""

    class Tagged(CallToolResult):
        def model_dump(self, **kwargs: Any) -> dict[str, Any]:
            return {**super().model_dump(**kwargs), "tagged": True}

    result = CallToolResult(content=[TextContent(type="text", text="x")], structured_content={"a": None})
    assert types.dump(result) == result.model_dump(by_alias=True, exclude_none=True, mode="json")
    tagged = Tagged(content=[TextContent(type="text", text="x")])
    assert types.dump(tagged) == {"resultType": "complete", "content": [{"type": "text", "text": "x"}],
                                  "isError": False, "tagged": True}


#: Fields the official models carry and these do not: the protocol's 2025-11-25 core tasks (a
#: ``task`` on a request's params, ``tasks`` capabilities, ``Tool.execution``), which minimcp speaks
#: as the tasks extension instead (``minimcp.shared.tasks``, SEP-2663).
OFFICIAL_ONLY_FIELDS = {
    "CallToolRequestParams": {"task"},
    "ClientCapabilities": {"tasks"},
    "CreateMessageRequestParams": {"task"},
    "ElicitRequestFormParams": {"task"},
    "ElicitRequestURLParams": {"task"},
    "ServerCapabilities": {"tasks"},
    "Tool": {"execution"},
}


def _shared_models() -> list[tuple[str, type[BaseModel], type[BaseModel]]]:
    import inspect

    import mcp.types as official

    pairs = []
    for name in sorted(set(dir(official)) & set(dir(types))):
        theirs, ours = getattr(official, name), getattr(types, name)
        if all(inspect.isclass(model) and issubclass(model, BaseModel) for model in (theirs, ours)):
            pairs.append((name, theirs, ours))
    return pairs


def test_every_model_shared_with_the_official_sdk_has_its_fields_in_the_official_order() -> None:
    """A program that prints a model (or dumps it) prints the fields in the order the official one
    does: ``Implementation``'s ``website_url`` before ``icons``, a result's ``result_type`` last."""
    pairs = _shared_models()
    assert len(pairs) > 100
    for name, theirs, ours in pairs:
        official_fields, our_fields = list(theirs.model_fields), list(ours.model_fields)
        assert set(official_fields) - set(our_fields) == OFFICIAL_ONLY_FIELDS.get(name, set()), name
        assert set(our_fields) <= set(official_fields), name
        assert our_fields == [field for field in official_fields if field in our_fields], name


def test_printed_and_dumped_models_read_as_the_official_ones() -> None:
    import mcp.types as official

    server = {"name": "w", "version": "1", "website_url": "https://example.com", "icons": [{"src": "a.png"}]}
    assert str(types.Implementation(**server)) == str(official.Implementation(**server))
    answer = {"content": [{"type": "text", "text": "hi"}], "structured_content": {"n": 1}}
    assert repr(CallToolResult(**answer)) == repr(official.CallToolResult(**answer))
    assert json.dumps(dump(CallToolResult(**answer)), separators=(",", ":")) == official.CallToolResult(**answer).model_dump_json(
        by_alias=True, exclude_none=True)
    assert repr(ElicitResult(action="decline")) == repr(official.ElicitResult(action="decline"))
