"""Client pieces that need no server: mode validation, lifecycle errors, SSE framing, header rules."""

from __future__ import annotations

import base64

import pytest

from minimcp import Client
from minimcp.client.streamable_http import encode_header_value, header_parameters, streamable_http_client
from minimcp.client.transports import SSEParser


# --- mode= -----------------------------------------------------------------------------------


def test_handshake_version_mode_is_refused_with_a_hint() -> None:
    with pytest.raises(ValueError) as refused:
        Client("http://127.0.0.1:1/mcp", mode="2025-06-18")
    assert str(refused.value) == (
        "mode must be 'legacy', 'auto', or one of ['2026-07-28']; got '2025-06-18' "
        "('2025-06-18' is a handshake-era version; use mode='legacy')"
    )


def test_unknown_mode_is_refused_without_the_hint() -> None:
    with pytest.raises(ValueError) as refused:
        Client("http://127.0.0.1:1/mcp", mode="modern")
    assert str(refused.value) == "mode must be 'legacy', 'auto', or one of ['2026-07-28']; got 'modern'"


@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
def test_valid_modes_connect_nothing_at_construction(mode: str) -> None:
    Client("http://127.0.0.1:1/mcp", mode=mode)


def test_using_a_client_outside_with_is_an_error() -> None:
    client = Client("http://127.0.0.1:1/mcp")
    with pytest.raises(RuntimeError, match="^Client must be used within a context manager$"):
        client.list_tools()


def test_streamable_http_client_has_no_headers_keyword() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'headers'"):
        streamable_http_client("http://127.0.0.1:1/mcp", headers={"X": "y"})  # type: ignore[call-arg]


# --- SSE -------------------------------------------------------------------------------------


def test_sse_events_survive_arbitrary_chunking() -> None:
    body = b'id: s1:1\nretry: 500\ndata: \n\n: keepalive\n\nevent: message\ndata: {"a":1}\n\ndata: {"b":\ndata: 2}\n\n'
    for size in (1, 2, 3, 7, len(body)):
        parser = SSEParser()
        events = []
        for start in range(0, len(body), size):
            events.extend(parser.feed(body[start:start + size]))
        assert [e.data for e in events] == ['{"a":1}', '{"b":\n2}']
        assert parser.last_event_id == "s1:1"
        assert parser.retry_ms == 500


def test_sse_priming_event_sets_id_and_retry_without_dispatching() -> None:
    parser = SSEParser()
    assert parser.feed(b"id: event-2\nretry: 500\ndata: \n\n") == []
    assert (parser.last_event_id, parser.retry_ms) == ("event-2", 500)


def test_sse_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert [e.data for e in parser.feed(b"\n\r\n")] == ["x"]


def test_sse_event_carries_the_id_in_force() -> None:
    parser = SSEParser()
    (event,) = parser.feed(b"id: 7\nevent: message\ndata: {}\n\n")
    assert (event.id, event.event) == ("7", "message")


# --- 2026-07-28 header rules -----------------------------------------------------------------


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        (42, "42"),
        (True, "true"),
        (False, "false"),
        ("", ""),
        (None, None),
        ("Hello, 世界", _b64("Hello, 世界")),
        (" padded ", _b64(" padded ")),
        ("line1\nline2", _b64("line1\nline2")),
        ("\tindented", _b64("\tindented")),
        ("=?base64?SGVsbG8=?=", _b64("=?base64?SGVsbG8=?=")),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),
    ],
)
def test_header_values_are_plain_when_safe_else_base64(value: object, expected: str | None) -> None:
    assert encode_header_value(value) == expected


def test_header_parameters_maps_arguments_to_header_names() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"},
        },
    }
    assert header_parameters(schema) == {"region": "Region", "priority": "Priority"}


@pytest.mark.parametrize(
    "properties",
    [
        {"v": {"type": "string", "x-mcp-header": ""}},
        {"v": {"type": "object", "x-mcp-header": "Data"}},
        {"v": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}},
        {"v": {"type": "null", "x-mcp-header": "Nil"}},
        {"v": {"type": "number", "x-mcp-header": "Score"}},
        {"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}},
        {"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}},
        {"v": {"type": "string", "x-mcp-header": "My Region"}},
        {"v": {"type": "string", "x-mcp-header": "Region:Primary"}},
        {"v": {"type": "string", "x-mcp-header": "Région"}},
        {"v": {"type": "string", "x-mcp-header": "Region\t1"}},
        {"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "Nested"}}},
    ],
)
def test_invalid_header_annotations_are_rejected(properties: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        header_parameters({"type": "object", "properties": properties})
