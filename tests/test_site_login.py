"""Sign in with the site's own login: a user pastes the site's MCP URL into a client, signs in on
the site's login page, allows the client, and its tool calls act as that user.

Headless Chromium is the user's browser (``browser_support``), ``browser_login`` the client, and
the example sites run on loopback ports: ``examples/flask_notes.py`` (Flask-Login) and
``examples/django_notes`` (Django's auth, in a process of its own). The bad-input tests speak
OAuth with ``requests`` for what a client would never send.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from auth_support import until_limited
from browser_support import Chromium, SiteUser
from conftest import TIMEOUT
from host_support import ERAS, PROJECT, DjangoSite, Site, project_env, start_site, stop_site, text

from flask import Flask, redirect, request, session
from werkzeug.wrappers import Response

from minimcp import Client
from minimcp.client.auth import browser_login
from minimcp.client.auth.exceptions import OAuthFlowError
from minimcp.flask import MCP
from minimcp.jsonrpc import MCPError
from minimcp.shared.auth import OAuthClientInformationFull
from minimcp.hosts.site_auth import MemoryGrantStore, digest



def sign_in(site: Site, browser: Chromium, user: str, decision: str = "allow") -> tuple[Any, SiteUser]:
    person = SiteUser(browser, user, user, decision)  # the examples' passwords are the user names
    return browser_login(site.url, open_browser=person, timeout=120), person


# --- the whole story, in both eras -------------------------------------------------------------------
@ERAS
def test_a_user_signs_in_with_the_site_login_allows_and_the_tools_act_as_them(
        site: Site, chromium: Chromium, mode: str) -> None:
    provider, alice = sign_in(site, chromium, "alice")
    try:
        with Client(site.url, auth=provider, mode=mode) as client:
            assert text(client.call_tool("whoami", {})) == "alice"
            note = client.call_tool("add_note", {"text": "signed in through the browser"}).structured_content
            assert note is not None
            assert f"{note['result']}: signed in through the browser" in text(client.call_tool("my_notes", {}))
            assert "all_notes" in [tool.name for tool in client.list_tools().tools]  # alice's permission
    finally:
        provider.close()
    assert alice.pages == ["login", "consent"]
    assert "Logged in" in chromium.wait_for("document.body && document.body.innerText", "the callback page")
    assert "signed in through the browser" in site.notes()


def test_a_signed_in_visitor_only_answers_the_consent_page_and_gets_their_own_permissions(
        site: Site, chromium: Chromium) -> None:
    first, _ = sign_in(site, chromium, "bob")
    try:
        with Client(site.url, auth=first) as client:
            assert text(client.call_tool("whoami", {})) == "bob"
    finally:
        first.close()
    again, bob = sign_in(site, chromium, "bob")  # the site's session cookie is still in the browser
    try:
        with Client(site.url, auth=again) as client:
            assert text(client.call_tool("whoami", {})) == "bob"
            assert "all_notes" not in [tool.name for tool in client.list_tools().tools]
            with pytest.raises(MCPError, match="Permission denied: tool 'all_notes'"):
                client.call_tool("all_notes", {})
    finally:
        again.close()
    assert bob.pages == ["consent"]


def test_deny_sends_the_client_away_without_a_token(site: Site, chromium: Chromium) -> None:
    provider, alice = sign_in(site, chromium, "alice", decision="deny")
    try:
        with pytest.raises(OAuthFlowError, match="access_denied"):
            with Client(site.url, auth=provider) as client:
                client.call_tool("whoami", {})
    finally:
        provider.close()
    assert alice.pages == ["login", "consent"]


# --- what a client should never send ------------------------------------------------------------------
class HandMadeClient:
    """An OAuth client made of ``requests`` calls: registers, then walks the flow a step at a time.
    Its redirect URI is a loopback page that only says it got there."""

    def __init__(self, site: Site, serve_wsgi: Callable[[Any], str]) -> None:
        self.site = site
        self.redirect_uri = serve_wsgi(Response("Back at the client.", mimetype="text/plain")) + "/callback"
        prm = requests.get(self._well_known(), timeout=TIMEOUT).json()
        issuer = prm["authorization_servers"][0]
        self.metadata = requests.get(_as_metadata_url(issuer), timeout=TIMEOUT).json()
        assert self.metadata["issuer"] == issuer and self.metadata["code_challenge_methods_supported"] == ["S256"]
        registered = requests.post(self.metadata["registration_endpoint"], timeout=TIMEOUT, json={
            "client_name": "hand-made", "redirect_uris": [self.redirect_uri], "token_endpoint_auth_method": "none"})
        assert registered.status_code == 201, registered.text
        self.client_id = registered.json()["client_id"]
        self.verifier = secrets.token_urlsafe(48)

    def _well_known(self) -> str:
        answer = requests.post(self.site.url, json={}, timeout=TIMEOUT)
        assert answer.status_code == 401
        challenge = answer.headers["WWW-Authenticate"]
        return challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]

    def authorize(self, **overrides: str) -> requests.Response:
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = {"response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri, "state": "s1",
                 "code_challenge": challenge, "code_challenge_method": "S256", **overrides}
        return requests.get(self.metadata["authorization_endpoint"], params=query, allow_redirects=False,
                            timeout=TIMEOUT)

    def token(self, code: str, **overrides: str) -> requests.Response:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
                "client_id": self.client_id, "code_verifier": self.verifier, **overrides}
        return requests.post(self.metadata["token_endpoint"], data=form, timeout=TIMEOUT)


def _as_metadata_url(issuer: str) -> str:
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}"


def code_from(browser: Chromium, client: HandMadeClient, user: str) -> str:
    """Sign in and allow in the browser; the code is read off the (unreachable) redirect target."""
    consent = client.authorize()
    assert consent.status_code == 302, consent.text
    SiteUser(browser, user, user)(consent.headers["Location"])
    location = browser.wait_for(f"location.href.startsWith({client.redirect_uri!r}) && location.href",
                                "the redirect back to the client")
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == ["s1"] and query["iss"] == [client.metadata["issuer"]]
    return query["code"][0]


def test_an_unregistered_redirect_uri_is_refused_on_the_site_and_never_redirected_to(site: Site, serve_wsgi: Callable[[Any], str]) -> None:
    client = HandMadeClient(site, serve_wsgi)
    answer = client.authorize(redirect_uri="https://attacker.example/callback")
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert "not registered" in answer.json()["error_description"]


@pytest.mark.parametrize("overrides, error", [({"code_challenge_method": "plain"}, "invalid_request"),
                                              ({"scope": "no-such-scope"}, "invalid_scope"),
                                              ({"resource": "https://elsewhere.example/mcp"}, "invalid_target")])
def test_an_authorization_error_is_a_page_and_never_a_redirect_to_the_client(
        site: Site, serve_wsgi: Callable[[Any], str], overrides: dict[str, str], error: str) -> None:
    answer = HandMadeClient(site, serve_wsgi).authorize(**overrides)
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert answer.json()["error"] == error


def test_a_code_works_once_and_its_replay_revokes_the_token_it_bought(site: Site, serve_wsgi: Callable[[Any], str], chromium: Chromium) -> None:
    client = HandMadeClient(site, serve_wsgi)
    code = code_from(chromium, client, "alice")
    assert client.token(code, code_verifier=secrets.token_urlsafe(48)).json()["error"] == "invalid_grant"
    first = client.token(code)
    assert first.status_code == 200, first.text
    access = first.json()["access_token"]
    with Client(site.url, auth=_Bearer(access)) as mcp:
        assert text(mcp.call_tool("whoami", {})) == "alice"
    replay = client.token(code)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    refused = requests.post(site.url, json={}, headers={"Authorization": f"Bearer {access}"}, timeout=TIMEOUT)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]


def test_a_refresh_rotates_both_tokens_and_the_old_ones_stop_working(
        site: Site, chromium: Chromium, serve_wsgi: Callable[[Any], str]) -> None:
    client = HandMadeClient(site, serve_wsgi)
    first = client.token(code_from(chromium, client, "bob")).json()
    refresh = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client.client_id}
    second = requests.post(client.metadata["token_endpoint"], data=refresh, timeout=TIMEOUT)
    assert second.status_code == 200, second.text
    with Client(site.url, auth=_Bearer(second.json()["access_token"])) as mcp:
        assert text(mcp.call_tool("whoami", {})) == "bob"
    stale = requests.post(site.url, json={}, headers={"Authorization": f"Bearer {first['access_token']}"},
                          timeout=TIMEOUT)
    assert stale.status_code == 401
    replay = requests.post(client.metadata["token_endpoint"], data=refresh, timeout=TIMEOUT)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_a_replayed_rotated_refresh_token_revokes_its_whole_family(
        site: Site, chromium: Chromium, serve_wsgi: Callable[[Any], str]) -> None:
    client = HandMadeClient(site, serve_wsgi)
    first = client.token(code_from(chromium, client, "alice")).json()

    def refresh(token: str) -> requests.Response:
        return requests.post(client.metadata["token_endpoint"], timeout=TIMEOUT, data={
            "grant_type": "refresh_token", "refresh_token": token, "client_id": client.client_id})

    second = refresh(first["refresh_token"]).json()
    third = refresh(second["refresh_token"]).json()
    with Client(site.url, auth=_Bearer(third["access_token"])) as mcp:
        assert text(mcp.call_tool("whoami", {})) == "alice"
    replay = refresh(first["refresh_token"])  # two rotations old: a thief's copy, or the client's
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    revoked = requests.post(site.url, json={}, headers={"Authorization": f"Bearer {third['access_token']}"},
                            timeout=TIMEOUT)
    assert revoked.status_code == 401 and 'error="invalid_token"' in revoked.headers["WWW-Authenticate"]
    assert refresh(third["refresh_token"]).json()["error"] == "invalid_grant"
    other = HandMadeClient(site, serve_wsgi)  # the family only: another sign-in keeps working
    fresh = other.token(code_from(chromium, other, "alice")).json()
    with Client(site.url, auth=_Bearer(fresh["access_token"])) as mcp:
        assert text(mcp.call_tool("whoami", {})) == "alice"


def _registration_endpoint(site: Site) -> str:
    return site.url.rstrip("/") + "/register"


def test_registration_on_the_site_is_bounded_and_refuses_unsafe_redirect_uris(site: Site) -> None:
    endpoint = _registration_endpoint(site)
    huge = requests.post(endpoint, json={"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": "x" * 60_000},
                         timeout=TIMEOUT)
    assert huge.status_code == 413
    for uri in ("javascript:alert(1)", "http://attacker.example/cb", "https://site.example@attacker.example/cb"):
        refused = requests.post(endpoint, json={"redirect_uris": [uri]}, timeout=TIMEOUT)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri", uri
    accepted, limited = until_limited(endpoint, "http://127.0.0.1:9/cb")
    assert accepted >= 6  # ten a minute from one address, the four refusals above included
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert requests.post(site.url, json={}, timeout=TIMEOUT).status_code == 401  # the site keeps serving


def test_an_altered_consent_link_is_refused(site: Site, serve_wsgi: Callable[[Any], str]) -> None:
    consent = HandMadeClient(site, serve_wsgi).authorize().headers["Location"]
    answer = requests.get(consent.replace("request=", "request=x"), timeout=TIMEOUT, allow_redirects=False)
    assert answer.status_code == 400 and "expired or was changed" in answer.text


def test_a_consent_post_without_the_site_csrf_token_issues_nothing(site: Site, serve_wsgi: Callable[[Any], str], chromium: Chromium) -> None:
    client = HandMadeClient(site, serve_wsgi)
    consent = client.authorize().headers["Location"]
    SiteUser(chromium, "alice", "alice", decision=None)(consent)  # signs in, answers nothing
    chromium.wait_for("!!document.querySelector('button[value=allow]')", "the consent page")
    chromium.evaluate("document.querySelector('input[name=csrf_token], input[name=csrfmiddlewaretoken]').value = 'x';"
                      "document.querySelector('button[value=allow]').click()")
    chromium.wait_for("!document.querySelector('button[value=allow]') && document.readyState === 'complete'",
                      "the answer to the forged form")
    assert not chromium.location().startswith(client.redirect_uri)
    assert "code=" not in chromium.location()


def test_one_users_token_never_continues_another_users_session(site: Site, serve_wsgi: Callable[[Any], str], chromium: Chromium) -> None:
    client = HandMadeClient(site, serve_wsgi)
    alice = client.token(code_from(chromium, client, "alice")).json()["access_token"]
    opened = requests.post(site.url, timeout=TIMEOUT, headers={
        "Authorization": f"Bearer {alice}", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    session = opened.headers["Mcp-Session-Id"]
    hijack = site.raw("bob", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **{
        "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    assert hijack.status_code == 404


class _Bearer(requests.auth.AuthBase):
    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


# --- Django: the grants are the project's rows -------------------------------------------------------
@pytest.fixture
def django_site(tmp_path: Path) -> Iterator[DjangoSite]:
    running = start_site(tmp_path)
    try:
        yield running
    finally:
        stop_site(running)


def test_django_keeps_only_digests_and_a_grant_deleted_in_the_admin_signs_the_client_out(
        django_site: DjangoSite, chromium: Chromium, serve_wsgi: Callable[[Any], str]) -> None:
    client = HandMadeClient(django_site, serve_wsgi)
    tokens = client.token(code_from(chromium, client, "bob")).json()
    with Client(django_site.url, auth=_Bearer(tokens["access_token"])) as mcp:
        assert text(mcp.call_tool("whoami", {})) == "bob"
    with sqlite3.connect(django_site.database) as db:
        rows = db.execute("SELECT g.id, u.username, g.access_digest, g.refresh_digest FROM minimcp_oauthgrant g "
                          "JOIN auth_user u ON u.id = g.user_id").fetchall()
    assert [(name, access, refresh) for _, name, access, refresh in rows] == [
        ("bob", digest(tokens["access_token"]), digest(tokens["refresh_token"]))]

    admin = requests.Session()  # alice, the superuser, revokes bob's sign-in in the admin
    login = admin.get(f"{django_site.base}/admin/login/", timeout=TIMEOUT)
    admin.post(login.url, timeout=TIMEOUT, data={"username": "alice", "password": "alice", "next": "/admin/",
                                                 "csrfmiddlewaretoken": admin.cookies["csrftoken"]})
    page = f"{django_site.base}/admin/minimcp/oauthgrant/{rows[0][0]}/delete/"
    assert "Are you sure" in admin.get(page, timeout=TIMEOUT).text
    admin.post(page, data={"post": "yes", "csrfmiddlewaretoken": admin.cookies["csrftoken"]}, timeout=TIMEOUT,
               headers={"Referer": page})
    refused = requests.post(django_site.url, json={}, timeout=TIMEOUT,
                            headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    again = requests.post(client.metadata["token_endpoint"], timeout=TIMEOUT, data={
        "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client.client_id})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_django_expires_and_caps_the_clients_no_user_allowed(
        django_site: DjangoSite, chromium: Chromium, serve_wsgi: Callable[[Any], str]) -> None:
    used = HandMadeClient(django_site, serve_wsgi)
    code_from(chromium, used, "bob")  # bob allowed it
    unused = HandMadeClient(django_site, serve_wsgi)
    with sqlite3.connect(django_site.database) as db:  # two days pass
        db.execute("UPDATE minimcp_oauthclient SET created = '2020-01-01 00:00:00'")
    assert unused.authorize().status_code == 400 and "not found" in unused.authorize().json()["error_description"]
    assert used.authorize().status_code == 302
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with sqlite3.connect(django_site.database) as db:  # a flood of 1,000 fresh registrations, the first oldest
        db.executemany("INSERT INTO minimcp_oauthclient (client_id, name, registration, created, used) "
                       "VALUES (?, '', '{}', ?, 0)",
                       [(f"flood-{n}", str(now - datetime.timedelta(seconds=1000 - n))) for n in range(1000)])
    newest = HandMadeClient(django_site, serve_wsgi)
    assert newest.authorize().status_code == 302
    with sqlite3.connect(django_site.database) as db:
        left = {row[0] for row in db.execute("SELECT client_id FROM minimcp_oauthclient")}
    assert len(left) == 1001 and "flood-0" not in left and "flood-999" in left  # 1,000 unused and bob's
    assert {used.client_id, newest.client_id} <= left and unused.client_id not in left


# --- Flask without Flask-Login: the site's own rule for who is signed in ---------------------------
def plain_site(serve_wsgi: Callable[[Any], str], store: MemoryGrantStore,
               person: Callable[[str], Any] = str) -> Site:
    """A Flask site without Flask-Login: its own rule for who is signed in (carol, once she has
    visited ``/signin``), its own login URL, and ``store`` for its clients and grants. By default a
    user is its name (principal_of gives the name, load_user takes it back); ``person`` makes the
    user object the site's rule returns from the name."""
    users = {"carol"}
    app = Flask("plain")
    app.secret_key = secrets.token_hex(16)
    mcp = MCP(app, oauth=True, user=lambda: person(session["who"]) if "who" in session else None,
              load_user=lambda name: name if name in users else None, login_url="/signin", oauth_store=store)

    @mcp.tool()
    def whoami() -> str:
        return str(mcp.host_user())

    @app.route("/signin", methods=["GET", "POST"])
    def signin() -> Any:
        session["who"] = "carol"
        return redirect(request.args["next"])

    return Site(serve_wsgi(app) + "/mcp", {}, list)


def consent_page(site: Site, client: HandMadeClient, browser: requests.Session) -> requests.Response:
    """Carol's browser from /authorize to the consent page, through the sign-in the first time."""
    consent = browser.get(client.authorize().headers["Location"], timeout=TIMEOUT, allow_redirects=False)
    if consent.status_code == 200:  # signed in already
        return consent
    assert consent.status_code == 302 and consent.headers["Location"].startswith("/signin?next=%2Fmcp%2Fconsent")
    return browser.get(site.url.removesuffix("/mcp") + consent.headers["Location"], timeout=TIMEOUT)


def allow(page: requests.Response, browser: requests.Session) -> requests.Response:
    form = {"request": _field(page.text, "request"), "decision": "allow", "csrf_token": _field(page.text, "csrf_token")}
    return browser.post(page.url, data=form, timeout=TIMEOUT, allow_redirects=False)


def test_a_flask_site_without_flask_login_gives_its_login_url_and_user_rules(
        serve_wsgi: Callable[[Any], str]) -> None:
    store = MemoryGrantStore()
    site = plain_site(serve_wsgi, store)
    client = HandMadeClient(site, serve_wsgi)
    browser = requests.Session()
    page = consent_page(site, client, browser)
    assert "Allow hand-made to use plain as carol?" in page.text
    form = {"request": _field(page.text, "request"), "decision": "allow"}
    forged = browser.post(page.url, data=form, timeout=TIMEOUT, allow_redirects=False)
    assert forged.status_code == 400 and "not sent from this site" in forged.text
    allowed = allow(page, browser)
    code = parse_qs(urlsplit(allowed.headers["Location"]).query)["code"][0]
    access = client.token(code).json()["access_token"]
    with Client(site.url, auth=_Bearer(access)) as mcp_client:
        assert text(mcp_client.call_tool("whoami", {})) == "carol"
    grant = store.find_grant("access_digest", digest(access))
    assert grant is not None and grant.subject == "carol" and grant.code_used


def test_the_memory_store_caps_and_expires_clients_no_user_allowed(serve_wsgi: Callable[[Any], str]) -> None:
    now = [1_000_000.0]
    store = MemoryGrantStore(max_unused_clients=3, unused_client_lifetime=3600, clock=lambda: now[0])
    site = plain_site(serve_wsgi, store)
    used = HandMadeClient(site, serve_wsgi)
    browser = requests.Session()
    assert allow(consent_page(site, used, browser), browser).status_code == 302  # carol allowed it
    clients = [HandMadeClient(site, serve_wsgi) for _ in range(4)]
    assert clients[0].authorize().status_code == 400  # the oldest of four unused went for the fourth
    assert "not found" in clients[0].authorize().json()["error_description"]
    assert [c.authorize().status_code for c in clients[1:]] == [302, 302, 302]
    now[0] += 3601
    assert [c.authorize().status_code for c in clients[1:]] == [400, 400, 400]  # expired unused
    assert used.authorize().status_code == 302  # a client someone allowed stays


def test_the_memory_store_keeps_a_bounded_number_of_grants(serve_wsgi: Callable[[Any], str]) -> None:
    store = MemoryGrantStore(max_grants=2)
    site = plain_site(serve_wsgi, store)
    client = HandMadeClient(site, serve_wsgi)
    browser = requests.Session()
    codes = [parse_qs(urlsplit(allow(consent_page(site, client, browser), browser).headers["Location"]).query)
             ["code"][0] for _ in range(3)]
    assert client.token(codes[0]).json()["error"] == "invalid_grant"  # the oldest of three went
    assert [client.token(code).status_code for code in codes[1:]] == [200, 200]


def moved(client: OAuthClientInformationFull, redirect_uri: str) -> OAuthClientInformationFull:
    """``client`` as an operator re-registers it, with another redirect URI."""
    return OAuthClientInformationFull.model_validate({**client.model_dump(), "redirect_uris": [redirect_uri]})


def test_allow_rechecks_the_clients_registration(serve_wsgi: Callable[[Any], str]) -> None:
    store = MemoryGrantStore()
    site = plain_site(serve_wsgi, store)
    client = HandMadeClient(site, serve_wsgi)
    browser = requests.Session()
    page = consent_page(site, client, browser)
    registered = store.get_client(client.client_id)
    assert registered is not None  # the operator moves the client elsewhere while carol reads the page
    store.add_client(moved(registered, "https://moved.example/callback"))
    answer = allow(page, browser)
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert "expired or was changed" in answer.text


def test_the_consent_page_names_the_real_redirect_host(serve_wsgi: Callable[[Any], str]) -> None:
    store = MemoryGrantStore()
    site = plain_site(serve_wsgi, store)
    client = HandMadeClient(site, serve_wsgi)
    registered = store.get_client(client.client_id)
    assert registered is not None  # registered before the rule against user information existed
    disguised = "https://assistant.example.com@attacker.example:8443/cb"
    store.add_client(moved(registered, disguised))
    client.redirect_uri = disguised
    page = consent_page(site, client, requests.Session())
    assert "goes to <strong>attacker.example:8443</strong>" in page.text
    assert "assistant.example.com" not in page.text


class Member:
    """A user as an ORM row is: an id, an email, and no ``__str__`` of its own."""

    def __init__(self, name: str) -> None:
        self.id = 7
        self.email = f"{name}@example.com"


def member_row(name: str) -> sqlite3.Row:
    """A user as a ``sqlite3.Row``: its ``str()`` names only the class and an address."""
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    return db.execute("SELECT 7 AS id, ? AS username", (name,)).fetchone()


@pytest.mark.parametrize(("person", "shown"), [(Member, "carol@example.com"), (member_row, "carol")])
def test_the_consent_page_names_the_user_as_they_know_themselves(
        serve_wsgi: Callable[[Any], str], person: Callable[[str], Any], shown: str) -> None:
    site = plain_site(serve_wsgi, MemoryGrantStore(), person)
    page = consent_page(site, HandMadeClient(site, serve_wsgi), requests.Session())
    assert f"Allow hand-made to use plain as {shown}?" in page.text
    assert " object at 0x" not in page.text and "<" not in page.text.split(" as ", 1)[1].split("?", 1)[0]


def _field(page: str, name: str) -> str:
    return html.unescape(page.split(f'name="{name}" value="', 1)[1].split('"', 1)[0])


def test_manage_py_check_says_when_clients_could_not_find_the_sign_in(tmp_path: Path) -> None:
    (tmp_path / "no_well_known.py").write_text(
        "from django.urls import include, path\nfrom minimcp.django import mcp\n"
        "urlpatterns = [path('accounts/', include('django.contrib.auth.urls')), path('mcp/', include(mcp.urls))]\n")
    (tmp_path / "forgetful_settings.py").write_text("from notesite.settings import *\nROOT_URLCONF = 'no_well_known'\n")
    env = project_env(tmp_path / "db.sqlite3", DJANGO_SETTINGS_MODULE="forgetful_settings")
    env["PYTHONPATH"] += os.pathsep + str(tmp_path)
    forgetful = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, env=env, capture_output=True,
                               text=True, timeout=TIMEOUT)
    assert "minimcp.W002" in forgetful.stderr and 'include(mcp.well_known_urls)' in forgetful.stderr
    complete = subprocess.run([sys.executable, "manage.py", "check"], cwd=PROJECT, capture_output=True, text=True,
                              env=project_env(tmp_path / "db.sqlite3"), timeout=TIMEOUT)
    assert complete.returncode == 0 and "minimcp.W" not in complete.stderr + complete.stdout


# --- Django: a project of other settings ---------------------------------------------------------------
def start_variant(tmp_path: Path, settings: str) -> DjangoSite:
    """The example project with ``settings`` (Python) on top of its own, in a process of its own."""
    (tmp_path / "variant_settings.py").write_text("from notesite.settings import *  # noqa: F403\n" + settings)
    pythonpath = project_env(tmp_path)["PYTHONPATH"] + os.pathsep + str(tmp_path)
    return start_site(tmp_path, DJANGO_SETTINGS_MODULE="variant_settings", PYTHONPATH=pythonpath)


def test_django_consent_is_csrf_protected_without_the_projects_csrf_middleware(
        tmp_path: Path, serve_wsgi: Callable[[Any], str]) -> None:
    site = start_variant(tmp_path, "MIDDLEWARE = [m for m in MIDDLEWARE if 'Csrf' not in m]\n")
    try:
        client = HandMadeClient(site, serve_wsgi)
        browser = requests.Session()
        login = browser.get(client.authorize().headers["Location"], timeout=TIMEOUT)  # to the login page, and back
        assert "Sign in to Notes" in login.text
        page = browser.post(login.url, timeout=TIMEOUT, data={
            "username": "alice", "password": "alice", "next": _field(login.text, "next"),
            "csrfmiddlewaretoken": _field(login.text, "csrfmiddlewaretoken")})
        assert "Allow hand-made to use" in page.text, page.text
        form = {"request": _field(page.text, "request"), "decision": "allow"}
        forged = browser.post(page.url, data=form, timeout=TIMEOUT, allow_redirects=False)
        assert forged.status_code == 403 and "Location" not in forged.headers
        allowed = browser.post(page.url, timeout=TIMEOUT, allow_redirects=False,
                               data={**form, "csrfmiddlewaretoken": _field(page.text, "csrfmiddlewaretoken")})
        assert allowed.status_code == 302 and allowed.headers["Location"].startswith(client.redirect_uri)
        assert "code" in parse_qs(urlsplit(allowed.headers["Location"]).query)
    finally:
        stop_site(site)


def test_django_sign_in_over_plain_http_under_a_public_name_is_a_clear_400(tmp_path: Path) -> None:
    site = start_variant(tmp_path, "ALLOWED_HOSTS = [*ALLOWED_HOSTS, 'notes.example']\n")
    try:
        for path in ("/.well-known/oauth-protected-resource/mcp/", "/.well-known/oauth-authorization-server/mcp"):
            answer = requests.get(site.base + path, headers={"Host": "notes.example"}, timeout=TIMEOUT)
            assert answer.status_code == 400 and "needs HTTPS" in answer.text
        endpoint = requests.post(site.url, json={}, headers={"Host": "notes.example"}, timeout=TIMEOUT)
        assert endpoint.status_code == 401 and endpoint.headers["WWW-Authenticate"] == 'Bearer realm="notes.example"'
        with site.client("alice", "auto") as alice:
            assert text(alice.call_tool("whoami", {})) == "alice"
    finally:
        stop_site(site)
