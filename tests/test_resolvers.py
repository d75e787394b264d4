"""Resolvers: ``Annotated[T, Resolve(fn)]``, ``Elicit``, ``Sample``, ``ListRoots`` and the graph checks."""


from typing import Annotated, Any, Callable

import pytest
from conftest import ERAS, load_example
from pydantic import BaseModel

from minimcp import Client, MCPError
from minimcp.client import ClientRequestContext
from minimcp.server import MCPServer
from minimcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    Resolve,
    Sample,
)
from minimcp.server.mcpserver.exceptions import InvalidSignature
from minimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    Root,
    SamplingMessage,
    TextContent,
)


def files_server() -> Any:
    return load_example("files_server")


def recorder(answer: ElicitResult | None, seen: list[Any]) -> Callable[..., ElicitResult]:
    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        seen.append((context.request_id, params))
        assert answer is not None
        return answer

    return callback


def test_the_resolved_parameter_is_not_in_the_schema() -> None:
    module = files_server()
    with Client(module.mcp) as client:
        (tool,) = client.list_tools().tools
    assert tool.input_schema == {"type": "object", "properties": {"path": {"title": "Path", "type": "string"}},
                                 "required": ["path"], "title": "delete_folderArguments"}


@ERAS
@pytest.mark.parametrize("answer, expected", [
    (ElicitResult(action="accept", content={"ok": True}), "deleted /tmp/project"),
    (ElicitResult(action="accept", content={"ok": False}), "kept the folder"),
    (ElicitResult(action="decline"), "declined: folder not deleted"),
    (ElicitResult(action="cancel"), "cancelled: folder not deleted"),
])
def test_the_seed_delete_folder_answers(connect: Callable[..., Client], mode: str, answer: ElicitResult,
                                        expected: str) -> None:
    seen: list[Any] = []
    module = files_server()
    with connect(module.mcp, mode=mode, elicitation_callback=recorder(answer, seen)) as client:
        result = client.call_tool("delete_folder", {"path": "/tmp/project"})
    assert result.content[0].text == expected
    (request_id, params), = seen
    assert params.message == "/tmp/project has 2 file(s). Delete anyway?"
    schema = {"properties": {"ok": {"title": "Ok", "type": "boolean"}}, "required": ["ok"], "type": "object"}
    # as the official SDK sends it: a 2026-07-28 input request has no model title
    assert params.requested_schema == (schema if mode == "auto" else {**schema, "title": "Confirm"})
    if mode == "auto":
        assert request_id == "files_server:confirm_delete"


@ERAS
def test_an_empty_folder_asks_nothing(connect: Callable[..., Client], mode: str) -> None:
    seen: list[Any] = []
    with connect(files_server().mcp, mode=mode, elicitation_callback=recorder(None, seen)) as client:
        result = client.call_tool("delete_folder", {"path": "/tmp/empty"})
    assert result.content[0].text == "deleted /tmp/empty"
    assert seen == []


class Confirm(BaseModel):
    ok: bool


def unwrapped_server() -> MCPServer:
    mcp = MCPServer("Unwrapped")

    def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
        return Elicit(f"Delete {path}?", Confirm)

    @mcp.tool()
    def delete_folder(path: str, confirm: Annotated[Confirm, Resolve(confirm_delete)]) -> str:
        return f"ok={confirm.ok}"

    return mcp


@ERAS
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_an_unwrapped_parameter_fails_the_call_on_decline(connect: Callable[..., Client], mode: str,
                                                          action: str) -> None:
    with connect(unwrapped_server(), mode=mode, elicitation_callback=recorder(ElicitResult(action=action), [])) as c:
        result = c.call_tool("delete_folder", {"path": "/x"})
    assert result.is_error
    assert result.content[0].text == (f"Error executing tool delete_folder: Resolver for parameter 'confirm' could not "
                                      f"resolve: elicitation was {action}")


@ERAS
def test_an_unwrapped_parameter_receives_the_model(connect: Callable[..., Client], mode: str) -> None:
    answer = ElicitResult(action="accept", content={"ok": True})
    with connect(unwrapped_server(), mode=mode, elicitation_callback=recorder(answer, [])) as client:
        assert client.call_tool("delete_folder", {"path": "/x"}).content[0].text == "ok=True"


def graph_server(calls: dict[str, int]) -> MCPServer:
    mcp = MCPServer("Graph")

    def base(path: str) -> str:
        calls["base"] = calls.get("base", 0) + 1
        return path.upper()

    def left(b: Annotated[str, Resolve(base)]) -> str:
        return f"L{b}"

    def right(b: Annotated[str, Resolve(base)], ctx: Context) -> str:
        assert isinstance(ctx, Context)
        return f"R{b}"

    @mcp.tool()
    def combine(path: str, lhs: Annotated[str, Resolve(left)], r: Annotated[str, Resolve(right)],
                b: Annotated[str, Resolve(base)]) -> str:
        return f"{lhs} {r} {b}"

    return mcp


@ERAS
def test_each_resolver_runs_once_per_call_in_dependency_order(connect: Callable[..., Client], mode: str) -> None:
    calls: dict[str, int] = {}
    with connect(graph_server(calls), mode=mode) as client:
        result = client.call_tool("combine", {"path": "p", "l": "ignored", "b": "ignored"})
    assert result.content[0].text == "LP RP P"
    assert calls["base"] == 1


def test_invalid_graphs_fail_at_registration() -> None:
    mcp = MCPServer("Bad")

    def confirm_delete(paht: str) -> bool:
        return True

    with pytest.raises(InvalidSignature) as raised:
        @mcp.tool()
        def delete_folder(path: str, ok: Annotated[bool, Resolve(confirm_delete)]) -> str:
            return ""
    assert str(raised.value) == ("Resolver 'confirm_delete' parameter 'paht' cannot be resolved: expected a Context, "
                                 "an Annotated[_, Resolve(...)], or a tool argument by name")

    def a(x: Annotated[int, Resolve(lambda y: y)]) -> int:
        return x

    def b(x: Annotated[int, Resolve(a)]) -> int:
        return x

    a.__annotations__["x"] = Annotated[int, Resolve(b)]
    with pytest.raises(InvalidSignature) as raised:
        @mcp.tool()
        def cyclic(v: Annotated[int, Resolve(a)]) -> str:
            return ""
    assert str(raised.value) == "Resolver 'a' has a cyclic dependency"

    with pytest.raises(InvalidSignature) as raised:
        @mcp.tool()
        def buried(x: Annotated[int, Resolve(b)] | None = None) -> str:
            return ""
    assert "wraps `Resolve(...)` in a union" in str(raised.value)

    def two_questions() -> Elicit[Confirm] | Sample:
        return Sample([], max_tokens=1)

    with pytest.raises(InvalidSignature) as raised:
        @mcp.tool()
        def asks_twice(x: Annotated[Any, Resolve(two_questions)]) -> str:
            return ""
    assert "return annotation has multiple Elicit/Sample/ListRoots arms" in str(raised.value)
    assert [t.name for t in mcp.list_tools()] == []


def sampling_server() -> MCPServer:
    mcp = MCPServer("Sampling")

    def capital() -> Sample:
        return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Capital of France?"))],
                      max_tokens=20)

    def roots() -> ListRoots:
        return ListRoots()

    @mcp.tool()
    def ask_model(answer: Annotated[CreateMessageResult, Resolve(capital)]) -> str:
        return f"model said {answer.content.text}"

    @mcp.tool()
    def count_roots(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        return f"{len(found.roots)} root(s)"

    return mcp


def sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    assert params.max_tokens == 20
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"), model="m")


def roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///w", name="W"), Root(uri="file:///x")])


@ERAS
def test_sample_and_list_roots_with_callbacks(connect: Callable[..., Client], mode: str) -> None:
    with connect(sampling_server(), mode=mode, sampling_callback=sample, list_roots_callback=roots) as client:
        assert client.call_tool("ask_model", {}).content[0].text == "model said Paris"
        assert client.call_tool("count_roots", {}).content[0].text == "2 root(s)"


@ERAS
def test_sample_and_list_roots_without_callbacks_refuse_the_call(connect: Callable[..., Client], mode: str) -> None:
    with connect(sampling_server(), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("ask_model", {})
        assert raised.value.code == -32021
        assert str(raised.value).startswith("Client did not declare the sampling capability required by resolver '")
        assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}
        with pytest.raises(MCPError) as raised:
            client.call_tool("count_roots", {})
        assert raised.value.code == -32021


@ERAS
def test_a_resolver_question_without_elicitation_is_refused_with_32021(connect: Callable[..., Client],
                                                                        mode: str) -> None:
    with connect(files_server().mcp, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("delete_folder", {"path": "/tmp/project"})
    assert raised.value.code == -32021
    assert str(raised.value) == ("Client did not declare the form elicitation capability required by resolver "
                                 "'files_server:confirm_delete'")


def test_independent_questions_share_one_round(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("Batch")

    def first() -> Elicit[Confirm]:
        return Elicit("first?", Confirm)

    def second() -> Elicit[Confirm]:
        return Elicit("second?", Confirm)

    @mcp.tool()
    def both(a: Annotated[ElicitationResult[Confirm], Resolve(first)],
             b: Annotated[ElicitationResult[Confirm], Resolve(second)]) -> str:
        assert isinstance(a, AcceptedElicitation)
        return f"{a.data.ok} {b.action}"

    rounds: list[str] = []

    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        rounds.append(params.message)
        return ElicitResult(action="accept", content={"ok": True}) if params.message == "first?" else \
            ElicitResult(action="decline")

    with connect(mcp, elicitation_callback=callback) as client:
        assert client.call_tool("both", {}).content[0].text == "True decline"
    assert sorted(rounds) == ["first?", "second?"]


def test_a_resolver_and_a_body_question_in_one_tool(connect: Callable[..., Client]) -> None:
    mcp = MCPServer("Mixed")

    def gate() -> Elicit[Confirm]:
        return Elicit("gate?", Confirm)

    @mcp.tool()
    def mixed(ok: Annotated[Confirm, Resolve(gate)], ctx: Context) -> str:
        again = ctx.elicit("body?", schema=Confirm)
        return f"{ok.ok} {again.action}"

    asked: list[str] = []

    def callback(context: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"ok": True})

    with connect(mcp, elicitation_callback=callback) as client:
        assert client.call_tool("mixed", {}).content[0].text == "True accept"
    assert asked == ["gate?", "body?"]
