"""Options declared once: ``Limits``, ``TaskOptions``, ``HTTPOptions`` and ``AuthOptions`` are small
frozen objects passed down whole, and each of their fields is also a keyword of the constructor
that takes the object, with the same meaning and default."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

import minimcp
from minimcp.flask import MCP
from minimcp.server import AuthOptions, HTTPOptions, Limits, MCPServer, Server, TaskOptions
from minimcp.server.app.server import MCPServerKeywords
from minimcp.server.app.tasks.options import TaskKeywords
from minimcp.server.auth.options import AuthKeywords
from minimcp.server.auth.provider import AccessToken
from minimcp.server.auth.settings import AuthSettings
from minimcp.server.core.options import LimitKeywords
from minimcp.server.core.server import ServerKeywords
from minimcp.server.edges.http.exchange import Exchange
from minimcp.server.edges.http.options import ExchangeKeywords, HTTPKeywords
from minimcp.server.edges.wsgi import WSGIOptionKeywords
from minimcp.server.tasks import InMemoryTaskStore
from minimcp.server.transport_security import TransportSecuritySettings

OPTIONS = (Limits, TaskOptions, HTTPOptions, AuthOptions)
#: The most parameters (``self``, ``*args`` and ``**kwargs`` each counted) a constructor may take.
MOST_PARAMETERS = 30


def _keys(typed_dict: Any) -> set[str]:
    return set(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def _fields(kind: Any) -> set[str]:
    return {field.name for field in dataclasses.fields(kind)}


# --- the objects -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", OPTIONS)
def test_an_option_object_is_frozen_slotted_and_built_by_keyword(kind: Any) -> None:
    options = kind()
    field = dataclasses.fields(kind)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, None)
    assert not hasattr(options, "__dict__")
    with pytest.raises(TypeError):
        kind(None)
    assert kind() == options and hash(kind()) == hash(options)


def test_the_defaults_are_the_ones_the_constructors_had() -> None:
    assert Limits() == Limits(max_workers=32, worker_wait_timeout=30.0, back_channel_timeout=600.0,
                              max_calls_per_principal=None, max_questions_per_principal=None,
                              max_listens_per_principal=None)
    assert TaskOptions() == TaskOptions(task_store=None, task_channel=None, max_task_workers=16,
                                        max_task_workers_per_principal=None)
    assert HTTPOptions() == HTTPOptions(path="/mcp", json_response=False, stateless_http=False,
                                        max_request_body_size=4 * 1024 * 1024, transport_security=None,
                                        session_idle_timeout=3600.0, keepalive_interval=15.0, retry_interval=1000,
                                        event_store=None, max_sessions=10_000, max_pending_per_session=32)
    assert AuthOptions() == AuthOptions(auth=None, token_verifier=None, auth_server_provider=None)


def test_each_objects_keywords_are_its_fields() -> None:
    assert _keys(LimitKeywords) == _fields(Limits)
    assert _keys(TaskKeywords) == _fields(TaskOptions)
    assert _keys(AuthKeywords) == _fields(AuthOptions)
    assert _keys(ExchangeKeywords) == _fields(HTTPOptions)
    assert _keys(HTTPKeywords) == _fields(HTTPOptions) - {"path"}
    assert _keys(WSGIOptionKeywords) == _fields(HTTPOptions) - {"path"} | {"streamable_http_path"} | _fields(AuthOptions)
    assert _fields(Limits) <= _keys(ServerKeywords) and _fields(Limits) | _fields(TaskOptions) <= _keys(MCPServerKeywords)


def test_the_objects_are_exported_from_minimcp_server() -> None:
    for kind in OPTIONS:
        assert kind.__name__ in minimcp.server.__all__
        assert getattr(minimcp.server, kind.__name__) is kind


# --- passed down whole -----------------------------------------------------------------------------
def test_the_limits_reach_the_core_whole() -> None:
    limits = Limits(max_workers=6, max_calls_per_principal=3)
    mcp = MCPServer("limited", limits=limits)
    low = mcp._lowlevel_server
    assert mcp.limits is limits and low.limits is limits
    assert (low.pool.max_workers, low.call_shares.limit, low.question_shares.limit) == (6, 3, 1)
    assert Server("low", limits=limits).limits is limits


def test_the_exchange_and_the_wsgi_app_share_one_http_options() -> None:
    http = HTTPOptions(json_response=True, max_sessions=5, path="/here")
    app = MCPServer("shared").wsgi_app(http=http)
    try:
        assert app.http is http and app.exchange.http is http
        assert (app.path, app.exchange.json_response, app.sessions.max_sessions) == ("/here", True, 5)
    finally:
        app.close()
    app = MCPServer("by keyword").wsgi_app(json_response=True, streamable_http_path="/there/")
    try:
        assert app.exchange.http is app.http
        assert app.http == HTTPOptions(json_response=True, path="/there/") and app.path == "/there"
    finally:
        app.close()


def test_a_task_options_object_configures_the_tasks() -> None:
    store = InMemoryTaskStore()
    tasks = TaskOptions(task_store=store, max_task_workers=3)
    mcp = MCPServer("tasks", tasks=tasks)
    assert mcp.task_options is tasks
    assert mcp.tasks.store is store and mcp.tasks.max_running == 3
    mcp.close()


# --- the keywords of before ------------------------------------------------------------------------
def test_the_servers_keywords_still_work() -> None:
    store = InMemoryTaskStore()
    mcp = MCPServer("keywords", max_workers=8, worker_wait_timeout=2.0, back_channel_timeout=9.0,
                    max_calls_per_principal=5, max_questions_per_principal=2, max_listens_per_principal=4,
                    task_store=store, max_task_workers=4, max_task_workers_per_principal=2, elicit_replay=False,
                    component_filter=None, subscription_filter=None, backend=None)
    low = mcp._lowlevel_server
    assert mcp.limits == Limits(max_workers=8, worker_wait_timeout=2.0, back_channel_timeout=9.0,
                                max_calls_per_principal=5, max_questions_per_principal=2, max_listens_per_principal=4)
    assert (low.pool.max_workers, low.pool.wait_timeout, low.back_channel_timeout) == (8, 2.0, 9.0)
    assert (low.call_shares.limit, low.question_shares.limit, low.dispatcher.listens.shares.limit) == (5, 2, 4)
    assert (mcp.tasks.store, mcp.tasks.max_running, mcp.tasks.worker_shares.limit) == (store, 4, 2)
    assert mcp.elicit_replay is False
    mcp.close()
    low = Server("low", max_workers=3, back_channel_timeout=1.0, middleware=(), unadvertised=("ping",))
    assert (low.pool.max_workers, low.back_channel_timeout, low.unadvertised) == (3, 1.0, {"ping"})


def test_the_endpoints_keywords_still_work() -> None:
    security = TransportSecuritySettings(allowed_hosts=["example.com"])
    app = MCPServer("http").wsgi_app(stateless_http=True, max_request_body_size=10, transport_security=security,
                                     session_idle_timeout=5.0, keepalive_interval=1.0, retry_interval=7,
                                     max_pending_per_session=2)
    try:
        exchange = app.exchange
        assert (exchange.stateless_http, exchange.max_request_body_size, app.max_request_body_size) == (True, 10, 10)
        assert (exchange.security, exchange.keepalive_interval, exchange.retry_interval) == (security, 1.0, 7)
        assert (app.sessions.idle_timeout, app.sessions.max_pending_per_session) == (5.0, 2)
    finally:
        app.close()
    direct = Exchange(MCPServer("direct")._lowlevel_server, path="/x", json_response=True)
    assert (direct.path, direct.json_response, direct.http) == ("/x", True, HTTPOptions(path="/x", json_response=True))


def test_a_flask_host_takes_http_options_as_an_object_or_by_name() -> None:
    by_name = MCP(Flask("by_name"), "by name", http_options={"json_response": True}, max_workers=4)
    as_object = MCP(Flask("as_object"), "as object", http_options=HTTPOptions(json_response=True))
    for mcp in (by_name, as_object):
        endpoint = mcp.endpoint(mcp._http_options)
        assert (endpoint.path, endpoint.json_response, endpoint.security.enable_dns_rebinding_protection) == \
            ("/", True, False)
    assert by_name.pool.max_workers == 4
    with pytest.raises(TypeError, match=r"takes no path: the endpoint answers where the host routes it"):
        by_name.endpoint(path="/elsewhere")  # type: ignore[call-arg]


class _Verifier:
    def verify_token(self, token: str) -> AccessToken | None:
        return None


def test_the_servers_auth_options_protect_its_app_unless_the_app_is_given_its_own() -> None:
    settings = AuthSettings(issuer_url="https://issuer.example", resource_server_url="http://127.0.0.1/mcp",
                            validate_token_resource=False)
    verifier = _Verifier()
    mcp = MCPServer("protected", auth=settings, token_verifier=verifier)
    assert mcp.auth_options == AuthOptions(auth=settings, token_verifier=verifier)
    auth, token_verifier, provider = mcp.auth_options
    assert (auth, token_verifier, provider) == (settings, verifier, None)
    app = mcp.wsgi_app()
    try:
        assert app.auth is not None and app.auth.settings is settings
    finally:
        app.close()
    with pytest.raises(TypeError, match=r"got auth_options= and token_verifier="):
        mcp.wsgi_app(auth_options=AuthOptions(), token_verifier=verifier)


# --- the errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("build", "message"), [
    (lambda: MCPServer("x", limits=Limits(), max_workers=4),
     "MCPServer() got limits= and max_workers=, which limits holds too: pass max_workers= inside "
     "limits=Limits(...), or drop limits="),
    (lambda: MCPServer("x", tasks=TaskOptions(), task_store=InMemoryTaskStore()),
     "MCPServer() got tasks= and task_store=, which tasks holds too"),
    (lambda: Server("x", limits=Limits(), back_channel_timeout=1.0), "Server() got limits= and back_channel_timeout="),
    (lambda: MCPServer("x").wsgi_app(http=HTTPOptions(), json_response=True, max_sessions=3),
     "MCPWSGIApp() got http= and json_response=, max_sessions=, which http holds too"),
    (lambda: MCPServer("x").wsgi_app(http=HTTPOptions(), streamable_http_path="/x"),
     "pass path= inside http=HTTPOptions(...)"),
    (lambda: Exchange(MCPServer("x")._lowlevel_server, http=HTTPOptions(), path="/x"), "Exchange() got http= and path="),
])
def test_an_object_and_one_of_its_keywords_together_are_refused(build: Any, message: str) -> None:
    with pytest.raises(TypeError) as refused:
        build()
    assert message in str(refused.value)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: MCPServer("x", max_worker=4),
     "MCPServer() got an unexpected keyword argument 'max_worker'; did you mean max_workers=?"),
    (lambda: MCPServer("x", json_response=True),
     "MCPServer() got an unexpected keyword argument 'json_response'; an HTTP endpoint's options "
     "(json_response=, max_sessions=, ...) go to wsgi_app(...) or run(transport='streamable-http', ...)"),
    (lambda: Server("x", task_store=None), "Server() got an unexpected keyword argument 'task_store'"),
    (lambda: MCPServer("x").wsgi_app(max_workers=4),
     "MCPWSGIApp() got an unexpected keyword argument 'max_workers'; a server's own options "
     "(max_workers=, backend=, ...) go to its constructor"),
    (lambda: MCPServer("x").wsgi_app(path="/x"),
     "MCPWSGIApp() got an unexpected keyword argument 'path'; did you mean streamable_http_path=?"),
    (lambda: Exchange(MCPServer("x")._lowlevel_server, streamable_http_path="/x"),
     "Exchange() got an unexpected keyword argument 'streamable_http_path'"),
])
def test_an_unknown_keyword_is_named_with_what_to_pass_instead(build: Any, message: str) -> None:
    with pytest.raises(TypeError) as refused:
        build()
    assert str(refused.value).startswith(message)


# --- the size of a constructor ---------------------------------------------------------------------
def _constructors() -> dict[str, int]:
    """Every class's ``__init__`` in minimcp, by where it is, with its number of parameters."""
    counts = {}
    package = Path(minimcp.__file__).parent
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and member.name == "__init__":
                    arguments = member.args
                    counts[f"{path.relative_to(package.parent)}:{node.name}"] = (
                        len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs)
                        + (arguments.vararg is not None) + (arguments.kwarg is not None))
    return counts


def test_no_constructor_takes_more_than_thirty_parameters() -> None:
    counts = _constructors()
    assert counts["minimcp/server/app/server.py:MCPServer"] > 20  # the walk found the constructors
    assert {where: count for where, count in counts.items() if count > MOST_PARAMETERS} == {}
