"""Identity at the gateway: a Flask site and a Django project that mount a proxy of a billing
service, over real HTTP, with users that are rows of their databases.

The billing service (``tests/servers/identity_upstream.py``, a process of its own) records the
headers of every request it receives and echoes the bearer token a call came with. The site's
users see and call the upstream's tools by the site's own rules (``mcp.allow``); each reaches the
upstream with their own billing token, on connections of their own; and neither the site's session
cookie nor the caller's token ever reaches the upstream.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
from flask import Flask, request, session

from conftest import ROOT, TIMEOUT, server_process
from host_support import ERAS, text
from minimcp import Client, MCPError
from minimcp.client.streamable_http import streamable_http_client
from minimcp.flask import MCP
from minimcp.server import create_proxy
from minimcp.server.mcpserver import Context

SERVERS = ROOT / "tests" / "servers"


class Billing:
    """The running billing service: its MCP ``url`` and the headers of every request it received."""

    def __init__(self, base: str, url: str) -> None:
        self.base = base
        self.url = url

    def seen(self) -> list[dict[str, str]]:
        answer = requests.get(self.base + "/seen", timeout=TIMEOUT)
        answer.raise_for_status()
        return list(answer.json())

    def sessions_by_bearer(self) -> dict[str, set[str]]:
        """The upstream sessions (``mcp-session-id``) each credential's requests were made on."""
        found: dict[str, set[str]] = {}
        for headers in self.seen():
            if "mcp-session-id" in headers:
                found.setdefault(headers.get("authorization", "none"), set()).add(headers["mcp-session-id"])
        return found


@pytest.fixture
def billing() -> Iterator[Billing]:
    with server_process([sys.executable, str(SERVERS / "identity_upstream.py")]) as server:
        url = re.search(r"http://127\.0\.0\.1:\d+/\S*", "".join(server.banner))
        assert url is not None, server.banner
        yield Billing(server.base, url.group(0))


class Signed:
    """One user of a site, as their MCP client presents them: the site's session cookie and an
    ``Authorization`` of the site's own (an API token), both of which must stay at the site."""

    def __init__(self, browser: requests.Session, cookie: str, token: str) -> None:
        self.browser = browser
        self.cookie = cookie
        self.token = token

    def client(self, url: str, mode: str) -> Client:
        return Client(streamable_http_client(url, http_client=self.browser), mode=mode)


def sign_in(login: str, username: str, cookie_name: str, token: str) -> Signed:
    browser = requests.Session()
    answer = browser.post(login, data={"username": username, "password": username}, timeout=TIMEOUT,
                          allow_redirects=False)
    assert answer.status_code in (200, 302), answer.text
    cookie = browser.cookies[cookie_name]
    browser.headers["Authorization"] = f"Bearer {token}"
    return Signed(browser, cookie, token)


# --- the Flask site ---------------------------------------------------------------------------------
USERS = [("alice", 1), ("carol", 1), ("bob", 0)]


def flask_gateway(tmp_path: Path, upstream: str, tokens: dict[str, str]) -> tuple[Flask, MCP]:
    """A Flask site with its users in SQLite, signing in by its session cookie (or an API token),
    that mounts the billing service under ``billing`` for its staff, each with their own token
    (``tokens``, by username, which a test may change; ``billing-<username>`` by default)."""
    database = tmp_path / "site.sqlite3"
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE, staff INTEGER)")
        db.executemany("INSERT INTO users (username, staff) VALUES (?, ?)", USERS)

    def row(column: str, value: Any) -> sqlite3.Row | None:
        with contextlib.closing(sqlite3.connect(database)) as db:
            db.row_factory = sqlite3.Row
            found: sqlite3.Row | None = db.execute(f"SELECT * FROM users WHERE {column} = ?", (value,)).fetchone()
            return found

    app = Flask("gateway_site", instance_path=str(tmp_path / "instance"))
    app.secret_key = "gateway-site-test-only"

    @app.post("/login")
    def login() -> tuple[str, int]:
        user = row("username", request.form["username"])
        if user is None:
            return "no such user", 403
        session["user_id"] = user["id"]
        return "signed in", 200

    mcp = MCP(app, "site", user=lambda: row("id", session["user_id"]) if "user_id" in session else None,
              load_user=lambda user_id: row("id", int(user_id)))
    proxy = create_proxy({"mcpServers": {"billing": {"url": upstream, "mode": "legacy"}}},
                         credentials={"billing": lambda user: {
                             "Authorization": f"Bearer {tokens.get(user['username'], 'billing-' + user['username'])}"}})
    mcp.mount(proxy, namespace="billing")
    mcp.allow("billing_*", allowed=lambda user: bool(user["staff"]), requirement="staff membership")

    @mcp.tool()
    def me(ctx: Context) -> str:
        """Who the site says is calling."""
        return str(ctx.user["username"])

    return app, mcp


class FlaskGateway:
    def __init__(self, tmp_path: Path, billing: Billing, serve_wsgi: Callable[[Any], str]) -> None:
        #: Each user's billing token, by username, where it is not ``billing-<username>``.
        self.tokens: dict[str, str] = {}
        self.app, self.mcp = flask_gateway(tmp_path, billing.url, self.tokens)
        self.base = serve_wsgi(self.app)
        self.url = self.base + "/mcp"

    def user(self, username: str) -> Signed:
        with self.app.app_context():
            token = self.mcp.tokens.create(str([name for name, _ in USERS].index(username) + 1), "test")
        return sign_in(self.base + "/login", username, "session", token)


class DjangoGateway:
    def __init__(self, base: str, tokens: dict[str, str]) -> None:
        self.base = base
        self.url = base + "/mcp/"
        self.tokens = tokens

    def user(self, username: str) -> Signed:
        return sign_in(self.base + "/login/", username, "sessionid", self.tokens[username])


@contextlib.contextmanager
def django_gateway(tmp_path: Path, billing: Billing) -> Iterator[DjangoGateway]:
    """``tests/servers/django_gateway.py`` on a fresh database, in a process of its own."""
    env = {**os.environ, "GATEWAY_DATABASE": str(tmp_path / "site.sqlite3"), "GATEWAY_UPSTREAM": billing.url,
           "PYTHONPATH": str(ROOT)}
    with server_process([sys.executable, str(SERVERS / "django_gateway.py")], env) as server:
        yield DjangoGateway(server.base, dict(re.findall(r"(\w+)'s API token: (\S+)", "".join(server.banner))))


@pytest.fixture(params=["flask", "django"])
def site(request: pytest.FixtureRequest, tmp_path: Path, billing: Billing,
         serve_wsgi: Callable[[Any], str]) -> Iterator[FlaskGateway | DjangoGateway]:
    if request.param == "flask":
        yield FlaskGateway(tmp_path, billing, serve_wsgi)
        return
    with django_gateway(tmp_path, billing) as gateway:
        yield gateway


@ERAS
def test_staff_see_and_call_the_upstreams_tools_and_others_neither(site: Any, billing: Billing, mode: str) -> None:
    with site.user("alice").client(site.url, mode) as alice:
        names = {tool.name for tool in alice.list_tools().tools}
        assert {"me", "billing_whoami", "billing_refund"} <= names
        assert text(alice.call_tool("billing_whoami", {})) == "billing-alice"
        assert text(alice.call_tool("billing_refund", {"invoice": 7})) == "refunded invoice 7 for billing-alice"
    with site.user("bob").client(site.url, mode) as bob:
        names = {tool.name for tool in bob.list_tools().tools}
        assert "me" in names and not any(name.startswith("billing_") for name in names)
        assert text(bob.call_tool("me", {})) == "bob"
        with pytest.raises(MCPError) as refused:
            bob.call_tool("billing_whoami", {})
    requirement = "staff membership" if isinstance(site, FlaskGateway) else "staff status"
    assert refused.value.message == f"Permission denied: tool 'billing_whoami' requires {requirement}"
    assert "billing-bob" not in {headers.get("authorization") for headers in billing.seen()}


@ERAS
def test_each_user_reaches_the_upstream_with_their_own_credential_on_their_own_connection(
        site: Any, billing: Billing, mode: str) -> None:
    with site.user("alice").client(site.url, mode) as alice, site.user("carol").client(site.url, mode) as carol:
        for _ in range(3):
            assert text(alice.call_tool("billing_whoami", {})) == "billing-alice"
            assert text(carol.call_tool("billing_whoami", {})) == "billing-carol"
    sessions = billing.sessions_by_bearer()
    # One upstream connection per credential, kept for the next call: each user's calls (and their
    # listing) went on one session of theirs, and no session carried another user's token.
    assert set(sessions) == {"Bearer billing-alice", "Bearer billing-carol"}
    assert all(len(ids) == 1 for ids in sessions.values()), sessions
    assert not sessions["Bearer billing-alice"] & sessions["Bearer billing-carol"]


@ERAS
def test_a_user_sees_what_the_upstream_lists_for_their_own_credential(tmp_path: Path, billing: Billing, mode: str,
                                                                    serve_wsgi: Callable[[Any], str]) -> None:
    """The upstream shows ``refund`` to alice's token and not to carol's: each listing is made with
    its user's credential, whoever listed first. (Flask: on the Django site, carol lacks the
    permission ``refund`` needs, so the site's own rule hides it already.)"""
    site = FlaskGateway(tmp_path, billing, serve_wsgi)
    with site.user("carol").client(site.url, mode) as carol, site.user("alice").client(site.url, mode) as alice:
        assert "billing_refund" not in {tool.name for tool in carol.list_tools().tools}
        assert "billing_refund" in {tool.name for tool in alice.list_tools().tools}
        assert "billing_refund" not in {tool.name for tool in carol.list_tools().tools}


def test_a_user_whose_token_changed_reaches_the_upstream_with_the_new_one(
        tmp_path: Path, billing: Billing, serve_wsgi: Callable[[Any], str]) -> None:
    site = FlaskGateway(tmp_path, billing, serve_wsgi)
    with site.user("alice").client(site.url, "auto") as alice:
        assert text(alice.call_tool("billing_whoami", {})) == "billing-alice"
        site.tokens["alice"] = "billing-alice-renewed"
        assert text(alice.call_tool("billing_whoami", {})) == "billing-alice-renewed"
        assert text(alice.call_tool("billing_whoami", {})) == "billing-alice-renewed"
    sessions = billing.sessions_by_bearer()
    assert set(sessions) == {"Bearer billing-alice", "Bearer billing-alice-renewed"}
    assert all(len(ids) == 1 for ids in sessions.values()) and not set.intersection(*sessions.values())


def test_a_user_whose_credential_the_upstream_refuses_takes_nobody_elses_calls_down(
        tmp_path: Path, billing: Billing, serve_wsgi: Callable[[Any], str]) -> None:
    site = FlaskGateway(tmp_path, billing, serve_wsgi)
    site.tokens["carol"] = "billing-carol-revoked"
    with site.user("carol").client(site.url, "auto") as carol, site.user("alice").client(site.url, "auto") as alice:
        with pytest.raises(MCPError) as refused:
            carol.call_tool("billing_whoami", {})
        assert text(alice.call_tool("billing_whoami", {})) == "billing-alice"
    assert refused.value.message == (f"Upstream 'billing' ({billing.url}) refused the credential it was reached with "
                                     "(HTTP 401): it is missing, expired or revoked, or not one this upstream issued")


def test_a_rule_by_name_narrows_one_upstream_tool_further(billing: Billing, tmp_path: Path) -> None:
    """Django: ``allow("billing_refund", permission_required=...)`` on top of the staff rule."""
    with django_gateway(tmp_path, billing) as site:
        with site.user("carol").client(site.url, "auto") as carol:
            names = {tool.name for tool in carol.list_tools().tools}
            assert "billing_whoami" in names and "billing_refund" not in names
            with pytest.raises(MCPError, match="requires the permission auth.change_user"):
                carol.call_tool("billing_refund", {"invoice": 1})


@ERAS
def test_the_sites_cookie_and_the_callers_token_never_reach_the_upstream(site: Any, billing: Billing,
                                                                         mode: str) -> None:
    alice = site.user("alice")
    with alice.client(site.url, mode) as client:
        client.list_tools()
        assert text(client.call_tool("billing_refund", {"invoice": 3})) == "refunded invoice 3 for billing-alice"
    seen = billing.seen()
    assert seen, "the upstream received nothing"
    for headers in seen:
        assert "cookie" not in headers, headers
        assert headers.get("authorization") == "Bearer billing-alice", headers
        assert not any(alice.cookie in value or alice.token in value for value in headers.values()), headers


# --- credentials of the gateway itself ---------------------------------------------------------------
class GatewayAuth(requests.auth.AuthBase):
    """A ``requests`` auth object, as ``OAuthClientProvider`` is one: it signs each request itself."""

    def __call__(self, prepared: requests.PreparedRequest) -> requests.PreparedRequest:
        prepared.headers["Authorization"] = "Bearer gateway-own"
        return prepared


def test_an_auth_object_signs_every_callers_requests_to_its_upstream(billing: Billing,
                                                                     serve_http: Callable[..., str]) -> None:
    proxy = create_proxy(billing.url, credentials=GatewayAuth())
    with Client(serve_http(proxy), headers={"Authorization": "Bearer the-callers-own"}) as client:
        assert text(client.call_tool("whoami", {})) == "gateway-own"
    assert {headers.get("authorization") for headers in billing.seen()} == {"Bearer gateway-own"}


def test_credentials_are_refused_where_they_cannot_apply(billing: Billing) -> None:
    from minimcp.server.app.proxy import ProxyConfigError

    with pytest.raises(ProxyConfigError, match="credentials for \\['payroll'\\], which is no upstream"):
        create_proxy({"mcpServers": {"billing": {"url": billing.url}}}, credentials={"payroll": GatewayAuth()})
    with pytest.raises(ProxyConfigError, match="not reached over HTTP, so it takes no credentials"):
        create_proxy([sys.executable, str(SERVERS / "identity_upstream.py")], credentials=GatewayAuth())


def test_a_credential_that_gives_something_else_fails_the_call_naming_the_upstream(
        billing: Billing, serve_http: Callable[..., str]) -> None:
    proxy = create_proxy(billing.url, upstream_name="billing", credentials=lambda user: "Bearer not-a-mapping")
    with Client(serve_http(proxy)) as client, pytest.raises(MCPError) as failed:
        client.call_tool("whoami", {})
    assert failed.value.message.startswith(f"Upstream 'billing' ({billing.url}) was given a credential that gave a "
                                           "str: the proxy's credentials= must give a mapping of header names")
    assert failed.value.error.data == {"upstream": "billing"}


# --- the guide's program ---------------------------------------------------------------------------
def test_the_guides_flask_gateway_lets_its_staff_reach_billing_as_themselves(
        tmp_path: Path, billing: Billing, serve_wsgi: Callable[[Any], str], monkeypatch: pytest.MonkeyPatch) -> None:
    """docs_src/how_to/proxy_flask_gateway.py, imported from a folder of its own (its instance
    folder, where the API tokens are kept, goes there), signed in to with API tokens."""
    shutil.copy(ROOT / "docs_src" / "how_to" / "proxy_flask_gateway.py", tmp_path)
    monkeypatch.setenv("BILLING_URL", billing.url)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("proxy_flask_gateway", None)
    guide = importlib.import_module("proxy_flask_gateway")
    url = serve_wsgi(guide.app) + "/mcp"
    with guide.app.app_context():
        tokens = {user_id: guide.mcp.tokens.create(user_id, "guide") for user_id in ("1", "2")}

    def client(user_id: str) -> Client:
        return Client(url, headers={"Authorization": f"Bearer {tokens[user_id]}"})

    with client("1") as ann, client("2") as ben:
        assert {"billing_whoami", "billing_refund"} <= {tool.name for tool in ann.list_tools().tools}
        assert text(ann.call_tool("billing_whoami", {})) == "ann-at-billing"
        assert not [tool.name for tool in ben.list_tools().tools]
        with pytest.raises(MCPError, match="tool 'billing_whoami' requires staff status"):
            ben.call_tool("billing_whoami", {})
    # ben has no billing token: his listing reached billing with no credential at all, never the site's
    assert {headers.get("authorization") for headers in billing.seen()} == {"Bearer ann-at-billing", None}


def test_an_oauth_client_per_upstream_signs_the_gateway_in_once(serve_wsgi: Callable[[Any], str],
                                                                serve_http: Callable[..., str]) -> None:
    """An upstream behind OAuth, reached with the gateway's own client credentials grant: one
    token, got once, for every caller's calls (tests/oauth_fakes.py's protected server)."""
    from minimcp.client.auth import InMemoryTokenStorage
    from minimcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from oauth_fakes import guarded_world

    worlds = guarded_world(serve_wsgi)
    world = next(worlds)
    try:
        world.auth_server.clients["gateway"] = "SECRET-gateway"
        provider = ClientCredentialsOAuthProvider(world.url, InMemoryTokenStorage(), "gateway", "SECRET-gateway",
                                                  issuer=world.auth_server.base)
        proxy = create_proxy({"mcpServers": {"guarded": {"url": world.url}}}, credentials={"guarded": provider})
        url = serve_http(proxy)
        with Client(url, mode="legacy") as first, Client(url, mode="auto") as second:
            assert text(first.call_tool("echo", {"text": "one"})) == "one"
            assert text(second.call_tool("write_note", {"text": "two"})) == "noted: two"
        (request,) = world.auth_server.token_requests
        assert request["grant_type"] == "client_credentials"
    finally:
        worlds.close()
