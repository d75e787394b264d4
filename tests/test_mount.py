"""``parent.mount(child, namespace=...)`` over real HTTP on loopback, in both eras: the child's tools,
resources, templates and prompts served under the prefixed names, live (added, disabled), with
its lifespan, its middleware and its questions; the parent's tags, filter and scopes on top; the
official SDK's client calling a mounted tool.
"""

from __future__ import annotations

import contextlib
import runpy
from collections.abc import Iterator
from typing import Any, Callable

import anyio
import mcp as official
import mcp_types as official_types
import pytest
from pydantic import BaseModel
from conftest import MODES, ROOT, heard_methods, load_example, modern_post

from minimcp import Client, MCPError
from minimcp.server.app.mount import MountedTool
from minimcp.server.mcpserver import Context, MCPServer
from minimcp.shared.subscriptions import ResourceUpdated, ToolsListChanged
from minimcp.types import Completion, ElicitResult, PromptReference, ResourceTemplateReference

WAIT = 10
QUESTION = "No tables for 2 on 2025-12-25. Would you like to try another date?"


def billing(**options: Any) -> MCPServer:
    child = MCPServer("billing", **options)

    @child.tool()
    def create_invoice(customer: str, amount: int) -> str:
        return f"invoice for {customer}: {amount} EUR"

    @child.tool(tags={"admin"})
    def refund(invoice: str) -> str:
        return f"refunded {invoice}"

    @child.resource("invoice://latest")
    def latest() -> str:
        return "INV-7"

    @child.resource("invoice://{number}")
    def invoice(number: str) -> str:
        return f"invoice {number}"

    @child.prompt()
    def remind(customer: str) -> str:
        return f"Remind {customer} to pay"

    return child


def shop(**options: Any) -> tuple[MCPServer, MCPServer]:
    parent = MCPServer("shop", **options)

    @parent.tool()
    def quote(item: str) -> str:
        return f"{item}: 3 EUR"

    child = billing()
    parent.mount(child, namespace="billing")
    return parent, child


def names(client: Client) -> list[str]:
    return [tool.name for tool in client.list_tools().tools]


def text(result: Any) -> str:
    return result.content[0].text


@MODES
def test_the_childs_components_are_listed_and_served_under_the_prefixed_names(
        serve_http: Callable[..., str], mode: str, version: str) -> None:
    parent, _ = shop()
    with Client(serve_http(parent), mode=mode) as client:
        assert client.protocol_version == version
        assert names(client) == ["quote", "billing_create_invoice", "billing_refund"]
        assert text(client.call_tool("billing_create_invoice", {"customer": "Ada", "amount": 12})) == \
            "invoice for Ada: 12 EUR"
        assert text(client.call_tool("quote", {"item": "tea"})) == "tea: 3 EUR"
        resources = client.list_resources().resources
        assert [(r.uri, r.name) for r in resources] == [("invoice://billing/latest", "billing_latest")]
        templates = client.list_resource_templates().resource_templates
        assert [t.uri_template for t in templates] == ["invoice://billing/{number}"]
        latest = client.read_resource("invoice://billing/latest").contents[0]
        assert (latest.text, latest.uri) == ("INV-7", "invoice://billing/latest")
        assert client.read_resource("invoice://billing/42").contents[0].text == "invoice 42"
        assert [p.name for p in client.list_prompts().prompts] == ["billing_remind"]
        rendered = client.get_prompt("billing_remind", {"customer": "Ada"})
        assert rendered.messages[0].content.text == "Remind Ada to pay"
        unknown = client.call_tool("create_invoice", {"customer": "Ada", "amount": 1})  # only by its prefixed name
        assert unknown.is_error and text(unknown) == "Unknown tool: create_invoice"
        with pytest.raises(MCPError):
            client.read_resource("invoice://latest")


@MODES
def test_without_a_namespace_twice_and_nested(serve_http: Callable[..., str], mode: str, version: str) -> None:
    child = billing()
    parent = MCPServer("shop")
    parent.mount(child)  # namespace=None: the child's own names
    parent.mount(child, namespace="eu")  # the same server a second time
    inner = MCPServer("tax")

    @inner.tool()
    def vat(amount: int) -> int:
        return amount // 5

    child.mount(inner, namespace="tax")  # nested: billing serves tax_vat, the shop eu_tax_vat too
    with Client(serve_http(parent), mode=mode) as client:
        assert names(client) == ["create_invoice", "refund", "tax_vat",
                                 "eu_create_invoice", "eu_refund", "eu_tax_vat"]
        assert text(client.call_tool("create_invoice", {"customer": "Bo", "amount": 3})) == "invoice for Bo: 3 EUR"
        assert text(client.call_tool("eu_refund", {"invoice": "INV-1"})) == "refunded INV-1"
        assert text(client.call_tool("eu_tax_vat", {"amount": 100})) == "20"
        assert client.read_resource("invoice://latest").contents[0].text == "INV-7"
        assert client.read_resource("invoice://eu/latest").contents[0].text == "INV-7"
        assert client.read_resource("invoice://eu/9").contents[0].text == "invoice 9"


def test_a_cycle_a_second_mount_under_one_namespace_and_a_bad_namespace_are_refused() -> None:
    a, b, c = MCPServer("a"), MCPServer("b"), MCPServer("c")
    with pytest.raises(ValueError, match="Cannot mount server 'a' into itself"):
        a.mount(a, namespace="self")
    a.mount(b, namespace="b")
    b.mount(c, namespace="c")
    with pytest.raises(ValueError, match="into 'c': 'c' is already mounted in 'a' \\(at some depth\\), which would make a cycle"):
        c.mount(a, namespace="a")
    with pytest.raises(ValueError, match="already mounted in 'a' under namespace 'b'; mount it under another"):
        a.mount(b, namespace="b")
    for bad in ("", "bill ing", "a/b", "..", "_x", "x" * 65):
        with pytest.raises(ValueError, match="is not usable"):
            a.mount(c, namespace=bad)
    with pytest.raises(TypeError, match="mount\\(\\) takes an MCPServer"):
        a.mount("billing")  # type: ignore[arg-type]


@MODES
def test_a_mounted_tool_asks_the_parents_client(serve_http: Callable[..., str], mode: str, version: str) -> None:
    parent = MCPServer("front")
    parent.mount(load_example("bistro_server").mcp, namespace="bistro")
    asked: list[str] = []

    def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"})

    with Client(serve_http(parent), mode=mode, elicitation_callback=on_elicit) as client:
        result = client.call_tool("bistro_book_table", {"date": "2025-12-25", "party_size": 2})
        assert client.protocol_version == version
    assert text(result) == "Booked a table for 2 on 2025-12-27."
    assert asked == [QUESTION]


def test_the_childs_lifespan_runs_inside_the_parents_and_its_tools_see_its_state(
        serve_http: Callable[..., str]) -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def parent_life(server: MCPServer) -> Iterator[dict[str, str]]:
        events.append("parent up")
        yield {"db": "shop-db"}
        events.append("parent down")

    @contextlib.contextmanager
    def child_life(server: MCPServer) -> Iterator[dict[str, str]]:
        events.append("child up")
        yield {"db": "billing-db"}
        events.append("child down")

    parent = MCPServer("shop", lifespan=parent_life)
    child = MCPServer("billing", lifespan=child_life)

    @parent.tool()
    def shop_db(ctx: Context) -> str:
        return str(ctx.request_context.lifespan_context["db"])

    @child.tool()
    def billing_db(ctx: Context) -> str:
        return str(ctx.request_context.lifespan_context["db"])

    parent.mount(child, namespace="billing")
    with Client(serve_http(parent), mode="auto") as client:
        assert text(client.call_tool("billing_billing_db", {})) == "billing-db"
        assert text(client.call_tool("shop_db", {})) == "shop-db"
    assert events == ["parent up", "child up"]
    parent.close()
    assert events == ["parent up", "child up", "child down", "parent down"]
    with Client(parent) as client:  # an in-memory connection enters a lifespan of its own, the child's inside
        assert text(client.call_tool("billing_billing_db", {})) == "billing-db"
    assert events[4:] == ["parent up", "child up", "child down", "parent down"]


@MODES
def test_the_childs_middleware_sees_its_own_requests_only(serve_http: Callable[..., str], mode: str,
                                                          version: str) -> None:
    seen: list[tuple[str, Any]] = []

    def record(ctx: Any, call_next: Any) -> Any:
        params = ctx.params or {}
        seen.append((ctx.method, params.get("name", params.get("uri"))))
        result = call_next(ctx)
        if ctx.method == "tools/call":
            result["content"][0]["text"] += " (checked)"
        return result

    parent = MCPServer("shop")

    @parent.tool()
    def quote(item: str) -> str:
        return f"{item}: 3 EUR"

    child = billing(middleware=[record])
    parent.mount(child, namespace="billing")
    with Client(serve_http(parent), mode=mode) as client:
        names(client)
        assert text(client.call_tool("quote", {"item": "tea"})) == "tea: 3 EUR"
        assert text(client.call_tool("billing_refund", {"invoice": "INV-2"})) == "refunded INV-2 (checked)"
        assert client.read_resource("invoice://billing/5").contents[0].text == "invoice 5"
        client.get_prompt("billing_remind", {"customer": "Ada"})
    assert seen == [("tools/call", "refund"), ("resources/read", "invoice://5"), ("prompts/get", "remind")]


def test_a_tool_added_or_disabled_on_the_child_reaches_a_legacy_client_at_once(
        serve_http: Callable[..., str]) -> None:
    parent, child = shop()
    heard, on_message = heard_methods()
    with Client(serve_http(parent), mode="legacy", message_handler=on_message) as client:
        assert "billing_void" not in names(client)

        @child.tool()
        def void(invoice: str) -> str:
            return f"voided {invoice}"

        assert heard.get(timeout=WAIT) == "notifications/tools/list_changed"
        assert "billing_void" in names(client)
        assert text(client.call_tool("billing_void", {"invoice": "INV-3"})) == "voided INV-3"
        child.disable("void")
        assert heard.get(timeout=WAIT) == "notifications/tools/list_changed"
        assert "billing_void" not in names(client)
        refused = client.call_tool("billing_void", {"invoice": "INV-3"})
        assert refused.is_error and text(refused) == "Tool 'billing_void' is disabled"
        child.remove_resource("invoice://latest")
        assert heard.get(timeout=WAIT) == "notifications/resources/list_changed"
        assert client.list_resources().resources == []
        assert heard.empty()


def test_a_tool_added_to_the_child_reaches_a_2026_listen(serve_http: Callable[..., str]) -> None:
    parent, child = shop()
    with Client(serve_http(parent), mode="auto") as client, client.listen(tools_list_changed=True) as sub:
        child.add_tool(lambda invoice: f"voided {invoice}", name="void")
        assert isinstance(sub.next(timeout=WAIT), ToolsListChanged)
        assert "billing_void" in names(client)


@MODES
def test_the_parents_tags_and_component_filter_apply_to_mounted_components(
        serve_http: Callable[..., str], mode: str, version: str) -> None:
    def by_team(ctx: Context, component: Any) -> bool:
        return "admin" not in component.tags or (ctx.headers or {}).get("x-team") == "ops"

    parent, child = shop(component_filter=by_team)
    url = serve_http(parent)
    with Client(url, mode=mode, headers={"X-Team": "ops"}) as ops, \
            Client(url, mode=mode, headers={"X-Team": "sales"}) as sales:
        assert names(ops) == ["quote", "billing_create_invoice", "billing_refund"]
        assert names(sales) == ["quote", "billing_create_invoice"]
        hidden = sales.call_tool("billing_refund", {"invoice": "INV-4"})
        assert hidden.is_error and text(hidden) == "Unknown tool: billing_refund"
        assert text(ops.call_tool("billing_refund", {"invoice": "INV-4"})) == "refunded INV-4"
        parent.disable(tags={"admin"})  # the parent's rule, on the child's tag
        assert names(ops) == ["quote", "billing_create_invoice"]
        refused = ops.call_tool("billing_refund", {"invoice": "INV-4"})
        assert refused.is_error and text(refused) == "Tool 'billing_refund' is disabled"
        parent.disable("billing_remind")  # by the prefixed name
        assert ops.list_prompts().prompts == []
        assert [r.uri for r in ops.list_resources().resources] == ["invoice://billing/latest"]


def test_a_mounted_tools_scopes_are_enforced_at_the_parents_edge(serve_http: Callable[..., str]) -> None:
    parent, child = shop()

    @child.tool(required_scopes=["billing:write"])
    def cancel(invoice: str) -> str:
        return f"cancelled {invoice}"

    plan = parent.plan("tools/call", {"name": "billing_cancel"})
    assert isinstance(plan.target, MountedTool) and plan.target.inner is child.get_tool("cancel")
    assert plan.required_scopes == ("billing:write",)
    assert parent.tool_scopes() == ["billing:write"]
    response, _ = modern_post(serve_http(parent), "tools/call", {"name": "billing_cancel",
                                                                 "arguments": {"invoice": "INV-5"}})
    assert response.status_code == 403
    assert 'scope="billing:write"' in response.headers["WWW-Authenticate"]


def test_the_official_client_calls_a_mounted_tool(serve_http: Callable[..., str]) -> None:
    parent = MCPServer("front")
    parent.mount(load_example("bistro_server").mcp, namespace="bistro")
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> official_types.ElicitResult:
        asked.append(params.message)
        return official_types.ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"})

    async def main() -> tuple[list[str], str]:
        async with official.Client(serve_http(parent), mode="auto", elicitation_callback=on_elicit) as client:
            tools = await client.list_tools()
            result = await client.call_tool("bistro_book_table", {"date": "2025-12-25", "party_size": 2})
            return [tool.name for tool in tools.tools], result.content[0].text

    listed, answer = anyio.run(main)
    assert listed == ["bistro_book_table"]
    assert answer == "Booked a table for 2 on 2025-12-27."
    assert asked == [QUESTION]


@MODES
def test_the_how_to_pages_program_serves_the_shop_with_billing_inside(serve_http: Callable[..., str], mode: str,
                                                                       version: str) -> None:
    program = runpy.run_path(str(ROOT / "docs_src" / "how_to" / "compose.py"), run_name="compose")
    with Client(serve_http(program["mcp"]), mode=mode) as client:
        assert names(client) == ["quote", "billing_create_invoice"]
        assert text(client.call_tool("billing_create_invoice", {"customer": "Ada", "amount": 12})) == "INV-1"
        assert text(client.call_tool("billing_create_invoice", {"customer": "Bo", "amount": 3})) == "INV-2"
        templates = client.list_resource_templates().resource_templates
        assert [t.uri_template for t in templates] == ["invoice://billing/{number}"]
        assert client.read_resource("invoice://billing/2").contents[0].text == "invoice 2"
        assert client.get_prompt("billing_remind", {"customer": "Bo"}).messages[0].content.text == "Remind Bo to pay"


@MODES
def test_completion_of_a_mounted_prompt_is_the_childs(serve_http: Callable[..., str], mode: str,
                                                      version: str) -> None:
    parent, child = shop()
    asked: list[tuple[str, str]] = []

    @child.completion()
    def customers(ref: Any, argument: Any, context: Any) -> Completion:
        asked.append((getattr(ref, "name", None) or ref.uri, argument.name))
        return Completion(values=[name for name in ("Ada", "Alan", "Bo") if name.startswith(argument.value)])

    parent.mount(billing(), namespace="late")  # a second mount made the parent answer completion/complete
    with Client(serve_http(parent), mode=mode) as client:
        by_prompt = client.complete(PromptReference(name="billing_remind"), {"name": "customer", "value": "A"})
        assert by_prompt.completion.values == ["Ada", "Alan"]
        by_template = client.complete(ResourceTemplateReference(uri="invoice://billing/{number}"),
                                      {"name": "number", "value": "B"})
        assert by_template.completion.values == ["Bo"]
    assert asked == [("remind", "customer"), ("invoice://{number}", "number")]


@MODES
def test_a_question_through_the_childs_middleware_in_either_era(serve_http: Callable[..., str], mode: str,
                                                                version: str) -> None:
    answers: list[Any] = []

    def record(ctx: Any, call_next: Any) -> Any:
        result = call_next(ctx)
        answers.append(result.get("resultType", "complete"))
        return result

    child = MCPServer("vault", middleware=[record])

    class Ok(BaseModel):
        ok: bool

    @child.tool()
    def open_door(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {getattr(answer, 'data', None)}"

    parent = MCPServer("front")
    parent.mount(child, namespace="vault")

    def on_elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    with Client(serve_http(parent), mode=mode, elicitation_callback=on_elicit) as client:
        assert text(client.call_tool("vault_open_door", {"door": "red"})) == "red: accept ok=True"
    # a legacy question waits inside the call; a 2026-07-28 one ends a round the client answers
    assert answers == (["complete"] if mode == "legacy" else ["input_required", "complete"])


def test_a_childs_resource_update_reaches_a_listen_by_the_parents_uri(serve_http: Callable[..., str]) -> None:
    parent, child = shop()

    @child.tool()
    def reissue(ctx: Context) -> str:
        ctx.notify_resource_updated("invoice://latest")
        return "reissued"

    with Client(serve_http(parent), mode="auto") as client, \
            client.listen(resource_subscriptions=["invoice://billing/latest"]) as sub:
        assert text(client.call_tool("billing_reissue", {})) == "reissued"
        update = sub.next(timeout=WAIT)
        assert isinstance(update, ResourceUpdated) and update.uri == "invoice://billing/latest"
