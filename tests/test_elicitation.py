"""ctx.elicit / ctx.elicit_url end to end: real client, in-memory and over HTTP, both eras.

Every test runs against each transport (the in-memory connection and a real HTTP server on a
loopback port) and each era (``mode="legacy"``: the worker blocks while the question travels;
``mode="auto"``: lands on 2026-07-28, where the question comes back as ``input_required`` and the
tool is replayed).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest
from conftest import ERAS, busy_threads, legacy_handshake, load_example, modern_rpc
from pydantic import BaseModel, Field

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer
from minimcp.server.elicitation import elicit_url, elicit_with_validation, render_elicitation_schema
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

QUESTION = "No tables for 2 on 2025-12-25. Would you like to try another date?"


class AlternativeDate(BaseModel):
    accept_alternative: bool = Field(description="Try another date?")
    date: str = Field(default="2025-12-26", description="Alternative date (YYYY-MM-DD)")


class Address(BaseModel):
    street: str


class Shipping(BaseModel):
    address: Address


def bistro(**options: Any) -> MCPServer:
    """The page's ``book_table`` with a second full date (2025-12-28), so one call can ask twice
    with different questions, and a tool whose schema a form cannot hold. URL mode uses the page's
    own ``deposit_server`` example."""
    mcp = MCPServer("Bistro", **options)

    @mcp.tool()
    def book_table(date: str, party_size: int, ctx: Context) -> str:
        """Book a table at the bistro."""
        if date not in ("2025-12-25", "2025-12-28"):
            return f"Booked a table for {party_size} on {date}."
        result = ctx.elicit(
            message=f"No tables for {party_size} on {date}. Would you like to try another date?",
            schema=AlternativeDate,
        )
        if result.action == "accept" and result.data.accept_alternative:
            return book_table(result.data.date, party_size, ctx)
        return "No booking made."

    @mcp.tool()
    def ship(ctx: Context) -> str:
        ctx.elicit("Where to?", schema=Shipping)
        return "unreachable"

    return mcp


def answering(*answers: ElicitResult, seen: list[Any] | None = None) -> Callable[..., ElicitResult]:
    """An elicitation callback that records each question and gives the next canned answer."""
    queue = list(answers)
    record = seen if seen is not None else []

    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        record.append(params)
        return queue.pop(0)

    return callback


def text_of(result: Any) -> str:
    return result.content[0].text


@ERAS
def test_accept_books_the_alternative_date(connect: Callable[..., Client], mode: str) -> None:
    seen: list[Any] = []
    callback = answering(ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"}),
                         seen=seen)
    with connect(bistro(), mode=mode, elicitation_callback=callback) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert text_of(result) == "Booked a table for 2 on 2025-12-27."
    assert len(seen) == 1 and isinstance(seen[0], ElicitRequestFormParams)
    assert seen[0].message == QUESTION
    assert seen[0].requested_schema == {
        "properties": {
            "accept_alternative": {"description": "Try another date?", "title": "Accept Alternative", "type": "boolean"},
            "date": {"default": "2025-12-26", "description": "Alternative date (YYYY-MM-DD)", "title": "Date",
                     "type": "string"},
        },
        "required": ["accept_alternative"], "title": "AlternativeDate", "type": "object",
    }


@ERAS
def test_server_side_default_fills_an_omitted_field(connect: Callable[..., Client], mode: str) -> None:
    callback = answering(ElicitResult(action="accept", content={"accept_alternative": True}))
    with connect(bistro(), mode=mode, elicitation_callback=callback) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert text_of(result) == "Booked a table for 2 on 2025-12-26."


@ERAS
@pytest.mark.parametrize("answer", [
    ElicitResult(action="decline"),
    ElicitResult(action="cancel"),
    ElicitResult(action="accept", content={"accept_alternative": False}),
])
def test_decline_cancel_and_refusal_are_answered_normally(connect: Callable[..., Client], mode: str,
                                                          answer: ElicitResult) -> None:
    with connect(bistro(), mode=mode, elicitation_callback=answering(answer)) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert not result.is_error
    assert text_of(result) == "No booking made."


@ERAS
def test_a_second_question_in_the_same_call(connect: Callable[..., Client], mode: str) -> None:
    seen: list[Any] = []
    callback = answering(
        ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-28"}),
        ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-30"}),
        seen=seen,
    )
    with connect(bistro(), mode=mode, elicitation_callback=callback) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert text_of(result) == "Booked a table for 2 on 2025-12-30."
    assert [p.message for p in seen] == [QUESTION, QUESTION.replace("2025-12-25", "2025-12-28")]


@ERAS
def test_a_nested_model_is_refused_before_anything_is_sent(connect: Callable[..., Client], mode: str) -> None:
    seen: list[Any] = []
    with connect(bistro(), mode=mode, elicitation_callback=answering(seen=seen)) as client:
        result = client.call_tool("ship", {})
    assert result.is_error
    assert text_of(result) == "Error executing tool ship"  # the TypeError is the server log's, as officially
    assert seen == []


@ERAS
def test_an_answer_that_does_not_fit_the_schema_fails_the_tool(connect: Callable[..., Client], mode: str) -> None:
    callback = answering(ElicitResult(action="accept", content={"accept_alternative": "maybe"}))
    with connect(bistro(), mode=mode, elicitation_callback=callback) as client:
        result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert result.is_error
    # The client's own mistake, like arguments that fail the input schema: it reads what to send instead.
    assert text_of(result) == ("Error executing tool book_table: Received an accepted elicitation whose content "
                               "does not match the requested schema: accept_alternative: Input should be a valid "
                               "boolean, unable to interpret input")


@ERAS
def test_without_a_callback_elicitation_is_not_supported(connect: Callable[..., Client], mode: str) -> None:
    with connect(bistro(), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        assert str(raised.value) == "Elicitation not supported"
        assert raised.value.code == -32600
        assert text_of(client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})) == \
            "Booked a table for 2 on 2025-12-24."


@ERAS
def test_url_mode_and_the_completion_notification(connect: Callable[..., Client], mode: str) -> None:
    seen: list[Any] = []
    notes: list[Any] = []
    done = threading.Event()

    def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/elicitation/complete":
            notes.append(message)
            done.set()

    with connect(load_example("deposit_server").mcp, mode=mode,
                 elicitation_callback=answering(ElicitResult(action="accept"), seen=seen),
                 message_handler=on_message) as client:
        result = client.call_tool("pay_deposit", {"booking_id": "42"})
        assert text_of(result) == "Complete the payment in your browser."
        assert len(seen) == 1 and isinstance(seen[0], ElicitRequestURLParams)
        assert seen[0].message == "A 20 EUR deposit confirms your booking."
        assert seen[0].url == "https://pay.example.com/deposit/42"
        assert text_of(client.call_tool("confirm_deposit", {"booking_id": "42"})) == \
            "Deposit received for booking 42."
        if mode == "legacy":
            assert seen[0].elicitation_id == "deposit-42"
            assert done.wait(5)
            assert notes[0].params.elicitation_id == "deposit-42"
        else:
            assert seen[0].elicitation_id is None
            assert notes == []


@ERAS
def test_url_mode_decline(connect: Callable[..., Client], mode: str) -> None:
    with connect(load_example("deposit_server").mcp, mode=mode,
                 elicitation_callback=answering(ElicitResult(action="decline"))) as client:
        result = client.call_tool("pay_deposit", {"booking_id": "42"})
    assert text_of(result) == "No deposit taken. The booking expires in one hour."


def test_legacy_client_that_never_answers_times_out_and_frees_the_worker(connect: Callable[..., Client]) -> None:
    mcp = bistro(back_channel_timeout=0.3)
    release = threading.Event()

    def slow(context: ClientRequestContext, params: Any) -> ElicitResult:
        release.wait(1.0)
        return ElicitResult(action="accept", content={"accept_alternative": False})

    with connect(mcp, mode="legacy", elicitation_callback=slow) as client:
        baseline = busy_threads()
        started = time.monotonic()
        with pytest.raises(MCPError) as raised:
            client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        assert raised.value.code == -32001
        assert str(raised.value) == "Request 'elicitation/create' timed out"
        assert time.monotonic() - started < 2.5
        release.set()
        assert text_of(client.call_tool("book_table", {"date": "2025-12-24", "party_size": 2})) == \
            "Booked a table for 2 on 2025-12-24."
        deadline = time.monotonic() + 5
        while busy_threads() > baseline + 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert busy_threads() <= baseline + 1


def test_elicit_replay_off_restores_the_official_error(connect: Callable[..., Client]) -> None:
    with connect(bistro(elicit_replay=False), elicitation_callback=answering()) as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert str(raised.value) == ("Cannot send 'elicitation/create': this transport context has no back-channel "
                                 "for server-initiated requests.")


def test_replay_takes_one_round_per_question(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("Counter")
    runs: list[int] = []

    class Ok(BaseModel):
        ok: bool

    @mcp.tool()
    def twice(ctx: Context) -> str:
        runs.append(1)
        first = ctx.elicit("first?", schema=Ok)
        second = ctx.elicit("second?", schema=Ok)
        return f"{first.action} {second.action}"

    callback = answering(ElicitResult(action="accept", content={"ok": True}), ElicitResult(action="decline"))
    with connect(mcp, elicitation_callback=callback) as client:
        assert text_of(client.call_tool("twice", {})) == "accept decline"
    assert len(runs) == 3


def helper_server() -> MCPServer:
    """Tools that ask through the official low-level helpers, given the call's ``ServerSession``."""
    mcp = MCPServer("Helpers")

    @mcp.tool()
    def ask_date(ctx: Context) -> str:
        try:
            result = elicit_with_validation(ctx.session, QUESTION, AlternativeDate, ctx.request_id)
        except ValueError as refused:
            return f"refused: {refused}"
        if result.action == "accept":
            return f"accept {result.data.accept_alternative} {result.data.date}"
        return result.action

    @mcp.tool()
    def ask_url(ctx: Context) -> str:
        result = elicit_url(ctx.session, "Pay the deposit.", "https://pay.example.com/42", "deposit-42",
                            ctx.request_id)
        return f"{type(result).__name__} {result.action}"

    return mcp


@pytest.mark.parametrize(("answer", "expected"), [
    (ElicitResult(action="accept", content={"accept_alternative": True}), "accept True 2025-12-26"),
    (ElicitResult(action="accept", content={"date": 5}),
     "refused: Received an accepted elicitation whose content does not match the requested schema: "
     "accept_alternative: Field required; date: Input should be a valid string"),
    (ElicitResult(action="accept"), "refused: Received an accepted elicitation with no content; an accepted form "
                                    "answer carries the form's fields as its content"),
    (ElicitResult(action="decline"), "decline"),
    (ElicitResult(action="cancel"), "cancel"),
])
def test_elicit_with_validation_the_official_helper(connect: Callable[..., Client], answer: ElicitResult,
                                                    expected: str) -> None:
    asked: list[Any] = []

    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(params)
        return answer

    with connect(helper_server(), mode="legacy", elicitation_callback=callback) as client:
        assert client.call_tool("ask_date", {}).content[0].text == expected
    (params,) = asked
    assert isinstance(params, ElicitRequestFormParams) and params.message == QUESTION
    assert params.requested_schema == render_elicitation_schema(AlternativeDate)


def test_elicit_url_the_official_helper(connect: Callable[..., Client]) -> None:
    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams)
        assert (params.url, params.elicitation_id) == ("https://pay.example.com/42", "deposit-42")
        return ElicitResult(action="accept")

    with connect(helper_server(), mode="legacy", elicitation_callback=callback) as client:
        assert client.call_tool("ask_url", {}).content[0].text == "AcceptedUrlElicitation accept"


def test_render_elicitation_schema_gives_a_copy_of_its_own() -> None:
    first = render_elicitation_schema(AlternativeDate)
    first["properties"].clear()
    again = render_elicitation_schema(AlternativeDate)
    assert set(again["properties"]) == {"accept_alternative", "date"}
    assert again["required"] == ["accept_alternative"]
    with pytest.raises(TypeError, match="Elicitation schema field 'address'"):
        render_elicitation_schema(Shipping)


def asking_server() -> MCPServer:
    """One tool that asks its ``mode``'s question from the body."""
    mcp = MCPServer("Gate")

    @mcp.tool()
    def ask(mode: str, ctx: Context) -> str:
        if mode == "url":
            return ctx.elicit_url("Pay here.", "https://pay.example.com/7", "pay-7").action
        return ctx.elicit("Proceed?", schema=Address).action

    return mcp


#: What a client declares -> (what a form question gets, what a URL question gets): "asked" or the
#: error code. A bare ``elicitation: {}`` is form only; nothing declared is "Elicitation not supported".
GATE = [
    ({"elicitation": {}}, "asked", -32021),
    ({"elicitation": {"form": {}}}, "asked", -32021),
    ({"elicitation": {"url": {}}}, -32021, "asked"),
    ({"elicitation": {"form": {}, "url": {}}}, "asked", "asked"),
    ({}, -32600, -32600),
]


@pytest.mark.parametrize(("declared", "form", "url"), GATE)
def test_a_body_question_is_gated_by_the_declared_modes_on_2026(serve_http: Callable[..., str],
                                                               declared: dict[str, Any], form: Any, url: Any) -> None:
    """The gate reads the envelope's own declaration (no model is made of it for the question)."""
    endpoint = serve_http(asking_server())
    for mode, expected in (("form", form), ("url", url)):
        answer = modern_rpc(endpoint, "tools/call", {"name": "ask", "arguments": {"mode": mode}},
                            capabilities=declared)
        if expected == "asked":
            result = answer["result"]
            assert result["resultType"] == "input_required", answer
            (request,) = result["inputRequests"].values()
            assert request["method"] == "elicitation/create"
            assert request["params"]["mode"] == mode
        else:
            assert answer["error"]["code"] == expected, answer


@pytest.mark.parametrize(("declared", "form", "url"), [row for row in GATE if row[1:] != ("asked", "asked")])
def test_a_refused_body_question_is_refused_alike_on_a_legacy_session(serve_http: Callable[..., str],
                                                                      declared: dict[str, Any], form: Any,
                                                                      url: Any) -> None:
    """The same gate on a legacy session, whose capabilities are a model since ``initialize``; a
    refused question is answered at once, with nothing sent to the client."""
    session = legacy_handshake(serve_http(asking_server()), capabilities=declared)
    for mode, expected in (("form", form), ("url", url)):
        if expected != "asked":
            answer = session.rpc("tools/call", {"name": "ask", "arguments": {"mode": mode}})
            assert answer["error"]["code"] == expected, answer


class Note(BaseModel):
    text: str


def test_an_answer_the_server_refuses_fails_the_call_with_the_servers_reason(serve_http: Callable[..., str]) -> None:
    """An answer over the server's size limit is refused (400) by the process that asked: the call
    fails with what the server said, not with a guess about other processes."""
    mcp = MCPServer("notes")

    @mcp.tool()
    def take_note(ctx: Context) -> str:
        answer = ctx.elicit("What should I note?", schema=Note)
        return f"noted {len(answer.data.text)} characters"

    @mcp.tool()
    def ping() -> str:
        return "pong"

    def essay(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"text": "x" * (2 * 1024 * 1024)})

    with Client(serve_http(mcp), mode="legacy", elicitation_callback=essay) as client:
        with pytest.raises(MCPError) as refused:
            client.call_tool("take_note", {})
        message = str(refused.value)
        assert "HTTP 400" in message and "bytes an answer may hold" in message, message
        assert "another server process" not in message and "sticky" not in message
        assert text_of(client.call_tool("ping", {})) == "pong"  # the session serves on
