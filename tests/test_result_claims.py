"""Client result claims (``minimcp.client.extension``: ``ResultClaim``, ``ClaimContext``,
``UnexpectedClaimedResult``), through ``Client`` in memory and over real HTTP.

The server is a low-level ``Server`` whose ``tools/call`` handler answers with a shape of an
extension's own (``resultType: "com.example/pending"``). What each call gives was measured on the
official SDK 2.3.0 running the same program: a claimed shape is resolved on 2026-07-28 only, the
session hands it over only with ``allow_claimed=True``, and a ``resultType`` nothing claims is read
as a ``CallToolResult`` (a ``ValidationError`` without ``content``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal

import pytest
from conftest import run_docs_program
from pydantic import Field, ValidationError

import minimcp.types as types
from minimcp.client import (
    ClaimContext,
    Client,
    ClientExtension,
    ClientSession,
    ResultClaim,
    UnexpectedClaimedResult,
    advertise,
)
from minimcp.client.transports import InMemoryTransport
from minimcp.server.lowlevel import Server

PENDING = "com.example/pending"
TICKETS = "com.example/tickets"


class Pending(types.Result):
    result_type: Literal["com.example/pending"] = "com.example/pending"
    ticket: str


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def make_server(declared: list[list[str]]) -> Server:
    """``declared`` receives, per call, the extensions the calling client declared."""

    def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name="book", input_schema={"type": "object"}),
            types.Tool(name="redeem", input_schema={"type": "object"}),
            types.Tool(name="typed", input_schema={"type": "object"},
                       output_schema={"type": "object", "properties": {"seat": {"type": "string"}},
                                      "required": ["seat"]}),
        ])

    def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        declared.append(sorted((ctx.session.client_capabilities.extensions or {}).keys()))
        arguments = params.arguments or {}
        if params.name in ("book", "typed"):
            return Pending(ticket=f"t-{arguments.get('n', 1)}")
        if params.name == "redeem":
            return text(f"booked {arguments['ticket']}")
        if params.name == "broken":
            return {"resultType": PENDING}
        if params.name == "foreign":
            return {"resultType": "com.example/other", "content": [{"type": "text", "text": "as is"}]}
        if params.name == "foreign_bare":
            return {"resultType": "com.example/other", "ticket": "t-9"}
        return text("plain")

    return Server("claims", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


class Tickets(ClientExtension):
    """Finishes a pending booking by redeeming its ticket through the session it is given."""

    identifier = TICKETS

    def __init__(self, resolve: Callable[[Pending, ClaimContext], Any] | None = None) -> None:
        self.calls: list[tuple[Pending, ClaimContext, int]] = []
        self._resolve = resolve

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type=PENDING, model=Pending, resolve=self.resolve)]

    def resolve(self, result: Pending, ctx: ClaimContext) -> types.CallToolResult:
        self.calls.append((result, ctx, threading.get_ident()))
        if self._resolve is not None:
            return self._resolve(result, ctx)
        return ctx.session.call_tool("redeem", {"ticket": result.ticket})


def test_a_claimed_result_is_resolved_on_the_calling_thread(connect: Callable[..., Client]) -> None:
    tickets = Tickets()
    with connect(make_server([]), extensions=[tickets]) as client:
        result = client.call_tool("book", {"n": 7}, read_timeout_seconds=30)
        assert type(result) is types.CallToolResult
        assert result.content[0].text == "booked t-7"
        [(claimed, ctx, thread)] = tickets.calls
        assert isinstance(claimed, Pending) and claimed.ticket == "t-7"
        assert ctx.session is client.session
        assert (ctx.tool_name, ctx.read_timeout_seconds) == ("book", 30)
        assert thread == threading.get_ident()
        assert client.call_tool("plain").content[0].text == "plain"  # core answers pass untouched
        assert len(tickets.calls) == 1


def test_the_session_hands_over_a_claimed_shape_only_when_asked(connect: Callable[..., Client]) -> None:
    tickets = Tickets()
    with connect(make_server([]), extensions=[tickets]) as client:
        claimed = client.session.call_tool("book", {"n": 2}, allow_claimed=True)
        assert type(claimed) is Pending and claimed.ticket == "t-2" and claimed.result_type == PENDING
        with pytest.raises(UnexpectedClaimedResult, match="allow_claimed=True") as refused:
            client.session.call_tool("book", {"n": 3})
        assert type(refused.value.result) is Pending and refused.value.result.ticket == "t-3"
    assert tickets.calls == []


def test_a_claiming_extension_is_declared_only_where_a_claim_is_active(connect: Callable[..., Client]) -> None:
    declared: list[list[str]] = []
    server = make_server(declared)
    extensions = [Tickets(), advertise("com.example/plain")]
    with connect(server, extensions=extensions) as client:
        client.call_tool("book")
    assert declared[0] == ["com.example/plain", TICKETS, "io.modelcontextprotocol/tasks"]
    declared.clear()
    with connect(server, extensions=extensions, mode="legacy") as client:
        client.call_tool("plain")
    assert declared == [["com.example/plain", "io.modelcontextprotocol/tasks"]]


def test_a_legacy_connection_activates_no_claims(connect: Callable[..., Client]) -> None:
    tickets = Tickets()
    with connect(make_server([]), extensions=[tickets], mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        with pytest.raises(ValidationError, match="content"):
            client.call_tool("book")
        with pytest.raises(ValidationError, match="content"):
            client.session.call_tool("book", allow_claimed=True)
    assert tickets.calls == []


def test_a_result_type_nothing_claims_reads_as_the_core_shape(connect: Callable[..., Client]) -> None:
    for extensions in ([], [Tickets()]):
        with connect(make_server([]), extensions=extensions) as client:
            result = client.call_tool("foreign")
            assert type(result) is types.CallToolResult
            assert (result.result_type, result.content[0].text) == ("com.example/other", "as is")
            with pytest.raises(ValidationError, match="content"):
                client.call_tool("foreign_bare")
            with pytest.raises(ValidationError, match="content"):
                client.session.call_tool("foreign_bare", allow_claimed=True)
    with connect(make_server([])) as client:  # no claim: the claimed shape is just unknown
        with pytest.raises(ValidationError, match="content"):
            client.session.call_tool("book", allow_claimed=True)


def test_a_claimed_shape_is_validated_as_its_model_before_resolving(connect: Callable[..., Client]) -> None:
    tickets = Tickets()
    with connect(make_server([]), extensions=[tickets]) as client:
        with pytest.raises(ValidationError, match="Pending\nticket"):
            client.call_tool("broken")
    assert tickets.calls == []


def test_what_resolve_returns_is_checked_as_a_direct_answer(connect: Callable[..., Client]) -> None:
    class Refused(Exception):
        pass

    def refuse(result: Pending, ctx: ClaimContext) -> types.CallToolResult:
        raise Refused(result.ticket)

    with connect(make_server([]), extensions=[Tickets(refuse)]) as client:
        with pytest.raises(Refused, match="t-1"):  # propagates as it is
            client.call_tool("book")
    with connect(make_server([]), extensions=[Tickets(lambda result, ctx: {"content": []})]) as client:
        with pytest.raises(TypeError, match="must return a CallToolResult"):
            client.call_tool("book")
    with connect(make_server([]), extensions=[Tickets(lambda result, ctx: text("no seat"))]) as client:
        with pytest.raises(RuntimeError, match="Tool typed has an output schema but did not return structured"):
            client.call_tool("typed")
    seated = types.CallToolResult(content=[], structured_content={"seat": "12A"})
    with connect(make_server([]), extensions=[Tickets(lambda result, ctx: seated)]) as client:
        assert client.call_tool("typed").structured_content == {"seat": "12A"}


class Other(types.Result):
    result_type: Literal["com.example/other"] = "com.example/other"


class Untagged(types.Result):
    note: str = ""


class Stateful(Pending):
    request_state: str | None = None  # camelCase alias: requestState, the core round's key


class Aliased(Pending):
    inbox: list[Any] = Field(default_factory=list, validation_alias="inputRequests")


class Plain:
    result_type: Literal["com.example/pending"] = "com.example/pending"


class Closing(types.CallToolResult):
    result_type: Literal["com.example/pending"] = "com.example/pending"  # type: ignore[assignment]


def resolve_nothing(result: Any, ctx: ClaimContext) -> types.CallToolResult:
    return text("")


@pytest.mark.parametrize(("options", "error"), [
    ({"result_type": "complete", "model": Pending}, "'complete' belongs to the core protocol"),
    ({"result_type": "input_required", "model": Pending}, "'input_required' belongs to the core protocol"),
    ({"result_type": PENDING, "model": Plain}, "must subclass minimcp.types.Result"),
    ({"result_type": PENDING, "model": Closing}, "subclasses a core result"),
    ({"result_type": PENDING, "model": Other}, r"Other.result_type must be Literal\['com.example/pending'\]"),
    ({"result_type": PENDING, "model": Untagged}, r"Untagged.result_type must be Literal"),
    ({"result_type": PENDING, "model": Stateful}, "Stateful.request_state reads the wire key 'requestState'"),
    ({"result_type": PENDING, "model": Aliased}, "Aliased.inbox reads the wire key 'inputRequests'"),
    ({"result_type": PENDING, "model": Pending, "protocol_versions": frozenset()}, "could never be active"),
    ({"result_type": PENDING, "model": Pending, "protocol_versions": frozenset({"2025-11-25", "2026-07-28"})},
     r"\['2025-11-25'\] are not 2026-07-28-era versions"),
    ({"result_type": PENDING, "model": Pending, "method": "prompts/get"}, "attaches to \\['tools/call'\\] only"),
])
def test_a_claim_is_checked_when_it_is_built(options: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ResultClaim(resolve=resolve_nothing, **options)


def test_a_result_type_has_one_resolver() -> None:
    claim = ResultClaim(result_type=PENDING, model=Pending, resolve=resolve_nothing,
                        protocol_versions=frozenset({"2026-07-28"}))

    class Twice(ClientExtension):
        identifier = "com.example/twice"

        def claims(self) -> list[ResultClaim[Any]]:
            return [claim, claim]

    class Again(Tickets):
        identifier = "com.example/again"

    with pytest.raises(ValueError, match="extension 'com.example/twice' claims resultType 'com.example/pending'"):
        Client(make_server([]), extensions=[Twice()])
    with pytest.raises(ValueError, match="extensions 'com.example/tickets' and 'com.example/again' both claim"):
        Client(make_server([]), extensions=[Tickets(), Again()])
    transport = InMemoryTransport(make_server([]))
    with pytest.raises(ValueError, match="'com.example/tickets' is not in extensions"):
        ClientSession(transport, result_claims={TICKETS: [claim]})
    with pytest.raises(ValueError, match="is empty"):
        ClientSession(transport, extensions={TICKETS: {}}, result_claims={TICKETS: []})
    with pytest.raises(ValueError, match="duplicate result claim for resultType 'com.example/pending'"):
        ClientSession(transport, extensions={TICKETS: {}, "com.example/again": {}},
                      result_claims={TICKETS: [claim], "com.example/again": [claim]})


def test_the_names_live_at_the_official_paths() -> None:
    import minimcp.client
    import minimcp.client.extension as extension

    for name in ("ClaimContext", "ResultClaim", "UnexpectedClaimedResult"):
        assert name in extension.__all__ and name in minimcp.client.__all__
        assert getattr(minimcp.client, name) is getattr(extension, name)
    assert ClientExtension().claims() == ()


def test_the_documented_claim_example(capsys: pytest.CaptureFixture[str]) -> None:
    run_docs_program("topics/tickets.py")
    assert capsys.readouterr().out == "booked t-1\n"
